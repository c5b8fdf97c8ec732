"""Property: any sequence of batches merged by the Spark job gives the reference history."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from icelake.aws.fileio import LocalFileIO
from icelake.ingest.landing import FetchedBatch, land_batch
from icelake.ingest.models import PendingBatch, Scd2Spec
from icelake.ingest.scd2 import merge_pending
from tests.ingest.reference import RefBatch, reference_history

pytestmark = pytest.mark.spark

COLUMNS = ["id", "name", "score", "updated_at"]
SCHEMA = "id BIGINT, name STRING, score BIGINT, updated_at BIGINT"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
_tables = itertools.count()

records = st.fixed_dictionaries(
    {
        "id": st.integers(1, 4),
        "name": st.sampled_from([None, "a", "b"]),
        "score": st.sampled_from([None, 0, 1]),
        "updated_at": st.sampled_from([None, 1, 2]),
    }
)
new_batch = st.tuples(
    st.just("batch"), st.lists(records, max_size=6), st.integers(0, 6), st.booleans()
)  # (kind, records, page split point, full load)
redeliver = st.tuples(st.just("redeliver"), st.integers(0, 10))  # land an earlier batch's pages again
rerun = st.tuples(st.just("rerun"), st.integers(0, 10))  # merge an already merged batch again
programs = st.tuples(
    new_batch, st.lists(st.one_of(new_batch, new_batch, redeliver, rerun), min_size=1, max_size=3)
).map(lambda t: [t[0], *t[1]])  # always starts with a new batch, 2 to 4 steps


def table_rows(spark: Any, table: str) -> list[dict[str, Any]]:
    rows = spark.sql(
        f"SELECT {', '.join(COLUMNS)}, _source_file, _is_current, _is_deleted, "
        "unix_micros(_valid_from) AS vf, unix_micros(_valid_to) AS vt, unix_micros(_ingested_at) AS ia "
        f"FROM {table}"
    ).collect()
    return sorted((r.asDict() for r in rows), key=lambda r: (r["id"], r["vf"]))


def micros(when: datetime | None) -> int | None:
    return (
        None if when is None else int((when - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1))
    )


def as_rows(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [
        {
            **{c: row[c] for c in COLUMNS},
            "_source_file": row["_source_file"],
            "_is_current": row["_is_current"],
            "_is_deleted": row["_is_deleted"],
            "vf": micros(row["_valid_from"]),
            "vt": micros(row["_valid_to"]),
            "ia": micros(row["_ingested_at"]),
        }
        for row in history
    ]
    return sorted(out, key=lambda r: (r["id"], r["vf"]))


def assert_scd2_invariants(rows: list[dict[str, Any]]) -> None:
    for key, versions in itertools.groupby(rows, key=lambda r: r["id"]):
        chain = sorted(versions, key=lambda r: r["vf"])
        assert sum(r["_is_current"] for r in chain) <= 1, f"key {key} has several current rows"
        for row in chain:
            assert row["_is_current"] == (row["vt"] is None)
            assert row["vt"] is None or row["vf"] < row["vt"], f"empty or inverted interval for key {key}"
        for before, after in itertools.pairwise(chain):
            assert before["vt"] is not None and before["vt"] <= after["vf"], (
                f"overlapping versions of key {key}"
            )


@settings(
    max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(program=programs)
def test_merged_history_equals_the_reference(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, ingest_catalog: str, program: list[tuple[Any, ...]]
) -> None:
    # Given a fresh table and a raw landing directory
    table = f"{ingest_catalog}.prop.dim_{next(_tables)}"
    spec = Scd2Spec(table=table, keys=("id",), order_by="updated_at", schema_ddl=SCHEMA)
    io = LocalFileIO()
    root = str(tmp_path_factory.mktemp("raw"))  # under pytest's basetemp, not one leaked per example
    landed: list[tuple[PendingBatch, RefBatch]] = []
    processed: list[RefBatch] = []
    # When each step lands a batch (new or re-delivered) or re-runs a merged one, and the job merges it
    for step, (kind, *args) in enumerate(program):
        as_of = T0 + timedelta(hours=step + 1)
        if kind == "batch":
            recs, split, full_load = args
            split = min(split, len(recs))
            pages = [recs[:split], recs[split:]] if 0 < split < len(recs) else [recs]
            bodies = [json.dumps({"data": p}).encode() for p in pages]
            full_load = full_load and bool(recs)  # an empty full load is refused (tested separately)
        elif not landed:
            continue
        else:
            earlier_pending, earlier_ref = landed[args[0] % len(landed)]
            if kind == "rerun":
                merge_pending(spark, spec, io, [earlier_pending], ingested_at=earlier_ref.ingested_at)
                processed.append(earlier_ref)
                continue
            bodies = [
                LocalFileIO().read(f"{earlier_pending.uri}/{n}") for n in earlier_pending.manifest.pages
            ]
            full_load = earlier_pending.manifest.full_load
        pending = land_batch(
            io,
            root,
            FetchedBatch(source="api", endpoint="dim", pages=bodies, fetched_at=as_of, full_load=full_load),
        )
        ref = RefBatch(
            batch_id=pending.manifest.batch_id,
            as_of=as_of,
            ingested_at=as_of + timedelta(minutes=5),
            pages=tuple(
                (f"{pending.uri}/{name}", tuple(json.loads(body)["data"]))
                for name, body in zip(pending.manifest.pages, bodies, strict=True)
            ),
            full_load=full_load,
        )
        [result] = merge_pending(spark, spec, io, [pending], ingested_at=ref.ingested_at)
        assert not result.skipped
        landed.append((pending, ref))
        processed.append(ref)
    # Then the table holds exactly the reference history, and SCD2 invariants hold
    expected = as_rows(
        reference_history(processed, key="id", columns=COLUMNS, order_by="updated_at", tracked=COLUMNS[1:])
    )
    actual = table_rows(spark, table) if spark.catalog.tableExists(table) else []
    event(f"merged batches: {len(landed)}, versions: {len(actual)}")
    event(f"full loads: {sum(r.full_load for _p, r in landed)}, re-runs: {len(processed) - len(landed)}")
    assert actual == expected
    assert_scd2_invariants(actual)
