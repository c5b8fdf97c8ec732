"""Commits made to the source after its cutover (stranded), and carry-over, through the real state
machine on the embedded AWS.

A late writer's append to the old table after promotion ends the next run `stranded` (not
succeeded), named in report.json, report.html and its own EventBridge event; `carry_over` brings
it onto the target on top of what the target's writers committed since, once; an overwrite or a
delete is refused by name and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from pyiceberg.catalog.glue import GlueCatalog
from pyiceberg.table import StaticTable
from typer.testing import CliRunner

from icelake.cli import app
from icelake.constants import EVENT_SOURCE
from icelake.local.deploy import LocalDeployment
from icelake.workflow.steps.reporting import STRANDED_DETAIL_TYPE
from tests.e2e.conftest import run_workflow
from tests.lake import (
    SOURCE_BUCKET,
    TARGET_BUCKET,
    Lake,
    add_source_table,
    bucket_state,
    catalog_state,
    commit,
    delete_ids,
    s3_props,
)

pytestmark = pytest.mark.slow


def _ids(metadata: str) -> list[int]:
    table = StaticTable.from_metadata(metadata, properties=s3_props())
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def _current_snapshot(metadata: str) -> int:
    snapshot = StaticTable.from_metadata(metadata, properties=s3_props()).metadata.current_snapshot()
    assert snapshot is not None
    return snapshot.snapshot_id


def _promoted(lake: Lake, deployment: LocalDeployment, ids: list[list[int]]) -> None:
    add_source_table(lake, "orders", ids)
    assert run_workflow(deployment, lake.request("full-1"))["tables"][0]["status"] == "migrated"
    cut = run_workflow(deployment, lake.request("cutover-1", mode="cutover"))
    assert cut["tables"][0]["status"] == "promoted", cut


def _events_queue() -> str:
    """An SQS queue that an EventBridge rule on icelake's events (the default bus) feeds."""
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="icelake-stranded-events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events = boto3.client("events")
    events.put_rule(Name="icelake-stranded", EventPattern=json.dumps({"source": [EVENT_SOURCE]}))
    events.put_targets(Rule="icelake-stranded", Targets=[{"Id": "queue", "Arn": arn}])
    return str(url)


def _events(queue: str) -> list[dict[str, Any]]:
    sqs = boto3.client("sqs")
    return [
        json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    ]


def _read_s3(uri: str) -> str:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return str(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read().decode())


def _target_writer(lake: Lake) -> GlueCatalog:
    """A writer that moved to the target after promotion, as the runbook tells them to."""
    return GlueCatalog("target", client=lake.target.client("glue"), **s3_props())


def test_a_late_append_after_cutover_is_stranded_and_named_everywhere(
    world: tuple[Lake, LocalDeployment],
) -> None:
    lake, deployment = world
    _promoted(lake, deployment, [[1], [2]])
    queue = _events_queue()
    late = commit(lake, "orders", [3])  # a forgotten writer, after promotion
    late_id = _current_snapshot(late)
    target_before, target_catalog = bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)

    report = run_workflow(deployment, lake.request("sync-after", mode="incremental"))

    (outcome,) = report["tables"]
    assert outcome["status"] == "stranded", outcome
    assert report["status"] != "succeeded"
    (stranded,) = outcome["stranded"]
    assert stranded["snapshot_id"] == late_id and stranded["operation"] == "append"
    assert (stranded["added_files"], stranded["added_records"], stranded["removed_records"]) == (1, 1, 0)
    assert str(late_id) in outcome["error"]["message"] and "carry-over" in outcome["error"]["hint"]
    # nothing was written to the target, and the source was only read
    assert bucket_state(lake.target, TARGET_BUCKET) == target_before
    assert catalog_state(lake.target) == target_catalog
    # report.html names it; the run's event says partial, and the stranded event names the commit
    page = _read_s3(report["report_html_uri"])
    assert "Stranded commits (1)" in page and str(late_id) in page
    bodies = [b for b in _events(queue) if b["detail"].get("run_id") == "sync-after"]
    kinds = {b["detail-type"]: b["detail"] for b in bodies}
    assert kinds["Migration run failed"]["errors"][0]["type"] == "stranded"
    (table,) = kinds[STRANDED_DETAIL_TYPE]["tables"]
    assert table["table"] == "sales.orders" and table["commits"][0]["snapshot_id"] == late_id

    # a cutover run says the same: the table stays the target's, the commit stays named
    again = run_workflow(deployment, lake.request("cutover-again", mode="cutover"))["tables"][0]
    assert again["status"] == "stranded" and again["stranded"][0]["snapshot_id"] == late_id


