"""Declared and inferred column types in the merge: never truncated, refused with a reason, promoted
on request; empty batches are recorded."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from icelake.aws.fileio import LocalFileIO
from icelake.errors import (
    EmptyFullLoadError,
    OutOfOrderBatchError,
    SchemaMismatchError,
    TypeConflictError,
)
from icelake.ingest.landing import FetchedBatch, land_batch
from icelake.ingest.models import PendingBatch, Scd2Spec
from icelake.ingest.scd2 import merge_pending

pytestmark = pytest.mark.spark

T0 = datetime(2026, 3, 1, tzinfo=UTC)
_n = itertools.count()


def land(root: Path, hours: int, records: list[dict[str, Any]], *, full_load: bool = False) -> PendingBatch:
    return land_batch(
        LocalFileIO(),
        str(root),
        FetchedBatch(
            source="api",
            endpoint="dim",
            pages=[json.dumps({"data": records}).encode()],
            fetched_at=T0 + timedelta(hours=hours),
            full_load=full_load,
        ),
    )


@pytest.fixture
def table(ingest_catalog: str) -> str:
    return f"{ingest_catalog}.types.dim_{next(_n)}"


def rows(spark: Any, table: str, *cols: str) -> list[tuple[Any, ...]]:
    query = f"SELECT {', '.join(cols)}, _is_current FROM {table} ORDER BY id, _valid_from"
    return [tuple(r) for r in spark.sql(query).collect()]


def test_a_fraction_after_whole_numbers_is_refused_not_truncated(
    spark: Any, table: str, tmp_path: Path
) -> None:
    """The change the old code lost: score 29 (inferred BIGINT), then 29.5 was stored as 29, equal
    to the current value, so no version was made. Now the batch is refused naming column and value."""
    spec = Scd2Spec(table=table, keys=("id",))
    io = LocalFileIO()
    merge_pending(spark, spec, io, [land(tmp_path, 1, [{"id": 1, "score": 29}, {"id": 2, "score": 45}])])
    with pytest.raises(SchemaMismatchError, match=r"'score' is bigint .* e\.g\. \[29\.5\]"):
        merge_pending(
            spark, spec, io, [land(tmp_path, 2, [{"id": 1, "score": 29.5}, {"id": 2, "score": 45}])]
        )
    with pytest.raises(SchemaMismatchError, match=r"'score' is bigint"):
        merge_pending(spark, spec, io, [land(tmp_path, 3, [{"id": 2, "score": 1e30}])])
    assert rows(spark, table, "id", "score") == [(1, 29, True), (2, 45, True)]
    # Whole numbers written with a fraction part fit exactly and are merged
    merge_pending(spark, spec, io, [land(tmp_path, 4, [{"id": 1, "score": 30.0}])])
    assert rows(spark, table, "id", "score") == [(1, 29, False), (1, 30, True), (2, 45, True)]


def test_declared_types_are_exact_and_conflicts_name_column_value_and_type(
    spark: Any, table: str, tmp_path: Path
) -> None:
    spec = Scd2Spec(
        table=table,
        keys=("id",),
        types={"id": "long", "n": "int", "price": "decimal(7,2)", "at": "timestamptz", "day": "date"},
    )
    io = LocalFileIO()
    first = {"id": 1, "n": 29, "price": 29.5, "at": "2026-03-01T10:00:00.000001+02:00", "day": "2026-03-01"}
    merge_pending(spark, spec, io, [land(tmp_path, 1, [first, {"id": 2, "n": 1, "note": "x"}])])
    schema = {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}
    assert schema["n"] == "int" and schema["price"] == "decimal(7,2)" and schema["at"] == "timestamp"
    assert schema["note"] == "string"  # undeclared: inferred
    got = spark.sql(f"SELECT price, unix_micros(at) AS at, day FROM {table} WHERE id = 1").collect()[0]
    assert (
        got["price"] == Decimal("29.50") and got["at"] == 1772352000000001 and str(got["day"]) == "2026-03-01"
    )
    for bad, fragment in [
        ({"id": 1, "n": 29.5}, r"'n' is int, but the batch has the value 29\.5 \(it has a fraction\)"),
        (
            {"id": 1, "n": 3_000_000_000},
            r"'n' is int, but the batch has the value 3000000000 \(it is outside",
        ),
        ({"id": 1, "n": "lots"}, r"'n' is int, but the batch has the value \"lots\" \(it is not a number\)"),
        ({"id": 1, "price": 1.005}, r"'price' is decimal\(7,2\).* 1\.005 \(it has more than 2 decimal"),
    ]:
        with pytest.raises(TypeConflictError, match=fragment):
            merge_pending(spark, spec, io, [land(tmp_path, 2, [bad])])
    # 29.50 for a price of 29.5 is the same value: no new version
    [same] = merge_pending(spark, spec, io, [land(tmp_path, 3, [{**first, "price": "29.50"}])])
    assert (same.inserted, same.closed) == (0, 0)


def test_promotion_is_schema_evolution_on_request(spark: Any, table: str, tmp_path: Path) -> None:
    io = LocalFileIO()
    narrow = Scd2Spec(table=table, keys=("id",), types={"n": "int", "p": "decimal(5,2)"})
    merge_pending(spark, narrow, io, [land(tmp_path, 1, [{"id": 1, "n": 1, "p": 1.5}])])
    wide = narrow.model_copy(update={"types": {"n": "long", "p": "decimal(9,2)"}})
    with pytest.raises(SchemaMismatchError, match="set promote_types: true"):
        merge_pending(spark, wide, io, [land(tmp_path, 2, [{"id": 1, "n": 5_000_000_000, "p": 1.5}])])
    promoting = wide.model_copy(update={"promote_types": True})
    [result] = merge_pending(
        spark, promoting, io, [land(tmp_path, 3, [{"id": 1, "n": 5_000_000_000, "p": 1234567.5}])]
    )
    assert sorted(result.promoted_columns) == ["n", "p"] and result.closed == 1
    schema = {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}
    assert schema["n"] == "bigint" and schema["p"] == "decimal(9,2)"
    assert rows(spark, table, "id", "n") == [(1, 1, False), (1, 5_000_000_000, True)]
    # Iceberg cannot turn a long into a string: refused, whatever the option
    with pytest.raises(SchemaMismatchError, match="Iceberg cannot change it"):
        merge_pending(
            spark,
            promoting.model_copy(update={"types": {"n": "string"}}),
            io,
            [land(tmp_path, 4, [{"id": 1, "n": 1}])],
        )
    # Undeclared: an inferred BIGINT for an INT column widens only when a value needs it
    inferred = Scd2Spec(table=table, keys=("id",), promote_types=True)
    [fits] = merge_pending(spark, inferred, io, [land(tmp_path, 5, [{"id": 2, "n": 7}])])
    assert fits.promoted_columns == ()


def test_empty_batches_record_their_time_and_an_empty_full_load_needs_consent(
    spark: Any, table: str, tmp_path: Path
) -> None:
    spec = Scd2Spec(table=table, keys=("id",))
    io = LocalFileIO()
    # An empty FIRST batch (no table yet) is recorded: an older batch landed later is refused
    empty_first = land(tmp_path, 5, [])
    [first] = merge_pending(spark, spec, io, [empty_first])
    assert first.empty and not first.skipped
    with pytest.raises(OutOfOrderBatchError, match="not newer"):
        merge_pending(spark, spec, io, [land(tmp_path, 4, [{"id": 1, "v": 1}])])
    [again] = merge_pending(spark, spec, io, [empty_first])  # a re-run after a crash before .complete
    assert again.skipped
    merge_pending(spark, spec, io, [land(tmp_path, 6, [{"id": 1, "v": 1}, {"id": 2, "v": 2}])])
    # An empty batch on an existing table is one commit with its id and time
    [empty] = merge_pending(spark, spec, io, [land(tmp_path, 7, [])])
    assert empty.empty and empty.snapshot_id is not None
    with pytest.raises(OutOfOrderBatchError):
        merge_pending(spark, spec, io, [land(tmp_path, 7, [{"id": 1, "v": 9}])])  # same time: not newer
    with pytest.raises(EmptyFullLoadError, match="allow_empty_full_load"):
        merge_pending(spark, spec, io, [land(tmp_path, 8, [], full_load=True)])
    consenting = spec.model_copy(update={"allow_empty_full_load": True})
    [gone] = merge_pending(spark, consenting, io, [land(tmp_path, 9, [], full_load=True)])
    assert gone.deleted == 2
    assert spark.sql(f"SELECT count(*) FROM {table} WHERE _is_current").collect()[0][0] == 0
