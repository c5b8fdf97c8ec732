"""IAM decisions on the synthesized templates by a real policy evaluator: `tools/iam_eval.mjs`
runs @cloud-copilot/iam-simulate (pinned in package.json), the same evaluation logic AWS documents.

The Python side only picks a role's, key's or bucket's policies out of a template; resolving them
to concrete JSON and calling the evaluator are tests/iam's (shared with the recorded e2e test)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.iam.evaluator import Request, simulate
from tests.iam.templates import Resolver
from tests.infrastructure.helpers import identity_statements, role_logical_id


@dataclass(frozen=True)
class Stack:
    template: dict[str, Any]
    account: str
    region: str = "us-east-1"

    def resolve(self, value: Any) -> Any:
        """A template value as the deployed stack would have it (tests/iam/templates.py)."""
        return Resolver(self.template, self.account, self.region).resolve(value)

    def arn(self, logical_id: str) -> str:
        return Resolver(self.template, self.account, self.region).get_att(logical_id, "Arn")

    def role_policies(self, role_name: str) -> list[dict[str, Any]]:
        statements = identity_statements(self.template, role_logical_id(self.template, role_name))
        return [{"Version": "2012-10-17", "Statement": self.resolve(statements)}]

    def role_arn(self, role_name: str) -> str:
        return f"arn:aws:iam::{self.account}:role/{role_name}"

    def key_policy(self, logical_id: str) -> dict[str, Any]:
        """A KMS key's policy: KMS grants nothing its key policy does not (directly, or by
        trusting the account's IAM policies)."""
        return dict(self.resolve(self.template["Resources"][logical_id]["Properties"]["KeyPolicy"]))


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
        Request(
            id=str(i),
            principal=c.principal,
            action=c.action,
            resource=c.resource,
            resource_account=c.account,
            identity_policies=[{"policy": p} for p in c.policies],
            resource_policy=c.resource_policy,
            context=c.context,
        )
        for i, c in enumerate(calls)
    ]
    decisions = simulate(requests)
    errors = [(c.why, d) for c, d in zip(calls, decisions.values(), strict=True) if d.startswith("Error")]
    assert not errors, f"the evaluator refused requests: {errors}"
    return [decisions[r.id] for r in requests]
