"""The engine chosen by the estimate (icelake/assess/estimate/engine_choice.py), through the workflow's own
steps on the embedded AWS: a table under the Glue thresholds whose Lambda copy the estimate puts past
60 % of the Lambda's timeout is sent to Glue, saying why (3 files under a very slow model; 19,999,
one under the file threshold, under a slow cross-region pair's); a threshold the request sets wins over the
estimate; an incremental sync is judged by its increment, not the whole table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.typedef import Record

from icelake.assess.estimate.engine_choice import CopyWork, Thresholds, choose_engine
from icelake.aws.ledger import Ledger
from icelake.request.models import Options
from icelake.throughput import ThroughputModel
from icelake.workflow import steps
from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput
from icelake.workflow.models import PlanResult
from tests.lake import Lake, add_source_table, commit

pytestmark = pytest.mark.slow

# A slow pair of accounts: each CopyObject answers in 200 s, one at a time. Three data files copy in
# over 600 s, past 60 % of the Copy Lambda's 900 s (540 s); one file in about 200 s.
SLOW = ThroughputModel(
    name="slow-copies",
    latency_s={**ThroughputModel().latency_s, "copy": 200.0},
    lambda_parallel=1,
)


def _options(**more: Any) -> dict[str, Any]:
    return {"validation": "metadata", "throughput": SLOW.model_dump(), **more}


def _planned(lake: Lake, request: dict[str, Any]) -> tuple[dict[str, Any], PlanResult]:
    inv = steps.inventory(InventoryInput.model_validate(request), lake.deps)
    body = boto3.client("s3").get_object(Bucket=inv.worklist_bucket, Key=inv.worklist_key)["Body"].read()
    (item,) = json.loads(body)
    return item, steps.plan(PlanInput.model_validate({"item": item}), lake.deps)


def _finish(lake: Lake, planned: PlanResult) -> dict[str, Any]:
    state = PlannedInput.model_validate({"plan": planned.model_dump(mode="json")})
    steps.copy(state, lake.deps)
    steps.register(state, lake.deps)
    return steps.validate(state, lake.deps).model_dump(mode="json")


def test_a_table_under_the_thresholds_that_the_estimate_puts_past_the_lambda_goes_to_glue(lake: Lake) -> None:
    # Given a table of three data files (20,000 is the file threshold, 100 GiB the byte one), and a
    # request whose throughput model puts its Lambda copy at over 600 s
    add_source_table(lake, "orders", [[1], [2], [3]])

    # When Plan runs (the thresholds left to their defaults)
    _, planned = _planned(lake, lake.request("run-1", options=_options()))

    # Then the table goes to Glue, and the plan says it was the estimate that chose
    assert (planned.planned_in, planned.files_to_copy) == ("lambda", 3)
    assert planned.engine == "glue", planned.engine_rule
    rule = planned.engine_rule or ""
    assert rule.startswith("estimate: the Lambda copy is estimated at "), rule
    assert "'slow-copies'" in rule and "over 60% of the Copy Lambda's 900 s timeout (540 s)" in rule
    tables = Ledger(boto3.client("dynamodb"), lake.env.ledger_table).run_tables("run-1")
    assert [t["engine"] for t in tables if t["sk"] == "TABLE#sales.orders"] == ["glue"]


def test_a_threshold_set_in_the_request_wins_over_the_estimate_and_the_outcome_says_so(lake: Lake) -> None:
    # Given the same table and model, and a request that sets the file threshold to its 3 files
    add_source_table(lake, "orders", [[1], [2], [3]])
    request = lake.request("run-1", options=_options(glue_threshold_files=3))

    # When the table runs through Plan (after Inventory's worklist, JSON), Copy, Register, Validate
    _, planned = _planned(lake, request)
    outcome = _finish(lake, planned)

    # Then the operator's threshold keeps it in the Lambda, and the outcome says which rule chose
    assert planned.engine == "lambda"
    assert outcome["status"] == "migrated" and outcome["engines"]["copy"] == "lambda"
    assert outcome["engine_rule"].startswith("thresholds set in the request: under both (3 files"), outcome
    assert "estimate rule is off" in outcome["engine_rule"]


def test_an_incremental_sync_is_judged_by_its_increment(lake: Lake) -> None:
    # Given a table of three files migrated in full (under the default model: in the Lambda), and
    # one more commit of one file at the source
    add_source_table(lake, "orders", [[1], [2], [3]])
    _, first = _planned(lake, lake.request("run-1", options={"validation": "metadata"}))
    assert first.engine == "lambda" and _finish(lake, first)["status"] == "migrated"
    commit(lake, "orders", [4])

    # When an incremental sync is planned under the slow model (the whole table, four files, would
    # be estimated at over 800 s)
    _, planned = _planned(lake, lake.request("run-2", mode="incremental", options=_options()))

    # Then Plan weighs the one file it copies, and the Lambda copies it
    assert planned.files_to_copy == 1
    assert planned.engine == "lambda", planned.engine_rule
    assert (planned.engine_rule or "").startswith("thresholds and estimate: under both thresholds (1 files")
    assert _finish(lake, planned)["engine_rule"] == planned.engine_rule


# A slow cross-region pair: each CopyObject answers in half a second, 16 at once in the Copy Lambda.
# 19,999 files then copy in about 625 s, past 60 % of its 900 s; under the default model (60 ms) in
# about 75 s.
CROSS_REGION = ThroughputModel(
    name="slow-pair", latency_s={**ThroughputModel().latency_s, "copy": 0.5}, lambda_parallel=16
)
JUST_UNDER = 19_999  # files: one under the default Glue threshold of 20,000


def test_a_table_just_under_the_file_threshold_goes_to_glue_when_its_lambda_copy_would_not_fit(
    lake: Lake, tmp_path: Path
) -> None:
    # Given a table of 19,999 tiny data files (one fast append, the files touched at 64 bytes)
    # published to the source
    metadata = _many_file_table(tmp_path / "warehouse", JUST_UNDER, 64)
    lake.publish("sales", "big", metadata, direct=True)  # seeded into the store
    select = {"selection": {"tables": ["sales.big"]}}

    # When Plan runs under a slow cross-region pair's model (the thresholds left to their defaults)
    options = {"validation": "metadata", "throughput": CROSS_REGION.model_dump()}
    _, slow = _planned(lake, lake.request("run-2", **select, options=options))

    # Then the plan copies all 19,999 files, under the file threshold, and the estimate sends the
    # table to Glue, saying why with its figures
    assert (slow.planned_in, slow.files_to_copy) == ("lambda", JUST_UNDER)
    assert slow.engine == "glue", slow.engine_rule
    rule = slow.engine_rule or ""
    assert rule.startswith("estimate: the Lambda copy is estimated at "), rule
    assert "'slow-pair'" in rule and "over 60% of the Copy Lambda's 900 s timeout (540 s)" in rule
    assert f"though under the thresholds ({JUST_UNDER:,} files" in rule
    estimated = rule.removeprefix("estimate: the Lambda copy is estimated at ").split(" s ")[0]
    assert 540 < float(estimated.replace(",", "")) < 900
    # ... where the same plan's copy under the default model (60 ms a copy) stays in the Lambda: the
    # model, not the size, chose (the same choice, on the plan's own figures)
    copy_work = CopyWork(slow.files_to_copy, slow.bytes_to_copy, slow.expected_requests["copy"])
    default = choose_engine(copy_work, Thresholds.of(Options()), ThroughputModel())
    assert default.engine == "lambda", default.rule
    tables = Ledger(boto3.client("dynamodb"), lake.env.ledger_table).run_tables("run-2")
    assert [t["engine"] for t in tables if t["sk"] == "TABLE#sales.big"] == ["glue"]


def _many_file_table(root: Path, files: int, size: int) -> str:
    """A pyiceberg table of `files` data files of `size` bytes in one fast append; returns its
    metadata location. Only the entries are real: each file is touched (sparse) so that the copy
    finds it, and Plan reads nothing but the manifests. (pyiceberg writes it in ~4 s of CPU where
    the Java API in its own JVM took ~46 s; Plan's count and estimate read the same entries.)"""
    root.mkdir(parents=True)
    catalog = SqlCatalog("big", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.big", schema=pa.schema([("id", pa.int64())]))
    data = Path(table.location().removeprefix("file://")) / "data"
    data.mkdir(parents=True)
    entries = []
    for i in range(files):
        path = data / f"{i:05d}.parquet"
        with path.open("wb") as f:
            f.truncate(size)
        entries.append(
            DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=f"file://{path}",
                file_format=FileFormat.PARQUET,
                partition=Record(),
                record_count=1,
                file_size_in_bytes=size,
            )
        )
    with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
        for entry in entries:
            append.append_data_file(entry)
    current = catalog.load_table("sales.big")
    snapshot = current.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary["total-data-files"] == str(files)
    return current.metadata_location
