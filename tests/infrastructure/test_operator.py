"""The operator's commands against real AWS, decided by the real IAM evaluator (issue 60): with the
policy docs/deploy.md gives an operator ("The operator"), every call of `icelake assess --workflow`,
`migrate start`, `migrate status`, `migrate verify` and `migrate carry-over` is allowed, and the
operator cannot read source data or assume the access roles unless the deployment opts in
(`operator_principal_arns`).

The calls are those of icelake/workflow/client.py (find_state_machine, start_migration,
run_status, read_report) and icelake/cli_assess.py (the assessment's two files): the IAM action
and resource ARN AWS checks for each."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment
from aws_cdk.assertions import Template

from cdk.access import SourceAccessStack, TargetAccessStack
from icelake.constants import ARTIFACTS_BUCKET, LEDGER_TABLE, MIGRATE_STATE_MACHINE
from icelake.local.lake import SOURCE_ACCOUNT, TARGET_ACCOUNT
from tests.infrastructure.conftest import Synth
from tests.infrastructure.helpers import example_settings, resources_of, role_logical_id
from tests.infrastructure.iam_eval import Call, Stack, decide

REPO = Path(__file__).resolve().parents[2]
DEPLOY_DOC = REPO / "docs" / "deploy.md"
ORCHESTRATOR, REGION = "123456789012", "us-east-1"  # the example's (examples/context.json)
OPERATOR = f"arn:aws:iam::{ORCHESTRATOR}:role/icelake-operator"
RUN = "run-20261206-120000"
SOURCE_OBJECT = "arn:aws:s3:::source-lake/warehouse/sales/orders/data/part-0.parquet"
ROLES = {
    "icelake-source-read": ("IcelakeSourceAccess", SOURCE_ACCOUNT),
    "icelake-target-write": ("IcelakeTargetAccess", TARGET_ACCOUNT),
}


def documented_policies() -> tuple[dict[str, Any], dict[str, Any]]:
    """The operator's policy and the opt-in statement, as docs/deploy.md gives them (JSON blocks
    after "The operator's policy:" and "With operator_principal_arns, add:")."""
    text = re.split(r"\n#{2,3} ", DEPLOY_DOC.read_text().split("\n### The operator\n", 1)[1], maxsplit=1)[0]
    blocks = re.findall(r"```json\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 2, "docs/deploy.md 'The operator' gives the policy and the opt-in statement"
    return json.loads(blocks[0]), json.loads(blocks[1])


def _artifacts_policy(synth: Synth) -> dict[str, Any]:
    orchestrator = Stack(synth.templates["IcelakeOrchestrator"], ORCHESTRATOR, REGION)
    bucket = ARTIFACTS_BUCKET.format(account=ORCHESTRATOR)
    (policy,) = [
        p["Properties"]["PolicyDocument"]
        for p in resources_of(orchestrator.template, "AWS::S3::BucketPolicy").values()
        if bucket in json.dumps(orchestrator.resolve(p["Properties"]["Bucket"]))
    ]
    return dict(orchestrator.resolve(policy))


def command_calls(policy: dict[str, Any], artifacts_policy: dict[str, Any]) -> list[Call]:
    """Each command's calls, as the operator in the orchestrator account makes them."""
    sm = f"arn:aws:states:{REGION}:{ORCHESTRATOR}:stateMachine:{MIGRATE_STATE_MACHINE}"
    execution = f"arn:aws:states:{REGION}:{ORCHESTRATOR}:execution:{MIGRATE_STATE_MACHINE}:{RUN}"
    ledger = f"arn:aws:dynamodb:{REGION}:{ORCHESTRATOR}:table/{LEDGER_TABLE}"
    artifacts = f"arn:aws:s3:::{ARTIFACTS_BUCKET.format(account=ORCHESTRATOR)}"
    tls = {"aws:SecureTransport": "true"}

    def call(command: str, action: str, resource: str, **kw: Any) -> Call:
        why = f"{command}: {action} {resource}"
        return Call(why, OPERATOR, action, resource, ORCHESTRATOR, [policy], **kw)

    def follow(command: str, *files: str) -> list[Call]:
        """find_state_machine, run_status each poll (the execution, the ledger's rows of the run),
        and what the run wrote (read_report; the assessment's files)."""
        return [
            call(command, "states:ListStateMachines", "*"),
            call(command, "states:DescribeExecution", execution),
            call(command, "dynamodb:Query", ledger),
            *(
                call(
                    command,
                    "s3:GetObject",
                    f"{artifacts}/runs/{RUN}/{f}",
                    resource_policy=artifacts_policy,
                    context=tls,
                )
                for f in files
            ),
        ]

    calls = []
    starting = ("assess --workflow", "migrate start", "migrate verify", "migrate carry-over")
    starting += ("migrate cutover",)
    for command in starting:
        calls.append(call(command, "states:StartExecution", sm))
        files = ("assessment.json", "assessment.html") if command.startswith("assess") else ("report.json",)
        calls += follow(command, *files)
    calls += follow("migrate status", "report.json")
    return calls


