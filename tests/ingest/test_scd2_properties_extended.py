"""Property: declared types, tombstones, vanishing columns, new columns and watermark fetches
against the reference model (tests/ingest/reference.py), through the merge the Glue job runs (with
quarantine). A batch that is quarantined or refused as out of order changes nothing, schema included;
a merged batch adds the new columns it brings and its report lists them."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from icelake.aws.fileio import LocalFileIO
from icelake.errors import OutOfOrderBatchError
from icelake.ingest.landing import FetchedBatch, complete_or_report, land_batch, read_state
from icelake.ingest.models import DeleteMarker, Scd2Spec, Watermark
from icelake.ingest.scd2 import merge_pending
from icelake.ingest.watermark import since_value
from tests.ingest.reference import RefBatch, reference_history
from tests.ingest.test_scd2_atomic import table_state
from tests.ingest.test_scd2_properties import assert_scd2_invariants, micros

pytestmark = pytest.mark.spark

COLUMNS = ["id", "name", "price", "updated_at"]
EXTRA = ["qty", "region"]  # undeclared: added by the first merged batch that has them
T0 = datetime(2026, 2, 1, tzinfo=UTC)
_tables = itertools.count()

# price is decimal(4,1): 2.25 cannot be held exactly and makes its batch go to quarantine.
# qty is inferred: bigint when the batch that adds it has whole numbers only (then a later 2.5
# quarantines its batch), double otherwise. A late batch is fetched before the newest merged one.
records = st.fixed_dictionaries(
    {"id": st.integers(1, 4), "updated_at": st.sampled_from([None, 1, 2])},
    optional={
        "name": st.sampled_from([None, "a", "b"]),
        "price": st.sampled_from([None, 0, 1.5, 2.25]),
        "deleted": st.booleans(),
        "qty": st.sampled_from([1, 2.5]),
        "region": st.sampled_from([None, "eu"]),
    },
)
batches = st.lists(st.tuples(st.lists(records, max_size=5), st.booleans()), min_size=1, max_size=4)


@dataclass
class ExtraColumns:
    """The model of the undeclared columns: their type once a merged batch has added them."""

    types: dict[str, str] = field(default_factory=dict)

    def conflicts(self, recs: list[dict[str, Any]]) -> bool:
        """A fraction for a qty column the table holds as bigint: quarantined, nothing added."""
        return self.types.get("qty") == "bigint" and any(r.get("qty") == 2.5 for r in recs)

    def merge(self, recs: list[dict[str, Any]]) -> list[str]:
        """The columns a merged batch adds, as its report lists them (sorted)."""
        added = []
        for column in EXTRA:
            values = [r[column] for r in recs if column in r]
            if values and column not in self.types:
                kinds = {"qty": "double" if 2.5 in values else "bigint", "region": "string"}
                self.types[column] = kinds[column]
                added.append(column)
        return added


def rows(spark: Any, table: str) -> list[dict[str, Any]]:
    have = spark.table(table).columns
    extra = [c if c in have else f"NULL AS {c}" for c in EXTRA]
    got = spark.sql(
        f"SELECT {', '.join(COLUMNS + extra)}, _source_file, _is_current, _is_deleted, "
        f"unix_micros(_valid_from) AS vf, unix_micros(_valid_to) AS vt FROM {table}"
    ).collect()
    return sorted((r.asDict() for r in got), key=lambda r: (r["id"], r["vf"]))


def expected_rows(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [
        {
            **{c: row[c] for c in COLUMNS + EXTRA},
            "price": None if row["price"] is None else Decimal(str(row["price"])).quantize(Decimal("0.1")),
            "_source_file": row["_source_file"],
            "_is_current": row["_is_current"],
            "_is_deleted": row["_is_deleted"],
            "vf": micros(row["_valid_from"]),
            "vt": micros(row["_valid_to"]),
        }
        for row in history
    ]
    return sorted(out, key=lambda r: (r["id"], r["vf"]))


@settings(
    max_examples=15, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(program=batches, absent_means_null=st.booleans())
def test_types_tombstones_and_vanishing_columns_match_the_reference(
    spark: Any,
    tmp_path_factory: pytest.TempPathFactory,
    ingest_catalog: str,
    program: list[list[dict[str, Any]]],
    absent_means_null: bool,
) -> None:
    table = f"{ingest_catalog}.propx.dim_{next(_tables)}"
    spec = Scd2Spec(
        table=table,
        keys=("id",),
        order_by="updated_at",
        types={"id": "long", "name": "string", "price": "decimal(4,1)", "updated_at": "long"},
        delete_marker=DeleteMarker(column="deleted", value=True),
        absent_means_null=absent_means_null,
    )
    io = LocalFileIO()
    root = str(tmp_path_factory.mktemp("raw"))  # under pytest's basetemp, not one leaked per example
    merged: list[RefBatch] = []
    quarantined = refused = 0
    extra = ExtraColumns()
    for step, (drawn, fetched_late) in enumerate(program):
        as_of = T0 + timedelta(hours=step + 1)
        late = fetched_late and bool(merged)
        recs = drawn
        if late:  # an old window fetched again, with a field the newer batches no longer have
            as_of = merged[-1].as_of - timedelta(minutes=30 + step)
            recs = [{**r, "legacy_only": 1} for r in drawn]
        pending = land_batch(
            io,
            root,
            FetchedBatch(
                source="api", endpoint="dim", pages=[json.dumps({"data": recs}).encode()], fetched_at=as_of
            ),
        )
        before = table_state(spark, table) if spark.catalog.tableExists(table) else None
        bad_price = any(r.get("price") == 2.25 for r in recs)  # refused as the batch is read
        bad_qty = extra.conflicts(recs)  # refused against the table's schema
        if late and not bad_price:
            with pytest.raises(OutOfOrderBatchError):
                merge_pending(spark, spec, io, [pending], ingested_at=as_of, quarantine=True)
            refused += 1
        else:
            [result] = merge_pending(spark, spec, io, [pending], ingested_at=as_of, quarantine=True)
            poisoned = bad_price or bad_qty
            assert (result.quarantined_to is not None) == poisoned, result.reason
            if poisoned:
                why = "'price' is decimal(4,1)" if bad_price else "'qty' is bigint"
                assert why in (result.reason or "")
                quarantined += 1
        if late or bad_price or bad_qty:  # refused or quarantined: nothing changed, schema included
            after = table_state(spark, table) if spark.catalog.tableExists(table) else None
            assert after == before
            continue
        added = extra.merge(recs)
        assert sorted(result.added_columns) == (added if before is not None else [])
        if spark.catalog.tableExists(table):  # an empty first batch creates no table
            schema = {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}
            assert {c: schema[c] for c in EXTRA if c in schema} == extra.types
        merged.append(
            RefBatch(
                pending.manifest.batch_id,
                as_of,
                as_of,
                ((f"{pending.uri}/page-000001.json", tuple(recs)),),
                False,
            )
        )
    expected = expected_rows(
        reference_history(
            merged,
            key="id",
            columns=COLUMNS + EXTRA,
            order_by="updated_at",
            tracked=COLUMNS[1:] + EXTRA,
            marker=("deleted", True),
            absent_means_null=absent_means_null,
        )
    )
    actual = rows(spark, table) if spark.catalog.tableExists(table) else []
    deleted = sum(r["_is_deleted"] for r in actual)
    event(f"quarantined: {quarantined}, refused: {refused}, versions: {len(actual)}, deleted: {deleted}")
    assert actual == expected
    assert_scd2_invariants(actual)


# The API: key -> its current record; each step changes some keys (bumping updated_at) and the
# fetch asks only for records with updated_at >= the merged watermark minus the overlap.
api_steps = st.lists(
    st.lists(st.tuples(st.integers(1, 5), st.sampled_from(["a", "b", "c"])), max_size=4),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=10, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=api_steps, overlap=st.integers(0, 3))
def test_watermark_fetches_give_the_reference_history_and_the_api_state(
    spark: Any,
    tmp_path_factory: pytest.TempPathFactory,
    ingest_catalog: str,
    steps: list[list[tuple[int, str]]],
    overlap: int,
) -> None:
    table = f"{ingest_catalog}.propw.dim_{next(_tables)}"
    spec = Scd2Spec(
        table=table, keys=("id",), order_by="updated_at", types={"id": "long", "updated_at": "long"}
    )
    watermark = Watermark(param="updated_after", from_column="updated_at", overlap=overlap)
    io = LocalFileIO()
    root = str(tmp_path_factory.mktemp("raw"))  # under pytest's basetemp, not one leaked per example
    api: dict[int, dict[str, Any]] = {}
    clock = 0
    merged: list[RefBatch] = []
    for step, changes in enumerate(steps):
        for key, name in changes:
            clock += 1
            api[key] = {"id": key, "name": name, "updated_at": clock}
        since = since_value(watermark, read_state(io, root, "api", "dim").get("watermark"))
        served = [r for r in api.values() if since is None or r["updated_at"] >= int(since)]
        as_of = T0 + timedelta(hours=step + 1)
        pending = land_batch(
            io,
            root,
            FetchedBatch(
                source="api", endpoint="dim", pages=[json.dumps({"data": served}).encode()], fetched_at=as_of
            ),
        )
        # what the fetch Lambda records while paging: the newest from_column value of the batch
        newest = max((r["updated_at"] for r in served), default=None)
        manifest = pending.manifest.model_copy(update={"watermark_max": newest, "since": since})
        (Path(pending.uri) / ".pending").write_text(manifest.model_dump_json())
        merge_pending(spark, spec, io, [pending.model_copy(update={"manifest": manifest})], ingested_at=as_of)
        complete_or_report([pending.uri])
        merged.append(
            RefBatch(
                manifest.batch_id, as_of, as_of, ((f"{pending.uri}/page-000001.json", tuple(served)),), False
            )
        )
    history = reference_history(
        merged,
        key="id",
        columns=["id", "name", "updated_at"],
        order_by="updated_at",
        tracked=["name", "updated_at"],
    )
    current = {r["id"]: {c: r[c] for c in ("id", "name", "updated_at")} for r in history if r["_is_current"]}
    assert current == api, "incremental fetches lost or reverted a change"
    if spark.catalog.tableExists(table):
        got = spark.sql(f"SELECT id, name, updated_at FROM {table} WHERE _is_current").collect()
        assert {r["id"]: r.asDict() for r in got} == api
        versions = spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0]
        assert versions == len(history)
    event(f"overlap {overlap}: versions {len(history)}")