def test_carry_over_brings_a_late_append_and_keeps_the_targets_own_commits(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    lake, deployment = world
    _promoted(lake, deployment, [[1], [2]])
    late_id = _current_snapshot(commit(lake, "orders", [3]))
    writers = _target_writer(lake).load_table("sales.orders")  # the target's own writers, since
    writers.append(
        pa.table({"id": pa.array([100], pa.int64()), "v": ["theirs"]}, schema=writers.schema().as_arrow())
    )
    theirs = writers.current_snapshot()
    assert theirs is not None
    source_before, source_catalog = bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)

    report = run_workflow(deployment, lake.request("carry-1", mode="carry_over"))

    (outcome,) = report["tables"]
    assert outcome["status"] == "promoted", outcome
    assert report["status"] == "succeeded"
    assert outcome["carried"] == [late_id] and outcome["carried_rows"] == 1
    assert outcome["files_copied"] == 1
    metadata = catalog_state(lake.target)["sales.orders"]["metadata_location"]
    assert metadata == outcome["target_metadata_location"]
    assert _ids(metadata) == [1, 2, 3, 100]
    carried = StaticTable.from_metadata(metadata, properties=s3_props()).metadata
    current = carried.current_snapshot()
    assert current is not None and current.parent_snapshot_id == theirs.snapshot_id  # on top of theirs
    assert current.summary is not None and current.summary["icelake.carried-from"] == str(late_id)
    assert current.summary.operation.value == "append"
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before  # the source only read
    assert catalog_state(lake.source) == source_catalog
    # the target's writers go on; Spark-free check with pyiceberg that the table is theirs to write
    writers = _target_writer(lake).load_table("sales.orders")
    writers.append(
        pa.table({"id": pa.array([101], pa.int64()), "v": ["theirs"]}, schema=writers.schema().as_arrow())
    )

    # a second carry-over, as a person starts it, carries nothing and writes nothing
    target_before, target_catalog = bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)
    request = tmp_path / "carry.json"
    request.write_text(json.dumps(lake.request("carry-2")))
    shown = CliRunner().invoke(app, ["migrate", "carry-over", "--request", str(request), "--json"])
    assert shown.exit_code == 0, shown.stderr
    (second,) = json.loads(shown.stdout)["tables"]
    assert second["status"] == "promoted" and second["carried"] == [], second
    assert "nothing to carry" in second["error"]["message"] or "carried over" in second["error"]["message"]
    assert bucket_state(lake.target, TARGET_BUCKET) == target_before
    assert catalog_state(lake.target) == target_catalog
    # and the next run finds nothing stranded
    later = run_workflow(deployment, lake.request("sync-after", mode="incremental"))
    assert later["tables"][0]["status"] == "promoted" and later["status"] == "succeeded", later
    assert _ids(catalog_state(lake.target)["sales.orders"]["metadata_location"]) == [1, 2, 3, 100, 101]


def test_carry_over_refuses_a_late_delete_naming_it(world: tuple[Lake, LocalDeployment]) -> None:
    lake, deployment = world
    _promoted(lake, deployment, [[1, 2], [3]])
    appended = _current_snapshot(commit(lake, "orders", [4]))
    deleted = _current_snapshot(delete_ids(lake, "orders", [1]))  # copy-on-write: an overwrite
    target_before, target_catalog = bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)

    report = run_workflow(deployment, lake.request("carry-1", mode="carry_over"))

    (outcome,) = report["tables"]
    assert outcome["status"] == "stranded" and report["status"] != "succeeded", outcome
    error = outcome["error"]
    assert error["type"] == "CarryOverRefused", error
    assert str(deleted) in error["message"] and "not an append" in error["message"]
    assert "by hand" in error["hint"]
    assert [c["snapshot_id"] for c in outcome["stranded"]] == [appended, deleted]
    assert bucket_state(lake.target, TARGET_BUCKET) == target_before  # nothing carried, not even the append
    assert catalog_state(lake.target) == target_catalog
