"""Context handling and the optional parts of the access stacks (synthesized alone: no cdk-nag, fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Environment
from aws_cdk.assertions import Match, Template

from cdk.access import TargetAccessStack
from cdk.config import BucketPrefix, ContextError, Settings
from tests.infrastructure.conftest import run_app_py
from tests.infrastructure.helpers import actions, identity_statements, role_logical_id

REPO = Path(__file__).resolve().parents[2]


ACCOUNTS = {
    "orchestrator_account": "123456789012",
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
            "sync_enabled": "true",
        }
    )
    # When read into settings
    s = Settings.from_context(app.node)
    # Then they have their types, and defaults fill the rest
    assert s.source_locations == (BucketPrefix("lake-a", "p/"), BucketPrefix("lake-b", ""))
    assert s.source_locations[0].object_pattern == "p/*"
    assert s.source_locations[1].object_pattern == "*"
    assert s.source_databases == ("a", "b")
    assert s.map_concurrency == 25
    assert s.sync_enabled is True
    assert s.target_bucket == "target-lake"


def test_lake_formation_settings_when_enabled() -> None:
    settings = Settings(
        lake_formation_enabled=True, lake_formation_admins=("arn:aws:iam::222222222222:role/Admin",)
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


def test_no_lake_formation_resources_by_default() -> None:
    stack = TargetAccessStack(
        App(), "Target", settings=Settings(), env=Environment(account="222222222222", region="us-east-1")
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
    context = {
        k: v for k, v in json.loads((REPO / "cdk.json").read_text())["context"].items() if k != left_out
    }
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
    ],
)
def test_a_context_value_of_the_wrong_shape_is_named_in_one_line(key: str, value: object, said: str) -> None:
    # Given a context where one key has a value its field cannot hold
    app = App(
        context={
            **ACCOUNTS,
            "target_bucket": "target-lake",
            "source_locations": [{"bucket": "b"}],
            key: value,
        }
    )
    # When it is read into settings; Then one line names the key, what is wrong and what was given
    with pytest.raises(ContextError) as info:
        Settings.from_context(app.node)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"context {said}") and "(got " in message, message
