"""The Report step reads the Map's exported results (ResultWriter), however many tables a run has.

The layout comes from a real run of the real ASL in the embedded runtime (module fixture): the
Report payload, the manifest's key and fields. moto 5.2.5 writes the manifest but no result files
(its ResultWriter has a TODO there); their layout is AWS's documented one: a JSON array of child
executions whose Input and Output are JSON strings, FAILED ones with Error and Cause instead of Output.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from icelake.local.deploy import deploy_migration_workflow
from icelake.local.embedded import run_execution, start_embedded_aws
from icelake.workflow import steps
from icelake.workflow.client import read_report
from icelake.workflow.inputs import ReportInput
from tests.lake import Lake, add_source_table, build_lake

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
PAYLOAD_LIMIT = 256 * 1024


@dataclass
class RealRun:
    lake: Lake
    output: dict[str, Any]  # the execution's output
    payload: dict[str, Any]  # what the Report step was given
    manifest: dict[str, Any]
    report: dict[str, Any]
    item: dict[str, Any]  # the one work item


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRun]:
    with start_embedded_aws(REPO):
        deployment = deploy_migration_workflow()
        lake = build_lake(tmp_path_factory.mktemp("report") / "local", orchestrator_resources=False)
        add_source_table(lake, "orders", [[1, 2], [3]])
        result = run_execution(
            deployment.state_machine_arn, lake.request("real-1"), timeout=300, name="real-1"
        )
        assert result.status == "SUCCEEDED", result.failure()
        (scheduled,) = [
            json.loads(e["taskScheduledEventDetails"]["parameters"])
            for e in result.events
            if e["type"] == "TaskScheduled"
            and "icelake-report" in e["taskScheduledEventDetails"]["parameters"]
        ]
        payload = scheduled["Payload"]
        details = payload["map_results"]["ResultWriterDetails"]
        s3 = boto3.client("s3")
        manifest = json.loads(s3.get_object(Bucket=details["Bucket"], Key=details["Key"])["Body"].read())
        worklist = s3.get_object(Bucket=payload["worklist_bucket"], Key=payload["worklist_key"])[
            "Body"
        ].read()
        yield RealRun(
            lake,
            dict(result.output),
            payload,
            manifest,
            read_report(result.output["report_uri"]),
            json.loads(worklist)[0],
        )


def test_a_real_run_exports_results_to_s3_and_returns_a_summary(real: RealRun) -> None:
    # The Map's output is only where its results went; no outcome travels in the state
    assert "outcomes" not in real.payload
    details = real.payload["map_results"]["ResultWriterDetails"]
    map_run = real.payload["map_results"]["MapRunArn"].rsplit(":", 1)[-1]
    assert details == {
        "Bucket": real.lake.env.artifacts_bucket,
        "Key": f"runs/real-1/map-results/{map_run}/manifest.json",
    }
    assert real.manifest["DestinationBucket"] == details["Bucket"]
    assert set(real.manifest["ResultFiles"]) == {"SUCCEEDED", "FAILED", "PENDING"}
    # The execution returns the summary; the report in S3 has the table, as its Validate step ended it
    assert real.output == {
        "run_id": "real-1",
        "status": "succeeded",
        "tables": 1,
        "counts": {"migrated": 1},
        "files_pruned": 0,
        "report_uri": f"s3://{details['Bucket']}/runs/real-1/report.json",
        "report_html_uri": f"s3://{details['Bucket']}/runs/real-1/report.html",
        "objects": "",  # one line on the selection's views and other entries: none here (issue 57)
    }
    (table,) = real.report["tables"]
    assert table["table"] == "sales.orders" and table["status"] == "migrated" and table["files_copied"] == 2


def _entry(
    real: RealRun, n: int, table: str, status: str, output: dict[str, Any] | None, **extra: Any
) -> dict[str, Any]:
    """A child execution as AWS writes it to a result file (Input/Output as JSON strings)."""
    database, name = table.split(".")
    item = {**real.item, "source_database": database, "source_table": name}
    map_run_arn = real.payload["map_results"]["MapRunArn"]
    entry = {
        "ExecutionArn": f"{map_run_arn.replace(':mapRun:', ':execution:')}:{n}",
        "Input": json.dumps({"item": item}),  # what the Map's ItemSelector makes of a work item
        "InputDetails": {"Included": True},
        "Name": str(n),
        "RedriveCount": 0,
        "RedriveStatus": "NOT_REDRIVABLE",
        "StartDate": "2026-11-21T10:00:00.000Z",
        "StateMachineArn": map_run_arn.rsplit(":", 1)[0].replace(":mapRun:", ":stateMachine:"),
        "Status": status,
        "StopDate": "2026-11-21T10:00:01.000Z",
        **extra,
    }
    if output is not None:
        entry["Output"] = json.dumps(output)
        entry["OutputDetails"] = {"Included": True}
    return entry


def _export(real: RealRun, run_id: str, files: dict[str, list[list[dict[str, Any]]]]) -> dict[str, Any]:
    """Result files and a manifest in the real run's layout; returns the Report payload for them."""
    s3, bucket = boto3.client("s3"), real.manifest["DestinationBucket"]
    map_run = f"{run_id}-map-run"
    prefix = (
        real.payload["map_results"]["ResultWriterDetails"]["Key"].replace("real-1", run_id).rsplit("/", 2)[0]
    )
    result_files: dict[str, list[dict[str, Any]]] = {status: [] for status in real.manifest["ResultFiles"]}
    for status, chunks in files.items():
        for i, entries in enumerate(chunks):
            key, body = f"{prefix}/{map_run}/{status}_{i}.json", json.dumps(entries).encode()
            s3.put_object(Bucket=bucket, Key=key, Body=body)
            result_files[status].append({"Key": key, "Size": len(body)})
    manifest_key = f"{prefix}/{map_run}/manifest.json"
    manifest = {**real.manifest, "ResultFiles": result_files}
    s3.put_object(Bucket=bucket, Key=manifest_key, Body=json.dumps(manifest).encode())
    map_run_arn = real.payload["map_results"]["MapRunArn"].rsplit(":", 1)[0] + f":{map_run}"
    return {
        **real.payload,
        "run_id": run_id,
        "map_results": {
            "MapRunArn": map_run_arn,
            "ResultWriterDetails": {"Bucket": bucket, "Key": manifest_key},
        },
    }


