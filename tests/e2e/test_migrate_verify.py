"""Mode verify (day 2) through the real state machine on the embedded AWS: a migrated target is
checked against the source version it was synced from, a promoted one alone; nothing is written
to any table; damage is named in the outcome, counted in the metric the tables-failed alarm sums,
and carried by the run's event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from icelake.aws.fileio import S3FileIO
from icelake.cli import app
from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution
from icelake.migrate.check.reachable import reachable_files
from icelake.workflow.client import read_report
from icelake.workflow.models import OUTCOME_METRICS, RunSummary
from tests.e2e.conftest import run_workflow
from tests.e2e.test_migrate_workflow import _events_queue
from tests.lake import (
    SOURCE_BUCKET,
    TARGET_BUCKET,
    Lake,
    add_source_table,
    bucket_state,
    catalog_state,
    commit,
)

pytestmark = pytest.mark.slow


def _verify(deployment: LocalDeployment, lake: Lake, run_id: str) -> tuple[dict[str, Any], RunSummary]:
    """A verify run: its outcomes by table and its summary, checking it wrote nothing to either side."""
    before = [bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)]
    before += [bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)]
    result = run_execution(
        deployment.state_machine_arn, lake.request(run_id, mode="verify"), timeout=300, name=run_id
    )
    assert result.status == "SUCCEEDED", result.failure()
    after = [bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)]
    after += [bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)]
    assert after == before  # nothing written to any table, on either side
    summary = RunSummary.model_validate(result.output)
    report = read_report(summary.report_uri)
    return {t["table"]: t for t in report["tables"]}, summary


def test_verify_names_a_data_file_overwritten_on_the_target(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    lake, deployment = world
    queue = _events_queue()
    add_source_table(lake, "orders", [[1, 2], [3]])
    (migrated,) = run_workflow(deployment, lake.request("full-1"))["tables"]
    assert migrated["status"] == "migrated", migrated

    outcomes, summary = _verify(deployment, lake, "verify-1")
    assert outcomes["sales.orders"]["status"] == "verified", outcomes
    assert "against the source version synced from" in outcomes["sales.orders"]["validation"]
    assert summary.status == "succeeded" and summary.metrics()[OUTCOME_METRICS["damaged"]] == 0

    # Someone overwrites a data file of the target by hand.
    s3 = S3FileIO(lake.target.client("s3"))
    data = sorted(
        p for p in reachable_files(s3, migrated["target_metadata_location"]) if p.endswith(".parquet")
    )
    s3.write(data[0], b"overwritten by hand, not a Parquet file")

    outcomes, summary = _verify(deployment, lake, "verify-2")
    damaged = outcomes["sales.orders"]
    assert damaged["status"] == "damaged", damaged
    assert damaged["error"]["type"] == "Damaged" and damaged["error"]["step"] == "Verify"
    assert data[0] in damaged["error"]["message"] and "bytes" in damaged["error"]["message"]
    assert all(p not in damaged["error"]["message"] for p in data[1:])  # only what changed is named
    # The Report Lambda publishes these metrics; the tables-failed alarm sums TablesDamaged.
    assert summary.status == "failed" and summary.metrics()[OUTCOME_METRICS["damaged"]] == 1
    sqs = boto3.client("sqs")
    messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    bodies = [json.loads(m["Body"]) for m in messages]
    detail = next(b["detail"] for b in bodies if b["detail"].get("run_id") == "verify-2")
    assert detail["errors"][0]["table"] == "sales.orders" and data[0] in detail["errors"][0]["message"]

    # The same through the command: the request's mode becomes verify; exit code 1
    request = tmp_path / "request.json"
    request.write_text(json.dumps({k: v for k, v in lake.request("unused").items() if k != "run_id"}))
    result = CliRunner().invoke(
        app, ["migrate", "verify", "--request", str(request), "--run-id", "verify-cli", "--json"]
    )
    assert result.exit_code == 1, result.stderr
    (shown,) = json.loads(result.stdout)["tables"]
    assert shown["status"] == "damaged" and data[0] in shown["error"]["message"]


def test_a_promoted_table_is_verified_alone(world: tuple[Lake, LocalDeployment]) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1, 2], [3]])
    add_source_table(lake, "customers", [[10], [11]])
    assert {t["status"] for t in run_workflow(deployment, lake.request("full-1"))["tables"]} == {"migrated"}
    cutover = lake.request("cutover-1", mode="cutover")
    cutover["selection"] = {"tables": ["sales.customers"]}
    (promoted,) = run_workflow(deployment, cutover)["tables"]
    assert promoted["status"] == "promoted", promoted
    commit(lake, "customers", [12])  # the source moves on; the promoted target is its own table now
    lake.source.client("glue").delete_table(DatabaseName="sales", Name="customers")  # decommissioned

    outcomes, summary = _verify(deployment, lake, "verify-1")
    assert outcomes["sales.customers"]["status"] == "verified", outcomes
    assert "target alone" in outcomes["sales.customers"]["validation"]  # its source table is gone
    assert outcomes["sales.orders"]["status"] == "verified"
    assert summary.status == "succeeded"

    # A manifest of the promoted table deleted: damaged, naming it; the other table is still whole.
    s3 = S3FileIO(lake.target.client("s3"))
    manifests = sorted(
        p for p in reachable_files(s3, promoted["target_metadata_location"]) if p.endswith("-m0.avro")
    )
    lake.target.client("s3").delete_object(Bucket=TARGET_BUCKET, Key=manifests[0].split("/", 3)[3])
    outcomes, summary = _verify(deployment, lake, "verify-2")
    damaged = outcomes["sales.customers"]
    assert damaged["status"] == "damaged" and manifests[0] in damaged["error"]["message"], damaged
    assert "missing" in damaged["error"]["message"]
    assert outcomes["sales.orders"]["status"] == "verified"
    assert summary.status == "partial" and summary.metrics()[OUTCOME_METRICS["damaged"]] == 1

    # Repair after promotion with the source decommissioned: it says so and writes nothing.
    before = [bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)]
    result = run_execution(
        deployment.state_machine_arn, lake.request("repair-1", mode="repair"), timeout=300, name="repair-1"
    )
    assert result.status == "SUCCEEDED", result.failure()
    repaired = {
        t["table"]: t for t in read_report(RunSummary.model_validate(result.output).report_uri)["tables"]
    }
    left = repaired["sales.customers"]
    assert left["status"] == "damaged" and left["repaired_files"] == [], left
    assert "decommissioned" in left["error"]["message"] and manifests[0] in left["error"]["message"]
    assert repaired["sales.orders"]["status"] == "verified"
    assert [bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)] == before