def _trust(stack: Stack, role: str) -> dict[str, Any]:
    document = stack.template["Resources"][role_logical_id(stack.template, role)]["Properties"]
    return dict(stack.resolve(document["AssumeRolePolicyDocument"]))


def _direct(stacks: dict[str, Stack], policies: list[dict[str, Any]]) -> list[Call]:
    """What reading directly would take: assuming the access roles, or the source data itself."""
    calls = [
        Call(
            f"assume {role}",
            OPERATOR,
            "sts:AssumeRole",
            f"arn:aws:iam::{account}:role/{role}",
            account,
            policies,
            resource_policy=_trust(stacks[role], role),
        )
        for role, (_stack, account) in ROLES.items()
    ]
    calls.append(Call("read source data", OPERATOR, "s3:GetObject", SOURCE_OBJECT, SOURCE_ACCOUNT, policies))
    return calls


def test_the_operators_commands_are_allowed_by_the_documented_policy(synth: Synth) -> None:
    policy, _opt_in = documented_policies()
    calls = command_calls(policy, _artifacts_policy(synth))
    decisions = decide(calls)
    denied = [f"{c.why}: {d}" for c, d in zip(calls, decisions, strict=True) if d != "Allowed"]
    print(f"IAM operator: {len(calls)} calls of 6 commands evaluated, {len(denied)} denied")
    assert not denied, "\n".join(denied)


def test_the_operator_cannot_read_source_data_unless_opted_in(synth: Synth) -> None:
    policy, opt_in = documented_policies()
    deployed = {role: Stack(synth.templates[stack], account) for role, (stack, account) in ROLES.items()}
    # Given the example's stacks (no operator_principal_arns): denied, even with the opt-in statement
    refused = decide(_direct(deployed, [policy]) + _direct(deployed, [policy, opt_in]))
    assert all(d != "Allowed" for d in refused), refused
    # Given stacks that trust the operator (operator_principal_arns): the roles, never the data itself
    settings = example_settings(operator_principal_arns=[OPERATOR], source_external_id="")
    trusting = {
        "icelake-source-read": SourceAccessStack(
            App(), "Source", settings=settings, env=Environment(account=SOURCE_ACCOUNT, region=REGION)
        ),
        "icelake-target-write": TargetAccessStack(
            App(), "Target", settings=settings, env=Environment(account=TARGET_ACCOUNT, region=REGION)
        ),
    }
    opted = {
        role: Stack(Template.from_stack(stack).to_json(), ROLES[role][1]) for role, stack in trusting.items()
    }
    *assumed, data = decide(_direct(opted, [policy, opt_in]))
    assert assumed == ["Allowed", "Allowed"]
    assert data != "Allowed"
    # ... and only that operator: another role of the same account is not trusted
    other = Call(
        "another role",
        f"arn:aws:iam::{ORCHESTRATOR}:role/someone-else",
        "sts:AssumeRole",
        f"arn:aws:iam::{SOURCE_ACCOUNT}:role/icelake-source-read",
        SOURCE_ACCOUNT,
        [policy, opt_in],
        resource_policy=_trust(opted["icelake-source-read"], "icelake-source-read"),
    )
    assert decide([other]) != ["Allowed"]


@pytest.mark.parametrize("arn", ["arn:aws:iam::123456789012:group/ops", "ops-role", "arn:aws:iam::1:role/x"])
def test_an_operator_that_is_no_role_or_user_arn_is_refused(arn: str) -> None:
    from cdk.config_values import ContextError

    with pytest.raises(ContextError, match="operator_principal_arns"):
        example_settings(operator_principal_arns=[arn])
