"""The estimate model's parts: the requests a copy sends (from the copy module), the Map's lanes,
the transitions a table's iteration costs (walked on the ASL), and costs priced as published."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from icelake.assess.estimate.cost import TABLE_TRANSITIONS, Work, cost_usd
from icelake.assess.estimate.model import PlannedWork, ThroughputModel, estimate_table, lay_out
from icelake.assess.estimate.prices import load_prices
from icelake.aws.request_count import kind_of
from icelake.migrate.copy.objects import CopySettings, copy_requests

REPO = Path(__file__).resolve().parents[2]
GiB = 1024**3


def _happy_path(states: dict[str, dict[str, object]], start: str, engine: str) -> list[str]:
    """The states one table's Map iteration enters when every step succeeds with `engine`."""
    path, name = [], start
    while True:
        path.append(name)
        state = states[name]
        if state["Type"] == "Choice":
            choices = state["Choices"]
            assert isinstance(choices, list)
            taken = [c["Next"] for c in choices if c.get("StringEquals") == engine]
            name = taken[0] if taken else str(state["Default"])
        elif "Next" in state:
            name = str(state["Next"])
        else:
            return path


def test_a_table_iteration_costs_the_transitions_the_asl_makes() -> None:
    definition = json.loads((REPO / "statemachines/migrate_tables.asl.json").read_text())
    inner = definition["States"]["MigrateTables"]["ItemProcessor"]
    for engine in ("lambda", "glue"):
        assert len(_happy_path(inner["States"], inner["StartAt"], engine)) == TABLE_TRANSITIONS


def test_copy_requests_follow_copy_file() -> None:
    settings = CopySettings()
    assert copy_requests(10) == {"head": 1, "copy": 1}  # planned from a listing: HEAD for the checksum
    assert copy_requests(10, checksum_known=True) == {"head": 0, "copy": 1}
    md5 = "9e107d9d372bb6826bd81d3542a419d6"  # a single-part upload's ETag: the copy's ETag verifies it
    assert copy_requests(10, etag=md5) == {"head": 0, "copy": 1}
    assert copy_requests(10, etag=md5, target_kms=True) == {"head": 1, "copy": 1}  # a KMS copy's is no MD5
    assert copy_requests(10, etag="9e107d9d372bb6826bd81d3542a419d6-3") == {"head": 1, "copy": 1}
    # 12 GiB in 512 MiB parts: create + complete, 24 UploadPartCopy, a HEAD before and after
    assert copy_requests(12 * GiB, settings) == {"head": 2, "put": 2, "copy": 24}


def test_requests_are_counted_in_the_kinds_s3_bills() -> None:
    assert [kind_of(op) for op in ("CopyObject", "UploadPartCopy", "ListObjectsV2", "HeadObject")] == [
        "copy",
        "copy",
        "list",
        "head",
    ]
    assert [kind_of(op) for op in ("GetObject", "PutObject", "DeleteObjects", "GetObjectTagging")] == [
        "get",
        "put",
        "delete",
        "get",  # billed with GET: "all other requests"
    ]


def test_tables_are_laid_out_longest_first_on_the_free_lane() -> None:
    lanes = lay_out({"a": 10.0, "b": 6.0, "c": 5.0, "d": 4.0}, 2)
    placed = {lane.table: (lane.lane, lane.start_s, lane.end_s) for lane in lanes}
    assert placed == {"a": (0, 0.0, 10.0), "b": (1, 0.0, 6.0), "c": (1, 6.0, 11.0), "d": (0, 10.0, 14.0)}
    assert max(lane.end_s for lane in lay_out({"a": 3.0, "b": 3.0}, 1)) == 6.0


def test_an_estimate_is_priced_as_a_run_is() -> None:
    prices = load_prices("us-east-1")
    work = PlannedWork(
        plan_requests={"list": 10, "get": 40, "head": 5},
        run_requests={"list": 11, "get": 80, "head": 1000, "copy": 1000, "put": 30},
        validate_requests={"list": 2, "get": 30},
        bytes_to_copy=100 * GiB,
        files_to_copy=1000,
        engine="lambda",
    )
    model = ThroughputModel()
    same = estimate_table(work, model, prices, cross_region=False, stored_bytes=100 * GiB, sync_days=30)
    moved = estimate_table(work, model, prices, cross_region=True, stored_bytes=100 * GiB, sync_days=30)
    assert same.requests == {"copy": 1000, "list": 23, "head": 1005, "get": 150, "put": 30, "delete": 0}
    assert same.cost_usd["transfer"] == 0 and moved.cost_usd["transfer"] == pytest.approx(2.0)  # $0.02/GB
    assert same.cost_usd["storage_month"] == pytest.approx(2.3)  # 100 GB for a month at $0.023
    # the lines are those of cost_usd for the same work, as a run's own account is priced
    lambda_seconds = dict(same.duration_by_phase)
    again = cost_usd(
        prices, Work(requests=same.requests, lambda_seconds=lambda_seconds, stored_bytes=100 * GiB)
    )
    assert again == same.cost_usd
    # 1,000 copies of 100 MiB each at 100 MiB/s, 16 at a time, are at least 62.5 s of copying
    assert same.duration_by_phase["copy"] > 100 * 1024 / 100 / 16
    glue = estimate_table(
        PlannedWork(**{**work.__dict__, "engine": "glue"}),
        model,
        prices,
        cross_region=False,
        stored_bytes=0,
        sync_days=30,
    )
    assert glue.cost_usd["glue"] > 0 and glue.duration_by_phase["copy"] >= model.glue_startup_s


def test_an_estimate_carries_its_range_from_the_latency_spread_and_the_start_ups() -> None:
    prices = load_prices("us-east-1")
    work = PlannedWork(
        plan_requests={"list": 10, "get": 40},
        run_requests={"get": 80, "head": 1000, "copy": 1000, "put": 30},
        validate_requests={"list": 2, "get": 30},
        bytes_to_copy=0,
        files_to_copy=1000,
        engine="glue",
    )

    def range_of(model: ThroughputModel) -> tuple[float, float, float]:
        e = estimate_table(work, model, prices, cross_region=False, stored_bytes=0, sync_days=30)
        assert e.duration_range_s is not None
        return e.duration_range_s[0], e.duration_s, e.duration_range_s[1]

    # The default model: a Glue start between 30 and 120 s, latencies 0.7 to 2 times the median's
    low, mid, high = range_of(ThroughputModel())
    assert low < mid < high
    assert high - mid > 60  # the Glue start's high end alone is 60 s over its point figure
    # No spread and no start-up range: the range is the point
    exact = ThroughputModel(latency_spread=(1, 1), lambda_start_range_s=(1, 1), glue_startup_range_s=(60, 60))
    assert range_of(exact) == (mid, mid, mid)
    # A model whose own start lies outside its range: the range widens to hold it
    late = ThroughputModel(glue_startup_s=500, glue_startup_range_s=(30, 120))
    assert range_of(late)[2] >= range_of(late)[1]


@pytest.mark.parametrize("module", ["icelake.cli", "icelake.assess.cli", "icelake.workflow.steps"])
def test_each_entry_point_imports_first_in_a_fresh_interpreter(module: str) -> None:
    # Any of them may be the first imported (the workflow's Assess step imports icelake.assess.gather.estate)
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
