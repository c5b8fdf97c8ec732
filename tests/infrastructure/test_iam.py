"""IAM statements: no wildcard actions, a read-only source role, a prefix-scoped target role, and
cross-account access only by AssumeRole of the configured roles."""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any

import pytest

from cdk.access import BUCKET_SETTINGS_READ
from icelake.constants import LAMBDA_STEPS
from tests.infrastructure.conftest import Synth
from tests.infrastructure.helpers import (
    actions,
    as_list,
    example_settings,
    flat,
    identity_statements,
    resources_of,
    role_logical_id,
    service_role,
)

SOURCE_ROLE = "arn:aws:iam::111111111111:role/icelake-source-read"
TARGET_ROLE = "arn:aws:iam::222222222222:role/icelake-target-write"
WRITE_VERBS = re.compile(
    r":(Put|Delete|Create|Update|Batch(Create|Update|Delete)|Write|Tag|Untag|Restore|Copy)"
)


@pytest.mark.parametrize(
    "stack", ["IcelakeOrchestrator", "IcelakeSourceAccess", "IcelakeTargetAccess", "IcelakeIngest"]
)
def test_no_identity_policy_has_a_wildcard_action(synth: Synth, stack: str) -> None:
    for action in actions(identity_statements(synth.templates[stack])):
        assert "*" not in action, f"{stack}: wildcard action {action}"


def test_source_role_is_read_only(synth: Synth) -> None:
    template = synth.templates["IcelakeSourceAccess"]
    role = role_logical_id(template, "icelake-source-read")
    statements = identity_statements(template, role)
    assert statements
    assert all(s["Effect"] == "Allow" for s in statements)
    found = actions(statements)
    assert not {a for a in found if WRITE_VERBS.search(a)}, found
    assert found <= {
        "s3:GetObject",
        "s3:ListBucket",
        "s3:GetBucketLocation",  # requests go to each bucket's region
        *BUCKET_SETTINGS_READ,  # the assessment compares the buckets' settings
        "glue:GetDatabase",
        "glue:GetDatabases",
        "glue:GetTable",
        "glue:GetTables",
        "kms:Decrypt",
        # with lake_formation_enabled: the source's grants and tags, read
        "lakeformation:ListPermissions",
        "lakeformation:ListDataCellsFilter",
        "lakeformation:GetResourceLFTags",
        "lakeformation:GetLFTag",
        # the assessment's consumer scan (cdk/consumers.py): definitions listed and read
        *("glue:GetJobs", "glue:GetCrawlers", "athena:ListWorkGroups", "athena:ListNamedQueries"),
        *("athena:BatchGetNamedQuery", "athena:ListPreparedStatements", "athena:GetPreparedStatement"),
        *("states:ListStateMachines", "states:DescribeStateMachine", "lambda:ListFunctions"),
    }
    # S3 only on the named prefixes
    for s in statements:
        for r in as_list(s["Resource"]):
            text = flat(r)
            if ":s3:::" in text:
                assert text in {"arn:aws:s3:::source-lake", "arn:aws:s3:::source-lake/warehouse/*"}, text
    # Nothing else in the source stack grants anything either
    assert not {a for a in actions(identity_statements(template)) if WRITE_VERBS.search(a)}


