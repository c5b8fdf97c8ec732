"""Quarantine: a batch that cannot merge for a reason in its data is moved aside with its reason and
keys, later batches go on, and `icelake ingest requeue` re-lands it when history allows."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from icelake.aws.fileio import LocalFileIO
from icelake.cli import app
from icelake.ingest.landing import FetchedBatch, complete_or_report, land_batch, list_pending
from icelake.ingest.models import PendingBatch, Scd2Spec
from icelake.ingest.scd2 import merge_pending

pytestmark = pytest.mark.spark

T0 = datetime(2026, 4, 1, tzinfo=UTC)
_n = itertools.count()


def land(root: Path, hours: int, records: list[dict[str, Any]]) -> PendingBatch:
    return land_batch(
        LocalFileIO(),
        str(root),
        FetchedBatch(
            source="crm",
            endpoint="people",
            pages=[json.dumps({"data": records}).encode()],
            fetched_at=T0 + timedelta(hours=hours),
        ),
    )


def current(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return [
        tuple(r) for r in spark.sql(f"SELECT id, age FROM {table} WHERE _is_current ORDER BY id").collect()
    ]


@pytest.mark.parametrize(
    ("poison", "error", "fragment"),
    [
        ([{"id": 1, "age": 31.5}, {"id": 2, "age": 40}], "TypeConflictError", "'age' is long"),
        ([{"id": None, "age": 1}, {"id": 2, "age": 40}], "InvalidBatchError", "a NULL key column"),
        ([{"age": 1}, {"id": 2, "age": 40}], "InvalidBatchError", "no key column"),
        (None, "InvalidBatchError", "not valid JSON"),
    ],
)
def test_a_poison_batch_is_quarantined_with_its_reason_and_keys_and_later_batches_go_on(
    spark: Any, ingest_catalog: str, tmp_path: Path, poison: Any, error: str, fragment: str
) -> None:
    spec = Scd2Spec(
        table=f"{ingest_catalog}.quarantine.people_{next(_n)}", keys=("id",), types={"age": "long"}
    )
    io = LocalFileIO()
    first = land(tmp_path, 1, [{"id": 1, "age": 30}, {"id": 2, "age": 40}])
    bad = land(tmp_path, 2, poison or [{"id": 1, "age": 31}, {"id": 2, "age": 41}])
    if poison is None:  # a page the API truncated mid-body
        (Path(bad.uri) / bad.manifest.pages[0]).write_bytes(b'{"data": [{"id": 1, "age": 3')
    later = land(tmp_path, 3, [{"id": 2, "age": 42}])
    results = merge_pending(
        spark, spec, io, list_pending(io, str(tmp_path), "crm", "people"), quarantine=True
    )
    assert [r.quarantined_to is not None for r in results] == [False, True, False]
    assert fragment in (results[1].reason or "")
    assert current(spark, spec.table) == [(1, 30), (2, 42)]
    where = Path((results[1].quarantined_to or "").removeprefix("file:"))
    assert where == tmp_path / "quarantine" / "crm" / "people" / bad.manifest.run_id
    reason = json.loads((where / "reason.json").read_text())
    assert reason["error"] == error and reason["batch_id"] == bad.manifest.batch_id
    assert fragment in reason["reason"] and reason["key_columns"] == ["id"]
    if poison is not None:
        assert {json.dumps(k) for k in reason["keys"]} >= {json.dumps({"id": 2})}
    assert (where / ".pending").exists() and (where / bad.manifest.pages[0]).exists()
    assert not (Path(bad.uri) / ".pending").exists()
    # MarkComplete completes the merged ones and reports the quarantined one (the alarm's cue)
    done, quarantined = complete_or_report([first.uri, bad.uri, later.uri])
    assert done == [first.uri, later.uri] and quarantined == [str(where)]
    assert list_pending(io, str(tmp_path), "crm", "people") == []
    # A later batch was merged: requeueing would rewrite history, so it is refused with the reason
    result = CliRunner().invoke(
        app, ["ingest", "requeue", "crm", bad.manifest.run_id, "--root", str(tmp_path)]
    )
    assert result.exit_code == 1 and "never rewritten" in result.stderr
    assert (where / "reason.json").exists()


def test_a_fixed_batch_is_requeued_and_merged_in_time_order(
    spark: Any, ingest_catalog: str, tmp_path: Path
) -> None:
    spec = Scd2Spec(
        table=f"{ingest_catalog}.quarantine.people_{next(_n)}", keys=("id",), types={"age": "long"}
    )
    io = LocalFileIO()
    first = land(tmp_path, 1, [{"id": 1, "age": 30}])
    merge_pending(spark, spec, io, [first], quarantine=True)
    complete_or_report([first.uri])
    bad = land(tmp_path, 2, [{"id": 1, "age": "thirty-one"}])
    [quarantined] = merge_pending(spark, spec, io, [bad], quarantine=True)
    where = Path((quarantined.quarantined_to or "").removeprefix("file:"))
    # The fix: the page corrected in quarantine (or the API fixed and the batch re-fetched)
    (where / bad.manifest.pages[0]).write_text(json.dumps({"data": [{"id": 1, "age": 31}]}))
    newer = land(tmp_path, 3, [{"id": 1, "age": 32}])  # landed, not merged yet
    result = CliRunner().invoke(
        app, ["ingest", "requeue", "crm", bad.manifest.run_id, "--root", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["batch_id"] == bad.manifest.batch_id
    assert not where.exists() or not any(where.iterdir())
    pending = list_pending(io, str(tmp_path), "crm", "people")
    assert [b.manifest.run_id for b in pending] == [bad.manifest.run_id, newer.manifest.run_id]
    assert pending[0].manifest.requeued_at is not None
    results = merge_pending(spark, spec, io, pending, quarantine=True)
    assert [r.closed for r in results] == [1, 1]
    rows = spark.sql(f"SELECT age, _is_current FROM {spec.table} ORDER BY _valid_from").collect()
    assert [tuple(r) for r in rows] == [(30, False), (31, False), (32, True)]
    # A requeued batch that is no longer newer than the table (merged meanwhile) goes back with the reason
    late = land(tmp_path, 0, [{"id": 1, "age": 1}])
    late_requeued = late.model_copy(
        update={"manifest": late.manifest.model_copy(update={"requeued_at": datetime.now(UTC)})}
    )
    [back] = merge_pending(spark, spec, io, [late_requeued], quarantine=True)
    assert back.quarantined_to is not None and "not newer" in (back.reason or "")
