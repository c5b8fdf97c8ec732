"""The SQL of one merge: the batch classified against the current versions in one join (new,
changed, deleted; unchanged keys dropped), the MERGE source built from those changes, the MERGE."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from icelake.errors import IngestError, InvalidBatchError
from icelake.ingest.models import Scd2Spec
from icelake.ingest.scd2.names import (
    CUR,
    DELETED_FLAG,
    INGESTED_AT,
    IS_CURRENT,
    IS_DELETED,
    POSITION,
    SCD2_COLUMNS,
    SOURCE_FILE,
    VALID_FROM,
    VALID_TO,
    q,
    qtable,
    ts_literal,
)
from icelake.ingest.scd2.schema import SchemaPlan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType


def tracked_columns(spec: Scd2Spec, table_schema: StructType) -> list[str]:
    names = table_schema.fieldNames()
    if spec.tracked is not None:
        unknown = [c for c in spec.tracked if c not in names]
        if unknown:
            raise IngestError(f"tracked column(s) {unknown} are not in {spec.table} (columns: {names})")
        return list(spec.tracked)
    return [c for c in names if c not in spec.keys and c not in spec.ignored]


def current_rows_sql(spec: Scd2Spec, plan: SchemaPlan) -> str:
    """The current versions in the planned schema (added columns NULL, widened ones cast), with the
    bookkeeping a closed copy keeps; none when the table is yet to be created."""
    kept = [INGESTED_AT, SOURCE_FILE, VALID_FROM]
    if not plan.exists:
        cols = [f"CAST(NULL AS {f.dataType.simpleString()}) AS {q(f.name)}" for f in plan.schema.fields]
        cols += [f"CAST(NULL AS {SCD2_COLUMNS[c][0]}) AS {q(c)}" for c in kept]
        return f"SELECT {', '.join(cols)}, true AS __present WHERE false"
    cols = []
    for f in plan.schema.fields:
        if f.name in plan.added:
            cols.append(f"CAST(NULL AS {f.dataType.simpleString()}) AS {q(f.name)}")
        elif f.name in plan.promoted:
            cols.append(f"CAST({q(f.name)} AS {f.dataType.simpleString()}) AS {q(f.name)}")
        else:
            cols.append(q(f.name))
    cols += [q(c) for c in kept]
    return f"SELECT {', '.join(cols)}, true AS __present FROM {qtable(spec.table)} WHERE {q(IS_CURRENT)}"


def changes_sql(
    spec: Scd2Spec,
    batch_view: str,
    table_schema: StructType,
    full_load: bool,
    absent: frozenset[str] = frozenset(),
    current_rows: str | None = None,
) -> str:
    """The keys this batch changes, classified against the current rows in ONE join.

    Rows: `new` (key not current), `changed` (a tracked column differs NULL-safely), and `deleted`
    (for full loads a current key absent from the batch; an API tombstone of a current key).
    Unchanged keys are dropped here, so everything after this query (counts, the MERGE source)
    handles only the changes: about 1% of a typical dimension batch. `__mk_*` is the key to match
    in the table (the current row's key for `deleted` by a full load, the batch row's otherwise).
    Columns in `absent` (no record of the batch has them) are no change: a new version carries
    the current version's value. `current_rows`: the current versions in `table_schema` with the
    kept bookkeeping and `__present` (current_rows_sql); by default the table's as they are.
    """
    names = table_schema.fieldNames()
    keys = [q(k) for k in spec.keys]
    order = [f"{q(spec.order_by)} DESC NULLS LAST"] if spec.order_by else []
    order.append(f"{q(POSITION)} DESC")
    tracked = tracked_columns(spec, table_schema)
    compared = [c for c in tracked if c not in absent]
    same = " AND ".join(f"(l.{q(c)} <=> c.{q(c)})" for c in compared) or "true"
    key_join = " AND ".join(f"l.{k} = c.{k}" for k in keys)
    batch_cols = ", ".join(f"c.{q(c)} AS {q(c)}" if c in absent else f"l.{q(c)}" for c in names)
    merge_keys = ", ".join(
        f"CASE WHEN l.__in_batch THEN l.{k} ELSE c.{k} END AS {q('__mk_' + n)}"
        for k, n in zip(keys, spec.keys, strict=True)
    )
    # Every column of the current version: a closed version is re-inserted whole from here, so the
    # MERGE itself only deletes by key and never reads the wide current rows a second time.
    kept = [INGESTED_AT, SOURCE_FILE, VALID_FROM]
    current_cols = ", ".join([*(q(c) for c in names), *(q(c) for c in kept)])
    current_rows = current_rows or (
        f"SELECT {current_cols}, true AS __present FROM {qtable(spec.table)} WHERE {q(IS_CURRENT)}"
    )
    current_copy = ", ".join(f"c.{q(c)} AS {q(CUR + c)}" for c in [*names, *kept])
    join = "FULL OUTER JOIN" if full_load else "LEFT JOIN"
    return f"""
