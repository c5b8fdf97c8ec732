"""Synthesized templates as concrete policies: CloudFormation intrinsics resolved to the ARNs the
deployed stacks would have (the test's accounts and region), per role and per resource."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tests.infrastructure.helpers import identity_statements, resources_of

REGION = "us-east-1"


def _name(props: dict[str, Any], logical_id: str, *keys: str) -> str:
    for k in keys:
        if isinstance(props.get(k), str):
            return str(props[k])
    return logical_id.lower()


class Resolver:
    """Fn::Join / Fn::Sub / Ref / Fn::GetAtt / Fn::Select / Fn::Split of one stack, made concrete."""

    def __init__(self, template: dict[str, Any], account: str, region: str = REGION) -> None:
        self.t = template
        self.account = account
        self.region = region

    def ref(self, logical_id: str) -> str:
        pseudo = {
            "AWS::AccountId": self.account,
            "AWS::Region": self.region,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "stack",
        }
        if logical_id in pseudo:
            return pseudo[logical_id]
        if logical_id in self.t.get("Parameters", {}):
            return str(self.t["Parameters"][logical_id].get("Default", logical_id))
        res = self.t["Resources"][logical_id]
        kind, props = res["Type"], self.resolve(res.get("Properties", {}))
        a, r = self.account, self.region
        if kind == "AWS::SNS::Topic":
            return f"arn:aws:sns:{r}:{a}:{_name(props, logical_id, 'TopicName')}"
        if kind == "AWS::StepFunctions::StateMachine":
            return f"arn:aws:states:{r}:{a}:stateMachine:{_name(props, logical_id, 'StateMachineName')}"
        if kind == "AWS::KMS::Key":
            return f"{logical_id.lower()}-key-id"
        return _name(
            props,
            logical_id,
            "BucketName",
            "TableName",
            "RoleName",
            "FunctionName",
            "Name",
            "LogGroupName",
            "PolicyName",
        )

    def get_att(self, logical_id: str, attr: str) -> str:
        res = self.t["Resources"][logical_id]
        kind = res["Type"]
        name, a, r = self.ref(logical_id), self.account, self.region
        arns = {
            "AWS::S3::Bucket": f"arn:aws:s3:::{name}",
            "AWS::DynamoDB::Table": f"arn:aws:dynamodb:{r}:{a}:table/{name}",
            "AWS::KMS::Key": f"arn:aws:kms:{r}:{a}:key/{name}",
            "AWS::IAM::Role": f"arn:aws:iam::{a}:role/{name}",
            "AWS::Lambda::Function": f"arn:aws:lambda:{r}:{a}:function:{name}",
            "AWS::Logs::LogGroup": f"arn:aws:logs:{r}:{a}:log-group:{name}:*",
            "AWS::StepFunctions::StateMachine": name,
            "AWS::SNS::Topic": name,
            "AWS::SQS::Queue": f"arn:aws:sqs:{r}:{a}:{name}",
        }
        if attr == "Arn" and kind in arns:
            return arns[kind]
        if attr == "Name":
            return name.rsplit(":", 1)[-1]
        return f"{name}.{attr}"

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            intrinsic = self._intrinsics().get(key)
            if intrinsic is not None:
                return intrinsic(arg)
            if key == "Fn::ImportValue":
                raise AssertionError(f"cross-stack import {arg} cannot be resolved offline")
        return {k: self.resolve(v) for k, v in value.items()}

    def _intrinsics(self) -> dict[str, Any]:
        return {
            "Ref": self.ref,
            "Fn::GetAtt": lambda arg: self.get_att(*(arg if isinstance(arg, list) else arg.split(".", 1))),
            "Fn::Join": lambda arg: arg[0].join(str(self.resolve(p)) for p in arg[1]),
            "Fn::Sub": self._sub,
            "Fn::Select": lambda arg: self.resolve(arg[1])[int(arg[0])],
            "Fn::Split": lambda arg: str(self.resolve(arg[1])).split(arg[0]),
        }

    def _sub(self, arg: Any) -> str:
        text, names = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

        def sub(m: re.Match[str]) -> str:
            var = m.group(1)
            if var in names:
                return str(names[var])
            if "." in var:
                return self.get_att(*var.split(".", 1))
            return self.ref(var)

        return re.sub(r"\$\{([^}!]+)\}", sub, text)


@dataclass(frozen=True)
class Deployed:
    """What IAM would hold after deploying the stacks: role ARN -> identity policies, and resource ARN
    -> resource policy (buckets, keys, topics, secrets)."""

    identity: dict[str, list[dict[str, Any]]]
    resource_policies: dict[str, dict[str, Any]]
    # bucket name -> ARN of its default SSE-KMS key: S3 asks KMS under the caller's name for every
    # object read (Decrypt) and write (GenerateDataKey) in it.
    bucket_keys: dict[str, str]


def deployed(templates: dict[str, dict[str, Any]], accounts: dict[str, str]) -> Deployed:
    identity: dict[str, list[dict[str, Any]]] = {}
    resource_policies: dict[str, dict[str, Any]] = {}
    bucket_keys: dict[str, str] = {}
    for stack, template in templates.items():
        account = accounts[stack]
        res = Resolver(template, account)
        for logical_id in resources_of(template, "AWS::IAM::Role"):
            arn = res.get_att(logical_id, "Arn")
            statements = res.resolve(identity_statements(template, logical_id))
            policy = {"Version": "2012-10-17", "Statement": statements}
            identity.setdefault(arn, []).append({"name": f"{stack}.{logical_id}", "policy": policy})
        for logical_id, body in template["Resources"].items():
            props = body.get("Properties", {})
            if body["Type"] == "AWS::S3::BucketPolicy":
                bucket = res.resolve(props["Bucket"])
                resource_policies[f"arn:aws:s3:::{bucket}"] = res.resolve(props["PolicyDocument"])
            if body["Type"] == "AWS::S3::Bucket" and "BucketName" in props:
                for rule in props.get("BucketEncryption", {}).get("ServerSideEncryptionConfiguration", []):
                    default = rule.get("ServerSideEncryptionByDefault", {})
                    if default.get("SSEAlgorithm") == "aws:kms" and "KMSMasterKeyID" in default:
                        bucket_keys[res.resolve(props["BucketName"])] = res.resolve(default["KMSMasterKeyID"])
            elif body["Type"] == "AWS::KMS::Key":
                resource_policies[res.get_att(logical_id, "Arn")] = res.resolve(props["KeyPolicy"])
            elif (
                body["Type"] == "AWS::IAM::Role"
            ):  # a role's trust policy is the resource policy of AssumeRole
                resource_policies[res.get_att(logical_id, "Arn")] = res.resolve(
                    props["AssumeRolePolicyDocument"]
                )
            elif body["Type"] == "AWS::SNS::TopicPolicy":
                for topic in res.resolve(props["Topics"]):
                    resource_policies[topic] = res.resolve(props["PolicyDocument"])
        # Statements the stacks ask the owners of existing buckets to add (outputs, JSON).
        for name, output in template.get("Outputs", {}).items():
            if name.startswith("SourceBucketPolicyStatement"):
                statement = json.loads(res.resolve(output["Value"]))
                (bucket,) = {
                    r.removeprefix("arn:aws:s3:::").split("/")[0] for r in _as_list(statement["Resource"])
                }
                policy = resource_policies.setdefault(
                    f"arn:aws:s3:::{bucket}", {"Version": "2012-10-17", "Statement": []}
                )
                policy["Statement"].append(statement)
    return Deployed(identity, resource_policies, bucket_keys)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