def _trust(template: dict[str, Any], role: str) -> dict[str, Any]:
    (statement,) = template["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    return statement


@pytest.mark.parametrize(
    ("stack", "name"),
    [("IcelakeSourceAccess", "icelake-source-read"), ("IcelakeTargetAccess", "icelake-target-write")],
)
def test_only_the_orchestrator_roles_may_assume_the_access_roles(synth: Synth, stack: str, name: str) -> None:
    template = synth.templates[stack]
    trust = _trust(template, role_logical_id(template, name))
    assert trust["Action"] == "sts:AssumeRole"
    assert "123456789012" in flat(trust["Principal"]["AWS"])
    assert trust["Condition"]["ArnEquals"]["aws:PrincipalArn"] == [
        "arn:aws:iam::123456789012:role/icelake-migrate-steps",
        "arn:aws:iam::123456789012:role/icelake-migrate-glue",
    ]


@pytest.mark.parametrize(
    ("stack", "name"),
    [("IcelakeSourceAccess", "icelake-source-read"), ("IcelakeTargetAccess", "icelake-target-write")],
)
def test_access_roles_accept_the_longest_session_icelake_asks_for(
    synth: Synth, stack: str, name: str
) -> None:
    from icelake.aws.session import MAX_SESSION_SECONDS

    # STS refuses a DurationSeconds above the role's MaxSessionDuration; role chaining caps it at 1 h
    template = synth.templates[stack]
    role = template["Resources"][role_logical_id(template, name)]["Properties"]
    assert role["MaxSessionDuration"] == MAX_SESSION_SECONDS == 3600


def test_external_id_from_context_is_required_in_the_trust_policy() -> None:
    from aws_cdk import App, Environment
    from aws_cdk.assertions import Template

    from cdk.access import SourceAccessStack

    settings = example_settings(source_external_id="s3cr3t-ext-id")
    stack = SourceAccessStack(
        App(), "Source", settings=settings, env=Environment(account="111111111111", region="us-east-1")
    )
    template = Template.from_stack(stack).to_json()
    trust = _trust(template, role_logical_id(template, "icelake-source-read"))
    assert trust["Condition"]["StringEquals"] == {"sts:ExternalId": "s3cr3t-ext-id"}


def test_the_source_role_may_mark_promoted_tables_only_when_the_context_allows_it() -> None:
    from aws_cdk import App, Environment
    from aws_cdk.assertions import Template

    from cdk.access import SourceAccessStack

    granted = {}
    for allow in (False, True):
        stack = SourceAccessStack(
            App(),
            "Source",
            settings=example_settings(source_allow_mark=allow),
            env=Environment(account="111111111111", region="us-east-1"),
        )
        template = Template.from_stack(stack).to_json()
        statements = identity_statements(template, role_logical_id(template, "icelake-source-read"))
        granted[allow] = [s for s in statements if "glue:UpdateTable" in as_list(s["Action"])]
    assert granted[False] == []
    (mark,) = granted[True]  # one write, on the source databases' tables, and nothing else
    assert as_list(mark["Action"]) == ["glue:UpdateTable"]
    assert all(":glue:" in flat(r) for r in as_list(mark["Resource"]))


def test_target_role_writes_only_under_its_prefix_and_databases(synth: Synth) -> None:
    template = synth.templates["IcelakeTargetAccess"]
    role = role_logical_id(template, "icelake-target-write")
    statements = identity_statements(template, role)
    (bucket_id,) = [
        k
        for k, v in template["Resources"].items()
        if v["Type"] == "AWS::S3::Bucket" and v["Properties"].get("BucketName") == "target-lake"
    ]
    target_objects = f"<{bucket_id}.Arn>/warehouse/*"
    for s in statements:
        s3_actions = [a for a in as_list(s["Action"]) if a.startswith("s3:")]
        if not s3_actions:
            continue
        for r in as_list(s["Resource"]):
            text = flat(r)
            if text == target_objects:
                continue
            if text == f"<{bucket_id}.Arn>" and s3_actions == ["s3:GetBucketLocation", *BUCKET_SETTINGS_READ]:
                continue  # the bucket's region, asked once, and its settings (the assessment)
            if text == f"<{bucket_id}.Arn>":  # listing, limited to the prefix by condition
                assert set(s3_actions) <= {"s3:ListBucket"}
                assert s["Condition"]["StringLike"]["s3:prefix"] == ["warehouse/*", "warehouse"]
                continue
            # anything else is the source, read only (server-side copies are signed by this role)
            assert text in {"arn:aws:s3:::source-lake/warehouse/*", "arn:aws:s3:::source-lake"}, text
            assert set(s3_actions) <= {"s3:GetObject", "s3:ListBucket"}, s
    writes = {a for a in actions(statements) if WRITE_VERBS.search(a)}
    assert {a for a in writes if not a.startswith("s3tables:")} == {
        "s3:PutObject",
        "s3:DeleteObject",
        "glue:CreateDatabase",  # Register ensures the database (IAM is checked before existence)
        "glue:CreateTable",
        "glue:UpdateTable",
        "glue:DeleteTable",
    }
    # the example's table bucket (table_bucket_arns): new namespaces and tables in it, every write of
    # a table only where icelake's owner tag names this source account (test_table_buckets.py)
    for s in statements:
        table_writes = {
            a for a in as_list(s["Action"]) if a.startswith("s3tables:") and WRITE_VERBS.search(a)
        }
        if not table_writes:
            continue
        assert {flat(r) for r in as_list(s["Resource"])} <= {
            "arn:aws:s3tables:us-east-1:222222222222:bucket/lake",
            "arn:aws:s3tables:us-east-1:222222222222:bucket/lake/table/*",
        }, s
        if table_writes - {"s3tables:CreateNamespace", "s3tables:CreateTable"}:
            assert "Condition" in s and "111111111111:*" in json.dumps(s["Condition"]), s
    for s in statements:
        if any(a.startswith("glue:") for a in as_list(s["Action"])):
            for r in as_list(s["Resource"]):
                text = flat(r)
                assert text.endswith((":catalog", ":database/sales", ":table/sales/*")), text


def test_step_lambdas_assume_only_the_configured_roles(synth: Synth) -> None:
    template = synth.templates["IcelakeOrchestrator"]
    for role_name in ("icelake-migrate-steps", "icelake-migrate-glue"):
        statements = identity_statements(template, role_logical_id(template, role_name))
        assume = [s for s in statements if "sts:AssumeRole" in as_list(s["Action"])]
        assert len(assume) == 1
        assert sorted(as_list(assume[0]["Resource"])) == [SOURCE_ROLE, TARGET_ROLE]
        assert as_list(assume[0]["Action"]) == ["sts:AssumeRole"]
    # and no other identity policy of the stack can assume roles
    for s in identity_statements(template):
        if "sts:AssumeRole" in as_list(s["Action"]):
            assert sorted(as_list(s["Resource"])) == [SOURCE_ROLE, TARGET_ROLE]


def test_state_machine_invokes_only_its_functions_and_job(synth: Synth) -> None:
    template = synth.templates["IcelakeOrchestrator"]
    sm_role = service_role(template, "states.amazonaws.com")
    statements = identity_statements(template, sm_role)
    invoke = [s for s in statements if "lambda:InvokeFunction" in as_list(s["Action"])]
    # the seven steps of the migration, the Assess step of mode assess and the Verify step of verify
    assert len(as_list(invoke[0]["Resource"])) == len(LAMBDA_STEPS)  # each step function, no other
    glue = [s for s in statements if "glue:StartJobRun" in as_list(s["Action"])]
    assert flat(glue[0]["Resource"]).endswith(":job/icelake-migrate-table")


def _allows(statements: list[dict[str, Any]], action: str, resource: str) -> bool:
    return any(
        action in as_list(s["Action"])
        and any(fnmatch.fnmatchcase(resource, flat(r)) for r in as_list(s["Resource"]))
        for s in statements
        if s.get("Effect", "Allow") == "Allow"
    )


def test_state_machine_writes_map_results_only_under_the_runs_prefix_and_report_reads_them(
    synth: Synth,
) -> None:
    template = synth.templates["IcelakeOrchestrator"]
    (bucket_id,) = [
        k
        for k, v in resources_of(template, "AWS::S3::Bucket").items()
        if str(v["Properties"].get("BucketName", "")).startswith("icelake-artifacts-")
    ]
    result_file = f"<{bucket_id}.Arn>/runs/run-1/map-results/0f2c/SUCCEEDED_0.json"
    # The state machine's ResultWriter writes the manifest and result files under runs/*/map-results/
    sm = identity_statements(template, service_role(template, "states.amazonaws.com"))
    for action in ("s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"):
        assert _allows(sm, action, result_file), action
    # and nowhere else
    assert not _allows(sm, "s3:PutObject", f"<{bucket_id}.Arn>/runs/run-1/report.json")
    assert not _allows(sm, "s3:PutObject", f"<{bucket_id}.Arn>/map-results/x/manifest.json")
    # The Report Lambda (the steps role) reads them
    steps = identity_statements(template, role_logical_id(template, "icelake-migrate-steps"))
    assert _allows(steps, "s3:GetObject", result_file)