WITH ranked AS (
  SELECT *, row_number() OVER (PARTITION BY {", ".join(keys)} ORDER BY {", ".join(order)}) AS __rn
  FROM {batch_view}
), latest AS (
  SELECT *, true AS __in_batch FROM ranked WHERE __rn = 1
), cur AS (
  {current_rows}
), classified AS (
  SELECT {merge_keys}, {batch_cols}, l.{q(SOURCE_FILE)}, {current_copy},
    CASE WHEN l.__in_batch IS NULL THEN 'deleted'
         WHEN l.{q(DELETED_FLAG)} THEN CASE WHEN c.__present IS NULL THEN 'same' ELSE 'deleted' END
         WHEN c.__present IS NULL THEN 'new'
         WHEN {same} THEN 'same' ELSE 'changed' END AS __action
  FROM latest l {join} cur c ON {key_join}
)
SELECT * FROM classified WHERE __action <> 'same'
"""


def merge_source_sql(
    spec: Scd2Spec, changes_view: str, table_schema: StructType, *, as_of: datetime, ingested_at: datetime
) -> str:
    """The MERGE source built from the (small) changes, in the table's column order plus the merge
    keys. A changed or deleted key appears as: its merge key (matches the current version, which is
    deleted), the closed copy of that version (`_is_current` false, `_valid_to` = as-of, NULL merge
    key: inserted into history), and for a change the new version (NULL merge key: inserted)."""
    names = table_schema.fieldNames()
    mk = [q("__mk_" + k) for k in spec.keys]
    mk_null = ", ".join(
        f"CAST(NULL AS {table_schema[n].dataType.simpleString()}) AS {q('__mk_' + n)}" for n in spec.keys
    )
    nulls = ", ".join(
        [f"CAST(NULL AS {f.dataType.simpleString()}) AS {q(f.name)}" for f in table_schema.fields]
        + [f"CAST(NULL AS {t}) AS {q(c)}" for c, (t, _doc) in SCD2_COLUMNS.items()]
    )
    closed = ", ".join(
        [f"{q(CUR + c)} AS {q(c)}" for c in names]
        + [
            f"{q(CUR + INGESTED_AT)} AS {q(INGESTED_AT)}",
            f"{q(CUR + SOURCE_FILE)} AS {q(SOURCE_FILE)}",
            f"false AS {q(IS_CURRENT)}",
            f"{q(CUR + VALID_FROM)} AS {q(VALID_FROM)}",
            f"{ts_literal(as_of)} AS {q(VALID_TO)}",
            f"__action = 'deleted' AS {q(IS_DELETED)}",
        ]
    )
    opened = ", ".join(
        [q(c) for c in names]
        + [
            f"{ts_literal(ingested_at)} AS {q(INGESTED_AT)}",
            q(SOURCE_FILE),
            f"true AS {q(IS_CURRENT)}",
            f"{ts_literal(as_of)} AS {q(VALID_FROM)}",
            f"CAST(NULL AS TIMESTAMP) AS {q(VALID_TO)}",
            f"false AS {q(IS_DELETED)}",
        ]
    )
    return f"""
