"""Nothing stateful is deleted by a stack (issue 60): every Glue database, bucket, KMS key and
DynamoDB table the stacks create is retained by CloudFormation when its stack is destroyed or the
resource is replaced or removed from the configuration. Deleting a Glue database deletes every
table in it, promoted tables too; a bucket holds the migrated data; a key decrypts it; the ledger
remembers every sync. The guard reads the synthesized templates of both examples."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infrastructure.conftest import Synth

STATEFUL = ("AWS::Glue::Database", "AWS::S3::Bucket", "AWS::KMS::Key", "AWS::DynamoDB::Table")
RETAIN = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}


def not_retained(templates: dict[str, dict[str, Any]]) -> list[str]:
    """`stack/logical id (type)` of each stateful resource without Retain for both policies."""
    return [
        f"{stack}/{logical_id} ({resource['Type']})"
        for stack, template in templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] in STATEFUL
        and any(resource.get(policy) != value for policy, value in RETAIN.items())
    ]


def test_the_guard_names_a_stateful_resource_without_retain() -> None:
    templates = {
        "S": {
            "Resources": {
                "Kept": {"Type": "AWS::S3::Bucket", **RETAIN},
                "Db": {"Type": "AWS::Glue::Database", "DeletionPolicy": "Retain"},  # replaced: deleted
                "Key": {"Type": "AWS::KMS::Key"},
                "Fn": {"Type": "AWS::Lambda::Function"},  # not stateful
            }
        }
    }
    assert not_retained(templates) == ["S/Db (AWS::Glue::Database)", "S/Key (AWS::KMS::Key)"]


@pytest.mark.parametrize("example", ["synth_example", "synth"])  # context.json, context-ingest.json
def test_every_stateful_resource_the_stacks_create_is_retained(
    request: pytest.FixtureRequest, example: str
) -> None:
    synth: Synth = request.getfixturevalue(example)
    kinds = {
        kind: sum(r["Type"] == kind for t in synth.templates.values() for r in t["Resources"].values())
        for kind in STATEFUL
    }
    print(f"{example}: {kinds}")
    assert all(kinds.values()), f"the guard saw no resource of some kind: {kinds}"
    assert not not_retained(synth.templates), not_retained(synth.templates)
