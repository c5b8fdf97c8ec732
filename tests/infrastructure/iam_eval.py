"""IAM decisions on the synthesized templates by a real policy evaluator: `tools/iam_eval.mjs`
runs @cloud-copilot/iam-simulate (pinned in package.json), the same evaluation logic AWS documents.

The Python side only turns a template's policies into the concrete JSON a deployed stack would
have (CloudFormation intrinsics resolved with the stack's account and region)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.infrastructure.helpers import identity_statements, resources_of, role_logical_id

REPO = Path(__file__).resolve().parents[2]
EVALUATOR = REPO / "tools" / "iam_eval.mjs"


@dataclass(frozen=True)
class Stack:
    template: dict[str, Any]
    account: str
    region: str = "us-east-1"

    def resolve(self, value: Any) -> Any:
        """A template value as the deployed stack would have it."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return separator.join(str(self.resolve(p)) for p in parts)
        if "Ref" in value:
            return self._ref(value["Ref"])
        if "Fn::GetAtt" in value:
            logical_id, attribute = value["Fn::GetAtt"]
            return self._attribute(logical_id, attribute)
        return {k: self.resolve(v) for k, v in value.items()}

    def _ref(self, name: str) -> str:
        pseudo = {"AWS::Partition": "aws", "AWS::Region": self.region, "AWS::AccountId": self.account}
        if name in pseudo:
            return pseudo[name]
        props = self.template["Resources"][name].get("Properties", {})
        return str(props.get("BucketName") or props.get("TopicName") or props.get("Name") or name)

    def _attribute(self, logical_id: str, attribute: str) -> str:
        resource = self.template["Resources"][logical_id]
        kind, props = resource["Type"], resource.get("Properties", {})
        assert attribute == "Arn", (logical_id, attribute)
        if kind == "AWS::S3::Bucket":
            return f"arn:aws:s3:::{props.get('BucketName', logical_id.lower())}"
        if kind == "AWS::KMS::Key":
            return f"arn:aws:kms:{self.region}:{self.account}:key/{logical_id}"
        if kind == "AWS::IAM::Role":
            return f"arn:aws:iam::{self.account}:role/{props.get('RoleName', logical_id)}"
        if kind == "AWS::Logs::LogGroup":
            name = props.get("LogGroupName", logical_id)
            return f"arn:aws:logs:{self.region}:{self.account}:log-group:{name}:*"
        # Anything else: an ARN no request here names, so a statement on it matches nothing
        return f"arn:aws:cloudformation:{self.region}:{self.account}:resource/{kind}/{logical_id}"

    def role_policies(self, role_name: str) -> list[dict[str, Any]]:
        statements = identity_statements(self.template, role_logical_id(self.template, role_name))
        return [{"Version": "2012-10-17", "Statement": self.resolve(statements)}]

    def role_arn(self, role_name: str) -> str:
        return f"arn:aws:iam::{self.account}:role/{role_name}"

    def key_policy(self, logical_id: str) -> dict[str, Any]:
        """A KMS key's policy: KMS grants nothing its key policy does not (directly, or by
        trusting the account's IAM policies)."""
        return dict(self.resolve(self.template["Resources"][logical_id]["Properties"]["KeyPolicy"]))

    def bucket_policy(self, bucket_name: str) -> dict[str, Any] | None:
        for policy in resources_of(self.template, "AWS::S3::BucketPolicy").values():
            if self.resolve(policy["Properties"]["Bucket"]) == bucket_name:
                return dict(self.resolve(policy["Properties"]["PolicyDocument"]))
        return None


@dataclass
class Call:
    """One API call's IAM request: who, which action, on which resource, with which context."""

    why: str
    principal: str
    action: str
    resource: str
    account: str
    policies: list[dict[str, Any]]
    resource_policy: dict[str, Any] | None = None
    context: dict[str, Any] = field(default_factory=dict)


def decide(calls: list[Call]) -> list[str]:
    """Allowed, ImplicitlyDenied or ExplicitlyDenied for each call, in order."""
    requests = [
        {
            "principal": c.principal,
            "action": c.action,
            "resource": c.resource,
            "accountId": c.account,
            "identityPolicies": c.policies,
            "resourcePolicy": c.resource_policy,
            "context": c.context,
        }
        for c in calls
    ]
    done = subprocess.run(
        ["node", str(EVALUATOR)],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answers = json.loads(done.stdout)
    errors = [(c.why, a["errors"]) for c, a in zip(calls, answers, strict=True) if a["decision"] == "Error"]
    assert not errors, f"the evaluator refused requests: {errors}"
    return [str(a["decision"]) for a in answers]