SELECT {nulls}, {", ".join(mk)} FROM {changes_view} WHERE __action IN ('changed', 'deleted')
UNION ALL
SELECT {closed}, {mk_null} FROM {changes_view} WHERE __action IN ('changed', 'deleted')
UNION ALL
SELECT {opened}, {mk_null} FROM {changes_view} WHERE __action IN ('new', 'changed')
"""


# Up to this many distinct `_valid_from` values are named one by one in the MERGE's condition;
# beyond it their range is (as exact, a little less selective).
MAX_LISTED_VALID_FROM = 1000


@dataclass(frozen=True)
class ChangeCounts:
    """What the one aggregation of the cached changes says: rows per action, and the `_valid_from`
    (epoch microseconds) of every current version the batch closes, which is all the MERGE needs
    to skip the current partition's files that hold none of them."""

    counts: dict[str, int]
    closes_valid_from: frozenset[int]


def _closed_versions_sql(closes_valid_from: frozenset[int]) -> str:
    """A condition on the target alone that every current version the batch closes meets: pushed
    into the MERGE's scan of the target, where Iceberg's column bounds skip the files written by
    batches whose versions none of the changes close (and, with nothing closed, every file)."""
    if not closes_valid_from:
        return "false"
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    literal = [ts_literal(epoch + timedelta(microseconds=m)) for m in sorted(closes_valid_from)]
    if len(literal) <= MAX_LISTED_VALID_FROM:
        return f"t.{q(VALID_FROM)} IN ({', '.join(literal)})"
    return f"t.{q(VALID_FROM)} BETWEEN {literal[0]} AND {literal[-1]}"


def merge_sql(
    spec: Scd2Spec, source_view: str, table_schema: StructType, closes_valid_from: frozenset[int]
) -> str:
    """Delete the current versions the source closes (matched by key: the MERGE reads only the key
    columns of the current rows, and only in files that can hold a closed version, by their
    `_valid_from` as the classification read it), insert the closed copies and the new versions
    (one commit)."""
    names = [*table_schema.fieldNames(), *SCD2_COLUMNS]
    on = " AND ".join(f"t.{q(k)} = s.{q('__mk_' + k)}" for k in spec.keys)
    insert_cols = ", ".join(q(c) for c in names)
    values = ", ".join(f"s.{q(c)}" for c in names)
    return f"""
MERGE INTO {qtable(spec.table)} t
USING {source_view} s
ON {on} AND t.{q(IS_CURRENT)} AND {_closed_versions_sql(closes_valid_from)}
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED THEN INSERT ({insert_cols}) VALUES ({values})
"""


def count_changes(changes: DataFrame, spec: Scd2Spec, batch_id: str) -> ChangeCounts:
    """Rows per action and the closed versions' `_valid_from`, in one aggregation of the cached
    changes (the DataFrame the MERGE reads); refuses a batch with NULL keys before anything is
    written."""
    from pyspark.sql import functions as F

    null_key = F.expr(" OR ".join(f"{q(k)} IS NULL" for k in spec.keys)) & (F.col("__action") != "deleted")
    closes = F.col("__action").isin("changed", "deleted")
    valid_from = F.expr(f"unix_micros({q(CUR + VALID_FROM)})")
    counts: dict[str, int] = {}
    closes_valid_from: set[int] = set()
    null_keys = 0
    aggregated = changes.groupBy("__action", null_key.alias("__null_key")).agg(
        F.count(F.lit(1)).alias("count"), F.collect_set(F.when(closes, valid_from)).alias("valid_from")
    )
    for row in aggregated.collect():
        if row["__null_key"]:
            null_keys += row["count"]
        else:
            counts[row["__action"]] = row["count"]
            closes_valid_from.update(int(v) for v in row["valid_from"])
    if null_keys:
        raise InvalidBatchError(
            f"batch {batch_id} has record(s) with a NULL key {list(spec.keys)} "
            f"({null_keys} key group(s)); nothing was merged: fix the source or the key columns"
        )
    return ChangeCounts(counts, frozenset(closes_valid_from))
