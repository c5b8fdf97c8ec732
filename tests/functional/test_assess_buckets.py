"""The buckets compared by `icelake assess --request` on the embedded AWS (issue 46): the target's
lifecycle rules, Object Lock, encryption, versioning, replication and notifications against the
source's and the migration prefix; read only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from icelake.cli import app
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, add_source_table, bucket_state, catalog_state

pytestmark = pytest.mark.slow


def _assess(lake: Lake, tmp_path: Path, name: str) -> tuple[int, dict[str, Any]]:
    body = lake.request("unused")
    body.pop("run_id")
    request = tmp_path / f"{name}.json"
    request.write_text(json.dumps(body))
    out = tmp_path / name
    result = CliRunner().invoke(app, ["assess", "--request", str(request), "--out", str(out)])
    assessment = json.loads((out / "assessment.json").read_text())
    return result.exit_code, {t["table"]: t for t in assessment["tables"]}


def _kinds(findings: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f["kind"]: f for f in findings}


def test_a_lifecycle_rule_on_the_migration_prefix_warns_and_object_lock_blocks(
    lake: Lake, tmp_path: Path
) -> None:
    # Given a table, and a target bucket with no settings of note
    add_source_table(lake, "orders", [[1, 2], [3]])
    code, tables = _assess(lake, tmp_path, "plain")
    assert code == 0, tables
    plain = _kinds(tables["sales.orders"]["warnings"])
    assert not {k for k in plain if k.startswith("target_")}, plain

    # When the target bucket gets a lifecycle rule expiring the migration prefix after 7 days (and
    # one on another prefix, and one that needs a tag, which icelake's objects never carry)
    s3 = lake.target.client("s3")
    rules = [
        {
            "ID": "expire-migrated",
            "Filter": {"Prefix": "warehouse/"},
            "Status": "Enabled",
            "Expiration": {"Days": 7},
        },
        {"ID": "elsewhere", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 1}},
        {
            "ID": "tagged",
            "Filter": {"Tag": {"Key": "tmp", "Value": "1"}},
            "Status": "Enabled",
            "Expiration": {"Days": 1},
        },
    ]
    s3.put_bucket_lifecycle_configuration(Bucket=TARGET_BUCKET, LifecycleConfiguration={"Rules": rules})
    s3.put_bucket_versioning(Bucket=SOURCE_BUCKET, VersioningConfiguration={"Status": "Enabled"})
    before = [bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)]
    before += [bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)]
    code, tables = _assess(lake, tmp_path, "lifecycle")

    # Then a warning names the rule, only that one; and the unversioned target is said
    warned = _kinds(tables["sales.orders"]["warnings"])
    lifecycle = warned["target_lifecycle"]
    assert "'expire-migrated'" in lifecycle["message"] and "after 7 days" in lifecycle["message"]
    assert lifecycle["objects"] == ["expire-migrated"]
    assert "elsewhere" not in json.dumps(warned) and "tagged" not in json.dumps(warned)
    assert "target_unversioned" in warned
    assert code == 0 and not tables["sales.orders"]["blockers"]
    after = [bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)]
    after += [bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)]
    assert after == before  # read only

    # When the target bucket has Object Lock
    s3.put_bucket_versioning(Bucket=TARGET_BUCKET, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object_lock_configuration(
        Bucket=TARGET_BUCKET,
        ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 30}},
        },
    )
    code, tables = _assess(lake, tmp_path, "locked")

    # Then it is a blocker, and the assessment's exit code says so
    blocked = _kinds(tables["sales.orders"]["blockers"])
    assert (
        "Object Lock" in blocked["target_object_lock"]["message"]
        and TARGET_BUCKET in blocked["target_object_lock"]["message"]
    )
    assert code == 1
    assert "target_unversioned" not in _kinds(tables["sales.orders"]["warnings"])
