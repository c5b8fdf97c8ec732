"""A Lambda function or state machine that references its role (GetAtt) already waits for it; CDK
also lists the role in DependsOn, which cfn-lint reports (W3005). This aspect keeps DependsOn to what
no property references (the role's default policy, which the resource must still wait for)."""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import CfnResource, IAspect, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import IConstruct


def _role_reference(node: CfnResource) -> Any:
    if isinstance(node, lambda_.CfnFunction):
        return node.role
    if isinstance(node, sfn.CfnStateMachine):
        return node.role_arn
    return None


@jsii.implements(IAspect)
class NoRedundantDependsOn:
    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, CfnResource) or not node.node.dependencies:
            return
        reference = _role_reference(node)
        if reference is None:
            return
        stack = Stack.of(node)
        resolved = stack.resolve(reference)
        if not (isinstance(resolved, dict) and "Fn::GetAtt" in resolved):
            return
        referenced = resolved["Fn::GetAtt"][0]
        depends_on: list[str] = []
        for dependency in node.node.dependencies:
            for child in dependency.node.find_all():
                if isinstance(child, CfnResource) and Stack.of(child) is stack:
                    logical_id = stack.resolve(child.logical_id)
                    if logical_id != referenced and logical_id not in depends_on:
                        depends_on.append(logical_id)
        if len(depends_on) < sum(1 for d in node.node.dependencies for _ in d.node.find_all()):
            node.add_override("DependsOn", sorted(depends_on))
