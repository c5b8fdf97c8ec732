"""The configuration checked at synth (one line naming the key and the fix for each mistake), and the
optional parts of the access stacks (synthesized alone: no cdk-nag, fast)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment
from aws_cdk.assertions import Match, Template

from cdk.access import TargetAccessStack
from cdk.app import build_app
from cdk.config import EXAMPLE_CONFIG, REQUIRED_CONTEXT, Settings
from cdk.config_values import BucketPrefix, ContextError, IngestConfigError
from icelake.request.models import MigrationRequest
from tests.infrastructure.conftest import run_app_py
from tests.infrastructure.helpers import (
    actions,
    example_context,
    example_settings,
    identity_statements,
    ingest_example_context,
    ingest_example_settings,
    role_logical_id,
)

REPO = Path(__file__).resolve().parents[2]


ACCOUNTS = {
    "orchestrator_account": "123456789012",
    "orchestrator_region": "us-east-1",
    "source_account": "111111111111",
    "target_account": "222222222222",
}


def test_context_strings_from_the_command_line_are_parsed() -> None:
    # Given `-c` values, which arrive as strings
    app = App(
        context={
            **ACCOUNTS,
            "target_bucket": "target-lake",
            "source_locations": '[{"bucket": "lake-a", "prefix": "p/"}, {"bucket": "lake-b"}]',
            "source_databases": '["a", "b"]',
            "map_concurrency": "25",
            "source_kms_key_arns": '["arn:aws:kms:us-east-1:111111111111:key/k"]',
            "sync_enabled": "false",
        }
    )
    # When read into settings
    s = Settings.from_context(app.node)
    # Then they have their types, and defaults fill the rest
    assert s.source_locations == (BucketPrefix("lake-a", "p/"), BucketPrefix("lake-b", ""))
    assert s.source_locations[0].object_pattern == "p/*"
    assert s.source_locations[1].object_pattern == "*"
    assert s.source_databases == ("a", "b")
    assert s.target_databases == ("a", "b")  # by default, the source's names
    assert (s.source_region, s.target_region) == ("us-east-1", "us-east-1")  # the orchestrator's
    assert s.source_kms_key_arns == ("arn:aws:kms:us-east-1:111111111111:key/k",)
    assert s.map_concurrency == 25
    assert s.sync_enabled is False
    assert s.orchestrator_account == "123456789012"  # text keys stay text
    assert s.target_bucket == "target-lake"


def test_lake_formation_settings_when_enabled() -> None:
    settings = example_settings(
        lake_formation_enabled=True, lake_formation_admins=["arn:aws:iam::222222222222:role/Admin"]
    )
    stack = TargetAccessStack(
        App(), "Target", settings=settings, env=Environment(account="222222222222", region="us-east-1")
    )
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::LakeFormation::DataLakeSettings",
        {
            "Admins": Match.array_with(
                [{"DataLakePrincipalIdentifier": "arn:aws:iam::222222222222:role/Admin"}]
            )
        },
    )
    template.has_resource_properties("AWS::LakeFormation::Resource", {"UseServiceLinkedRole": True})
    as_json = template.to_json()
    statements = identity_statements(as_json, role_logical_id(as_json, "icelake-target-write"))
    assert {"lakeformation:GrantPermissions", "lakeformation:GetDataAccess"} <= actions(statements)


def test_the_target_role_can_grant_only_on_the_tables_it_registers() -> None:
    """Lake Formation's rule, which IAM cannot express (GrantPermissions has no resource-level
    permissions): a principal that is not a data lake admin grants only what it holds with the
    grant option, and a table's creator holds all of that table. So the target role must be no
    admin and hold nothing grantable: then it grants on the tables it created, and nowhere else."""
    settings = example_settings(
        lake_formation_enabled=True, lake_formation_admins=["arn:aws:iam::222222222222:role/Admin"]
    )
    stack = TargetAccessStack(
        App(), "Target", settings=settings, env=Environment(account="222222222222", region="us-east-1")
    )
    template = Template.from_stack(stack).to_json()
    role = role_logical_id(template, "icelake-target-write")
    resources = template["Resources"].values()
    (admins,) = [
        r["Properties"]["Admins"] for r in resources if r["Type"] == "AWS::LakeFormation::DataLakeSettings"
    ]
    assert admins == [{"DataLakePrincipalIdentifier": "arn:aws:iam::222222222222:role/Admin"}]
    held = [
        r["Properties"]
        for r in resources
        if r["Type"] in ("AWS::LakeFormation::PrincipalPermissions", "AWS::LakeFormation::Permissions")
    ]
    assert all(p["Principal"]["DataLakePrincipalIdentifier"] == {"Fn::GetAtt": [role, "Arn"]} for p in held)
    assert all(p["PermissionsWithGrantOption"] == [] for p in held)
    on = sorted((p["Resource"].get("Database", {}).get("Name", ""), tuple(p["Permissions"])) for p in held)
    assert on == [("", ("DATA_LOCATION_ACCESS",)), ("sales", ("CREATE_TABLE", "DESCRIBE"))]


def test_without_admins_named_the_accounts_lake_formation_admins_are_left_alone() -> None:
    stack = TargetAccessStack(
        App(),
        "Target",
        settings=example_settings(lake_formation_enabled=True),
        env=Environment(account="222222222222", region="us-east-1"),
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::LakeFormation::DataLakeSettings", 0)
    template.resource_count_is("AWS::LakeFormation::PrincipalPermissions", 2)


def test_no_lake_formation_resources_by_default() -> None:
    stack = TargetAccessStack(
        App(),
        "Target",
        settings=example_settings(),
        env=Environment(account="222222222222", region="us-east-1"),
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::LakeFormation::DataLakeSettings", 0)
    template.resource_count_is("AWS::Glue::Database", 1)
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketName": "target-lake",
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    Match.object_like(
                        {"ServerSideEncryptionByDefault": Match.object_like({"SSEAlgorithm": "aws:kms"})}
                    )
                ]
            },
        },
    )
    template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


@pytest.mark.parametrize("left_out", ["target_bucket", "source_locations", "source_account"])
def test_synth_stops_in_one_line_when_a_required_key_is_left_out(tmp_path: Path, left_out: str) -> None:
    context = {k: v for k, v in example_context().items() if k != left_out}
    done = run_app_py(tmp_path, tmp_path / "out", env={"CDK_CONTEXT_JSON": json.dumps(context)})
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("synth stopped: context ") and left_out in lines[0], (
        done.stderr
    )
    assert not (tmp_path / "out" / "IcelakeOrchestrator.template.json").exists()


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("map_concurrency", "lots", "map_concurrency: Input should be a valid integer"),
        ("orchestrator_account", "12345", "orchestrator_account: String should match pattern"),
        ("glue_workers", 1, "glue_workers: Input should be greater than or equal to 2"),
        ("sync_schedule", "every day", "sync_schedule: String should match pattern"),
        ("source_locations", '[{"prefix": "p"}]', "source_locations.0.bucket: Field required"),
        ("source_kms_key_arns", '["my-key"]', "source_kms_key_arns.0: String should match pattern"),
        ("target_bucket", "Target_Lake", "target_bucket: String should match pattern"),
    ],
)
def test_a_context_value_of_the_wrong_shape_is_named_in_one_line(key: str, value: object, said: str) -> None:
    # Given a context where one key has a value its field cannot hold
    app = App(
        context={
            **ACCOUNTS,
            "target_bucket": "target-lake",
            "source_locations": [{"bucket": "b"}],
            "source_databases": ["sales"],
            key: value,
        }
    )
    # When it is read into settings; Then one line names the key, what is wrong and what was given
    with pytest.raises(ContextError) as info:
        Settings.from_context(app.node)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"context {said}") and "(got " in message, message


FOREIGN_SECRET = "arn:aws:secretsmanager:eu-west-1:999999999999:secret:icelake/crm/api-token-AbCdEf"


# -- what a newcomer gets wrong (issue 37): each refused in one line naming the key and the fix ---------
def _one_line(done: subprocess.CompletedProcess[str], out: Path) -> str:
    """The one line app.py stopped with; nothing was synthesized."""
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("synth stopped: "), done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert not (out / "manifest.json").exists()
    return lines[0]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # A misspelt key, given to `python app.py` as to the CDK CLI: refused with the nearest key
        (
            ["-c", "target_buckett=my-lake"],
            "context key target_buckett is not one icelake reads: did you mean target_bucket?",
        ),
        # `-c` delivers "[]": parsed as JSON, so the required key is missing, not a traceback
        (["-c", "source_locations=[]"], "context source_locations is required: "),
        (
            ["-c", "source_locations=[{bucket: my-lake}]"],
            "context source_locations: '[{bucket: my-lake}]' is not JSON",
        ),
        # A sync request the workflow would refuse every day, refused at synth
        (["-c", 'sync_request={"source": {"account_id": "x"}}'], "context sync_request: source.account_id: "),
        # An empty request with the schedule on: it would silently never run
        (
            ["-c", "sync_request={}", "-c", "sync_enabled=true"],
            "context sync_enabled is true but there is no sync_request",
        ),
        # A secret the fetch Lambda could never read: another account and region
        (
            ["-c", "ingest_enabled=true", "-c", f"ingest_secret_arns=[{json.dumps(FOREIGN_SECRET)}]"],
            f"context ingest_secret_arns: {FOREIGN_SECRET!r} is in eu-west-1, account 999999999999; the "
            "fetch Lambda reads secrets of the orchestrator's region and account (us-east-1, 123456789012)",
        ),
    ],
)
def test_app_py_takes_dash_c_and_refuses_a_mistake_in_one_line(
    tmp_path: Path, args: list[str], said: str
) -> None:
    # Given the example configuration, named as a deployment names its own, and one mistaken -c
    done = run_app_py(tmp_path, tmp_path / "out", args=["-c", f"config={EXAMPLE_CONFIG}", *args])
    # Then synth stops with one line that names the key and the fix
    assert _one_line(done, tmp_path / "out").startswith(f"synth stopped: {said}"), done.stderr


def test_cdk_synth_on_an_unedited_checkout_lists_every_required_key_and_synthesizes_nothing(
    tmp_path: Path,
) -> None:
    # Given what the CDK CLI passes on an unedited checkout: cdk.json's context
    cdk_json = json.loads((REPO / "cdk.json").read_text())["context"]
    done = run_app_py(tmp_path, tmp_path / "out", env={"CDK_CONTEXT_JSON": json.dumps(cdk_json)})
    # Then no example account is synthesized: one line lists every key a deployment must name
    line = _one_line(done, tmp_path / "out")
    assert line.startswith(f"synth stopped: context {', '.join(REQUIRED_CONTEXT)} are required: "), line
    assert "-c config=PATH" in line and "examples/context.json" in line


def test_a_misspelt_key_is_refused_wherever_it_comes_from() -> None:
    # CDK's own keys pass; a snake_case key icelake does not read, or one near to it, does not
    cdk_keys = {
        "aws:cdk:enable-path-metadata": True,
        "@aws-cdk/core:newStyleStackSynthesis": True,
        "acknowledged-issue-numbers": [123],
        "availability-zones:account=1:region=x": ["a"],
    }
    Settings.from_mapping(example_context() | cdk_keys)
    for key, near in (
        ("target-bucket", "target_bucket"),
        ("sync_requests", "sync_request"),
        ("glue_worker", "glue_workers"),
    ):
        with pytest.raises(
            ContextError, match=f"^context key {key} is not one icelake reads: did you mean {near}\\?$"
        ):
            Settings.from_mapping(example_context() | {key: "x"})
    with pytest.raises(ContextError, match=r"^context key colour is not one icelake reads: remove it"):
        Settings.from_mapping(example_context() | {"colour": "blue"})


@pytest.mark.parametrize(
    ("request_", "said"),
    [
        ({}, None),  # no request: no rule
        ({"run_id": "nightly"}, "remove run_id from sync_request"),
        ({"mode": "full"}, "the scheduled sync is incremental: remove mode 'full'"),
        ({"selection": {"databases": []}}, "selection: Value error, selection needs 'databases' or 'tables'"),
        (
            {"target": {"account_id": "333333333333"}},
            "target.account_id is '333333333333', not target_account '222222222222'",
        ),
        (
            {"target": {"bucket": "other-lake"}},
            "target.bucket is 'other-lake', not target_bucket 'target-lake'",
        ),
        (
            {"selection": {"databases": ["hr"]}},
            "selection names databases ['hr'] outside source_databases ['sales']",
        ),
    ],
)
def test_the_sync_request_is_checked_as_the_workflow_and_the_deployed_roles_take_it(
    request_: dict[str, Any], said: str | None
) -> None:
    example = example_context()["sync_request"]
    if request_ == {}:
        settings = example_settings(sync_request={}, sync_enabled=False)
        assert settings.sync_request is None
        return
    merged = {**example}
    for key, value in request_.items():
        merged[key] = {**example[key], **value} if isinstance(value, dict) else value
    with pytest.raises(ContextError) as info:
        example_settings(sync_request=merged)
    message = str(info.value)
    assert "\n" not in message and message.startswith("context sync_request: ") and said in message, message


def test_the_example_sync_request_is_sent_as_an_incremental_request() -> None:
    settings = example_settings(sync_enabled="true")
    assert settings.sync_enabled is True
    assert settings.sync_request is not None and settings.sync_request["mode"] == "incremental"
    without_mode = {k: v for k, v in example_context()["sync_request"].items() if k != "mode"}
    assert example_settings(sync_request=json.dumps(without_mode)).sync_request == settings.sync_request


def test_a_secret_outside_the_orchestrators_account_or_region_is_refused() -> None:
    arn = "arn:aws:secretsmanager:{}:{}:secret:icelake/crm/api-token-??????"
    ingest_example_settings(ingest_secret_arns=[arn.format("us-east-1", "123456789012")])
    for region, account in (("us-east-1", "999999999999"), ("eu-west-1", "123456789012")):
        with pytest.raises(IngestConfigError, match=f"is in {region}, account {account}; the fetch Lambda"):
            ingest_example_settings(ingest_secret_arns=[arn.format(region, account)])


def test_the_ingestion_stack_and_the_scheduled_sync_deploy_only_when_configured(tmp_path: Path) -> None:
    # Given the example's accounts and buckets with no ingestion source nor sync request
    context = {k: v for k, v in example_context().items() if not k.startswith(("ingest_", "sync_"))}
    settings = Settings.from_mapping(context)
    assert (settings.ingest_enabled, settings.sync_enabled, settings.sync_request) == (False, False, None)
    # When the app is built; Then there is no ingestion stack and no scheduled sync rule
    app = build_app(context=context, outdir=tmp_path)
    assert {c.node.id for c in app.node.children} >= {"IcelakeOrchestrator", "IcelakeSourceAccess"}
    assert "IcelakeIngest" not in {c.node.id for c in app.node.children}
    assert not [c for c in app.node.find_all() if c.node.id == "IncrementalSync"]
    # while the example's request deploys the rule (disabled, as the example's sync_enabled says)
    assert example_settings().sync_request is not None


# -- the deploy docs say what the model reads ----------------------------------------------------------
DEPLOY_DOC = REPO / "docs" / "deploy.md"


def _doc_keys() -> dict[str, str]:
    """Key -> default column of the table under "### Context keys" in docs/deploy.md."""
    text = DEPLOY_DOC.read_text().split("### Context keys", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| `")]
    return {cells[0].strip().strip("`"): cells[1].strip() for cells in rows}


def test_the_deploy_docs_list_every_key_the_model_reads_and_which_are_required() -> None:
    keys = _doc_keys()
    assert set(keys) == {*Settings.model_fields, "config"}, set(keys) ^ {*Settings.model_fields, "config"}
    assert {k for k, default in keys.items() if default == "required"} == set(REQUIRED_CONTEXT)
    # and the examples show every key a deployment may set, but the file's own (the ingest keys in
    # the ingest example: examples/context.json deploys no ingestion)
    shown = set(example_context()) | set(ingest_example_context())
    assert example_context()["ingest_enabled"] is False
    assert shown | {"config", "deps_layer_dir", "source_external_id"} >= set(keys) - {
        "ingest_create_databases",
        "ingest_warehouse_bucket",
        "ingest_warehouse_kms_key_arn",
        "source_allow_mark",
    }


def test_the_console_input_of_the_deploy_docs_is_a_request_the_workflow_takes() -> None:
    text = DEPLOY_DOC.read_text().split("- Console:", 1)[1]
    block = text.split("```json\n", 1)[1].split("```", 1)[0]
    request = json.loads(block)  # as pasted: JSON with nothing to strip
    # the execution's name becomes the run id (Inventory), as the console starts it
    parsed = MigrationRequest.model_validate({"run_id": "console-run", **request})
    assert parsed.options.dry_run is True
    # the values it tells the user to change are the example deployment's
    example = example_settings()
    assert (parsed.source.account_id, parsed.target.account_id) == (
        example.source_account,
        example.target_account,
    )
    assert (parsed.source.role_arn, parsed.target.role_arn) == (
        example.source_role_arn,
        example.target_role_arn,
    )
    assert (parsed.target.bucket, parsed.target.prefix) == (example.target_bucket, example.target_prefix)


def test_the_docs_name_one_node_version_which_the_pinned_cdk_cli_supports() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    named = {m for page in pages for m in re.findall(r"\bNode (\d+)\b", page.read_text())}
    assert len(named) == 1, named
    (version,) = named
    package = json.loads((REPO / "package.json").read_text())
    pinned = package["devDependencies"]["aws-cdk"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), f"the CDK CLI is pinned exactly, not {pinned!r}"
    assert f"`aws-cdk` {pinned}" in DEPLOY_DOC.read_text()
    cli = json.loads((REPO / "node_modules" / "aws-cdk" / "package.json").read_text())
    assert cli["version"] == pinned
    minimum = re.fullmatch(r">= ?(\d+)\.\d+\.\d+", cli["engines"]["node"])
    assert minimum and int(version) >= int(minimum.group(1)), cli["engines"]


def test_repair_on_damage_makes_the_scheduled_verify_a_repair(tmp_path: Path) -> None:
    # Given the example with repair_on_damage (default false: the rule sends mode verify)
    assert Settings.from_mapping(example_context()).repair_on_damage is False
    context = {**example_context(), "repair_on_damage": True}
    # When the app is built; Then the scheduled verify's request is mode repair, else the same
    app = build_app(context=context, outdir=tmp_path)
    orchestrator = next(c for c in app.node.children if c.node.id == "IcelakeOrchestrator")
    rules = Template.from_stack(orchestrator).find_resources("AWS::Events::Rule")  # type: ignore[arg-type]
    by_name = {r["Properties"]["Name"]: r["Properties"] for r in rules.values()}
    sync = json.loads(by_name["icelake-incremental-sync"]["Targets"][0]["Input"])
    assert json.loads(by_name["icelake-verify"]["Targets"][0]["Input"]) == {**sync, "mode": "repair"}