def _worklist(real: RealRun, run_id: str, tables: list[str]) -> dict[str, str]:
    items = [
        {**real.item, "source_database": t.split(".")[0], "source_table": t.split(".")[1]} for t in tables
    ]
    key = f"runs/{run_id}/worklist.json"
    boto3.client("s3").put_object(
        Bucket=real.payload["worklist_bucket"], Key=key, Body=json.dumps(items).encode()
    )
    return {"worklist_key": key}


def test_report_of_3000_tables_reads_every_result_file_and_returns_a_small_summary(real: RealRun) -> None:
    # Given 3,000 outcomes exported in three result files (every 10th table rolled back)
    template = real.report["tables"][0]
    tables = [f"db{i % 7}.t{i:05d}" for i in range(3000)]
    outcomes = [
        {
            **template,
            "run_id": "big-1",
            "table": t,
            **({"status": "rolled_back", "error": "boom " * 20} if i % 10 == 0 else {}),
        }
        for i, t in enumerate(tables)
    ]
    assert len(json.dumps(outcomes)) > PAYLOAD_LIMIT  # inline, these would not fit in a state
    entries = [_entry(real, i, o["table"], "SUCCEEDED", o) for i, o in enumerate(outcomes)]
    payload = _export(real, "big-1", {"SUCCEEDED": [entries[:1000], entries[1000:2000], entries[2000:]]})
    payload.update(_worklist(real, "big-1", tables))

    # When the Report step runs on them
    summary = steps.report(ReportInput.model_validate(payload), real.lake.deps).model_dump(mode="json")

    # Then it returns a few hundred bytes, and report.json holds all 3,000 tables
    assert len(json.dumps(summary)) < 8 * 1024
    assert summary["status"] == "partial" and summary["tables"] == 3000
    assert summary["counts"] == {"migrated": 2700, "rolled_back": 300}
    report = read_report(summary["report_uri"])
    assert [t["table"] for t in report["tables"]] == tables
    assert Counter(t["status"] for t in report["tables"]) == {"migrated": 2700, "rolled_back": 300}
    assert report["tables"][1] == outcomes[1]


def test_a_failed_iteration_and_a_missing_table_become_failed_outcomes(real: RealRun) -> None:
    # Given one table that migrated, one whose iteration failed despite its catches, and one of the
    # worklist that no result file and no ledger record covers
    template = {**real.report["tables"][0], "run_id": "fail-1"}
    ok = _entry(real, 0, "sales.ok", "SUCCEEDED", {**template, "table": "sales.ok"})
    failed = _entry(
        real, 1, "sales.bad", "FAILED", None, Error="States.Runtime", Cause="JSONPath $.plan not found"
    )
    payload = _export(real, "fail-1", {"SUCCEEDED": [[ok]], "FAILED": [[failed]]})
    payload.update(_worklist(real, "fail-1", ["sales.ok", "sales.bad", "sales.lost"]))

    summary = steps.report(ReportInput.model_validate(payload), real.lake.deps)

    # Then both are reported failed with why, and the run is partial
    outcomes = {t["table"]: t for t in read_report(summary.report_uri)["tables"]}
    assert summary.status == "partial" and summary.counts == {"failed": 2, "migrated": 1}
    assert outcomes["sales.ok"]["status"] == "migrated"
    assert outcomes["sales.bad"]["status"] == "failed"
    bad = outcomes["sales.bad"]["error"]
    assert (bad["type"], bad["message"], bad["step"]) == (
        "States.Runtime",
        "JSONPath $.plan not found",
        "Map",
    )
    assert outcomes["sales.lost"]["status"] == "failed"
    assert "no outcome recorded" in outcomes["sales.lost"]["error"]["message"]
