"""SCD2 merge of landed batches into an Iceberg table, as functions on a SparkSession.

Every batch becomes ONE Iceberg commit (a MERGE INTO) that closes the current version of changed
keys and inserts their new versions and the new keys, plus, for full loads, closes and flags the
keys the batch no longer has. The batch id and its as-of time are written into that commit's
snapshot summary; a batch found there is skipped, so re-running after a crash adds nothing.

Semantics (the reference implementation in tests/ingest/reference.py states them in plain Python):
- One row per key per batch: the latest by `order_by` (NULLs oldest), ties broken by batch order
  (later page, later record wins).
- A key changed when any tracked column differs NULL-safely (`<=>`): NULL -> value and value ->
  NULL are changes, NULL -> NULL is not.
- Versions are valid over [_valid_from, _valid_to): a batch fetched at T closes versions at T and
  opens new ones at T. Batches must be merged in fetch order (the pending listing is oldest first);
  an older batch that is not recorded is refused rather than rewriting history.
- Columns present in the table but absent from a batch are NULL for that batch's records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from icelake.aws.fileio import FileIO
from icelake.errors import (
    EmptyFullLoadError,
    IngestError,
    InvalidBatchError,
    OutOfOrderBatchError,
    SchemaMismatchError,
)
from icelake.ingest.landing import iter_batch_records, quarantine_batch, read_ledger, record_in_ledger
from icelake.ingest.models import MaintenanceConfig, MergeResult, PendingBatch, Scd2Spec
from icelake.ingest.types import IcebergType, can_promote, convert, parse_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

INGESTED_AT = "_ingested_at"
SOURCE_FILE = "_source_file"
IS_CURRENT = "_is_current"
VALID_FROM = "_valid_from"
VALID_TO = "_valid_to"
IS_DELETED = "_is_deleted"
SCD2_COLUMNS: dict[str, tuple[str, str]] = {
    INGESTED_AT: ("TIMESTAMP", "when icelake merged the batch that created this version"),
    SOURCE_FILE: ("STRING", "raw landed API response this version was read from"),
    IS_CURRENT: ("BOOLEAN", "true for the one live version of a key"),
    VALID_FROM: ("TIMESTAMP", "fetch time of the batch that created this version (inclusive)"),
    VALID_TO: (
        "TIMESTAMP",
        "fetch time of the batch that ended this version (exclusive); NULL while current",
    ),
    IS_DELETED: ("BOOLEAN", "true when a full load no longer contained the key and closed this version"),
}
_POS = "__icelake_pos"  # record position inside the batch (tie-breaker), internal to the merge
CUR = "__cur_"  # prefix of the current version's columns in the classified changes
DELETED_FLAG = "__icelake_tombstone"  # the record is an API tombstone (Scd2Spec.delete_marker)
RESERVED = frozenset(SCD2_COLUMNS) | {_POS, DELETED_FLAG}
BATCH_ID_PROPERTY = "icelake.batch-id"
BATCH_AS_OF_PROPERTY = "icelake.batch-as-of"
DEFAULT_PROPERTIES = {
    "format-version": "2",
    "write.merge.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "100",
}

T = TypeVar("T")


def q(name: str) -> str:
    """A quoted Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def qtable(table: str) -> str:
    return ".".join(q(p) for p in table.split("."))


def ts_literal(when: datetime) -> str:
    """An exact timestamp literal, independent of the session time zone."""
    if when.tzinfo is None:
        raise ValueError(f"{when!r} has no time zone; pass an aware UTC datetime")
    delta = when.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return f"TIMESTAMP_MICROS({micros})"


def ts_constant(when: datetime) -> str:
    """A constant timestamp literal (procedure arguments accept no function calls)."""
    return f"TIMESTAMP '{when.astimezone(UTC):%Y-%m-%d %H:%M:%S.%f}+00:00'"


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --------------------------------------------------------------------------- table from code


def table_exists(spark: SparkSession, table: str) -> bool:
    return bool(spark.catalog.tableExists(table))


def create_table_ddl(spec: Scd2Spec, data_schema: StructType) -> str:
    """CREATE TABLE for `spec`: the data columns of `data_schema`, then the SCD2 columns."""
    lines = []
    for f in data_schema.fields:
        comment = spec.column_comments.get(f.name) or ("business key" if f.name in spec.keys else None)
        not_null = " NOT NULL" if f.name in spec.keys else ""
        suffix = f" COMMENT {_sql_string(comment)}" if comment else ""
        lines.append(f"{q(f.name)} {f.dataType.simpleString()}{not_null}{suffix}")
    for name, (sql_type, comment) in SCD2_COLUMNS.items():
        not_null = "" if name == VALID_TO else " NOT NULL"
        lines.append(f"{q(name)} {sql_type}{not_null} COMMENT {_sql_string(comment)}")
    properties = {
        **DEFAULT_PROPERTIES,
        "icelake.scd2.keys": ",".join(spec.keys),
        "icelake.scd2.order-by": spec.order_by or "",
        **spec.properties,
    }
    props = ", ".join(f"{_sql_string(k)}={_sql_string(v)}" for k, v in properties.items())
    columns = ",\n  ".join(lines)
    return (
        f"CREATE TABLE IF NOT EXISTS {qtable(spec.table)} (\n  {columns}\n) USING iceberg\n"
        # Current rows apart from history: the change detection and the MERGE read only them,
        # however long the history grows (and so do readers asking for the current state).
        f"PARTITIONED BY ({q(IS_CURRENT)})\n"
        f"COMMENT {_sql_string(spec.comment)}\nTBLPROPERTIES ({props})"
    )


def data_columns(spark: SparkSession, table: str) -> StructType:
    from pyspark.sql.types import StructType

    schema = spark.table(table).schema
    return StructType([f for f in schema.fields if f.name not in SCD2_COLUMNS])


@dataclass(frozen=True)
class SchemaPlan:
    """The table's data columns as a batch would leave them, and the changes that get them there.
    Planned before anything is written: every check runs against `schema`; the table changes only
    once the batch is known to merge (apply_schema_plan), and is restored if the MERGE fails."""

    schema: StructType  # the data columns after the batch: the table's (promoted), then the added
    exists: bool  # False: the table is created with `schema`
    added: tuple[str, ...] = ()
    promoted: tuple[str, ...] = ()  # widened to their type in `schema`


@dataclass(frozen=True)
class TableBefore:
    """What a failed merge restores: the table's current schema and snapshot before the batch
    (None: the batch created the table)."""

    schema_id: int | None
    snapshot_id: int | None


def plan_schema(spark: SparkSession, spec: Scd2Spec, batch_df: DataFrame) -> SchemaPlan:
    """The schema this batch needs (new table, added columns, widened types), without changing it."""
    from pyspark.sql.types import StructField, StructType

    batch_schema = batch_df.drop(SOURCE_FILE, _POS, DELETED_FLAG).schema
    clash = RESERVED & set(batch_schema.fieldNames())
    if clash:
        raise InvalidBatchError(f"the API data has columns reserved for SCD2 bookkeeping: {sorted(clash)}")
    if not table_exists(spark, spec.table):
        missing_keys = [k for k in spec.keys if k not in batch_schema.fieldNames()]
        if missing_keys:
            raise InvalidBatchError(f"the batch has no key column(s) {missing_keys}; check Scd2Spec.keys")
        return SchemaPlan(batch_schema, exists=False)
    current = data_columns(spark, spec.table)
    existing = {f.name.lower() for f in current.fields}
    new = [f for f in batch_schema.fields if f.name.lower() not in existing]
    widened = promotions(spec, batch_df, current)
    fields = [StructField(f.name, widened.get(f.name, f.dataType), f.nullable, f.metadata) for f in current]
    fields += [StructField(f.name, f.dataType, True) for f in new]
    return SchemaPlan(
        StructType(fields), exists=True, added=tuple(f.name for f in new), promoted=tuple(widened)
    )


def apply_schema_plan(spark: SparkSession, spec: Scd2Spec, plan: SchemaPlan) -> TableBefore:
    """Create the table, or add and widen its columns, as planned; returns what to restore."""
    if not plan.exists:
        spark.sql(create_table_ddl(spec, plan.schema))
        return TableBefore(None, None)
    table = iceberg_table(spark, spec.table)
    snapshot = table.currentSnapshot()
    before = TableBefore(
        int(table.schema().schemaId()), None if snapshot is None else int(snapshot.snapshotId())
    )
    for name in plan.added:
        comment = spec.column_comments.get(name, "added by schema evolution")
        kind = plan.schema[name].dataType.simpleString()
        spark.sql(
            f"ALTER TABLE {qtable(spec.table)} ADD COLUMN {q(name)} {kind} COMMENT {_sql_string(comment)}"
        )
    for name in plan.promoted:
        wider = iceberg_type_of(plan.schema[name].dataType)
        assert wider is not None  # promotions() only widens primitives
        spark.sql(f"ALTER TABLE {qtable(spec.table)} ALTER COLUMN {q(name)} TYPE {wider.spark_sql}")
    return before


def iceberg_table(spark: SparkSession, table: str) -> Any:
    """The Java Iceberg table behind `table` (the catalog's instance, refreshed)."""
    jvm: Any = spark.sparkContext._jvm
    found = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    found.refresh()
    return found


def restore_table(spark: SparkSession, spec: Scd2Spec, plan: SchemaPlan, before: TableBefore) -> None:
    """Undo a schema change whose MERGE did not commit: the schema current before the batch is made
    current again (the same schema id, so a widened type is narrow again, which no ALTER can do),
    or the table the batch created is dropped while it holds no snapshot. Nothing is undone when
    the table has a snapshot the batch did not see (its MERGE, or another writer's, committed)."""
    if not plan.added and not plan.promoted and plan.exists:
        return
    table = iceberg_table(spark, spec.table)
    snapshot = table.currentSnapshot()
    if (None if snapshot is None else int(snapshot.snapshotId())) != before.snapshot_id:
        return
    if before.schema_id is None:
        spark.sql(f"DROP TABLE IF EXISTS {qtable(spec.table)}")
        return
    if int(table.schema().schemaId()) != before.schema_id:
        jvm: Any = spark.sparkContext._jvm
        ops = table.operations()
        base = ops.current()
        restored = jvm.org.apache.iceberg.TableMetadata.buildFrom(base).setCurrentSchema(before.schema_id)
        ops.commit(base, restored.build())
    spark.catalog.refreshTable(spec.table)


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


# --------------------------------------------------------------------------- batch -> DataFrame


@dataclass(frozen=True)
class BatchFrame:
    """A landed batch as a DataFrame (data columns, `_source_file`, position, tombstone flag)."""

    df: DataFrame
    present: frozenset[str]  # data columns at least one record carries (absent ones are not changes)
    records: int


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):  # an undeclared fraction: what json.loads would have given
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _is_marker(value: Any, marker: Any) -> bool:
    return json.dumps(value, default=str) == json.dumps(marker, default=str)


def _check_record(record: dict[str, Any], page: str, pos: int, spec: Scd2Spec, batch_id: str) -> None:
    """Refuse a record that uses a bookkeeping column or lacks a key value."""
    clash = RESERVED & set(record)
    if clash:
        raise InvalidBatchError(f"{page} has fields reserved for SCD2 bookkeeping: {sorted(clash)}")
    missing = [k for k in spec.keys if record.get(k) is None]
    if missing:
        what = "no" if any(k not in record for k in missing) else "a NULL"
        raise InvalidBatchError(
            f"batch {batch_id}: record {pos} of {page} has {what} key column(s) {missing} "
            f"(keys {list(spec.keys)}); nothing was merged: fix the source or Scd2Spec.keys"
        )


def batch_frame(spark: SparkSession, io: FileIO, batch: PendingBatch, spec: Scd2Spec) -> BatchFrame:
    """The batch's records with `_source_file`, their position and the tombstone flag. Declared
    columns (`spec.types`) are converted strictly (TypeConflictError names column, value, type);
    the others are typed by `spec.schema_ddl` or inferred from the JSON. A record without a key
    column or with a NULL key is refused here, before anything is written."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    declared = {name: parse_type(text) for name, text in spec.types.items()}
    marker = spec.delete_marker
    lines: list[str] = []
    present: set[str] = set()
    batch_id = batch.manifest.batch_id
    for pos, (page, record) in enumerate(iter_batch_records(io, batch, exact=True)):
        _check_record(record, page, pos, spec, batch_id)
        deleted = False
        if marker is not None and marker.column in record:
            deleted = _is_marker(record.pop(marker.column), marker.value)
        for name, kind in declared.items():
            if name in record:
                record[name] = convert(name, record[name], kind)
        present.update(record)
        lines.append(
            json.dumps({**record, SOURCE_FILE: page, _POS: pos, DELETED_FLAG: deleted}, default=_json_default)
        )
    extra = [
        StructField(SOURCE_FILE, StringType()),
        StructField(_POS, LongType()),
        StructField(DELETED_FLAG, BooleanType()),
    ]
    extra_ddl = f"{q(SOURCE_FILE)} STRING, {q(_POS)} BIGINT, {q(DELETED_FLAG)} BOOLEAN"
    reader = spark.read.option("mode", "FAILFAST")
    rdd = spark.sparkContext.parallelize(lines, max(1, min(len(lines) // 50_000, 64)))
    bookkeeping = (SOURCE_FILE, _POS, DELETED_FLAG)
    try:
        if spec.schema_ddl:
            df = reader.schema(f"{spec.schema_ddl}, {extra_ddl}").json(rdd)
        elif declared:
            undeclared = present - set(declared)
            inferred = spark.read.json(rdd).schema if undeclared and lines else StructType([])
            fields = [f for f in inferred.fields if f.name in undeclared]
            transport = ", ".join(f"{q(n)} {k.transport_sql}" for n, k in declared.items())
            ddl = ", ".join(
                [transport, *(f"{q(f.name)} {f.dataType.simpleString()}" for f in fields), extra_ddl]
            )
            raw = reader.schema(ddl).json(rdd)
            df = raw.select(
                *[F.expr(k.from_transport(q(n))).alias(n) for n, k in declared.items()],
                *[F.col(q(f.name)) for f in fields],
                *bookkeeping,
            )
        elif not lines:
            return BatchFrame(spark.createDataFrame([], StructType(extra)), frozenset(), 0)
        else:
            df = reader.json(rdd)
    except Exception as exc:  # FAILFAST surfaces malformed or mistyped records here
        raise SchemaMismatchError(
            f"batch {batch_id} cannot be read with the table schema: {str(exc).splitlines()[0]}"
        ) from exc
    data = [c for c in df.columns if c not in bookkeeping]
    return BatchFrame(df.select(*data, *bookkeeping), frozenset(present), len(lines))


def batch_dataframe(spark: SparkSession, io: FileIO, batch: PendingBatch, spec: Scd2Spec) -> DataFrame:
    """`batch_frame(...).df`."""
    return batch_frame(spark, io, batch, spec).df


_ICEBERG_OF_SPARK = {
    "int": "int",
    "bigint": "long",
    "float": "float",
    "double": "double",
    "timestamp": "timestamptz",
    "timestamp_ntz": "timestamp",
    "date": "date",
    "string": "string",
    "boolean": "boolean",
}


def iceberg_type_of(spark_type: Any) -> IcebergType | None:
    """The Iceberg primitive of a Spark type (None for nested types)."""
    text = spark_type.simpleString()
    if text in _ICEBERG_OF_SPARK:
        return parse_type(_ICEBERG_OF_SPARK[text])
    return parse_type(text) if text.startswith("decimal(") else None


def _lossy_values(df: DataFrame, src: str, target: Any, limit: int = 3) -> list[Any]:
    """Values of `src` that the `target` type cannot hold exactly: NULL after the cast, or (for
    numbers) not the same number after it (29.5 in a BIGINT, 3e10 in an INT, 1.005 in DECIMAL(5,2))."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType, StringType

    source_type = df.schema[src].dataType
    col = F.col(q(src))
    cast = col.cast(target)
    bad = col.isNotNull() & cast.isNull()
    if isinstance(target, NumericType) and isinstance(source_type, NumericType):
        bad = bad | (col.isNotNull() & ~cast.cast(source_type).eqNullSafe(col))
    elif isinstance(target, NumericType) and isinstance(source_type, StringType):
        bad = bad | (col.isNotNull() & ~cast.cast("double").eqNullSafe(col.cast("double")))
    return [row[0] for row in df.where(bad).select(col).limit(limit).collect()]


def promotions(spec: Scd2Spec, df: DataFrame, table_schema: StructType) -> dict[str, Any]:
    """Table columns to widen as Iceberg allows (int->long, float->double, decimal precision) when
    `spec.promote_types`, with their wider Spark type: a declared type wider than the table's, or
    batch values that only the wider batch type holds. Without the option a wider declared type is
    refused. Nothing is changed here (apply_schema_plan widens them)."""
    by_lower = {c.lower(): c for c in df.columns}
    promoted: dict[str, Any] = {}
    for f in table_schema.fields:
        src = by_lower.get(f.name.lower())
        if src is None or df.schema[src].dataType == f.dataType:
            continue
        old, new = iceberg_type_of(f.dataType), iceberg_type_of(df.schema[src].dataType)
        declared = f.name in spec.types
        if old is None or new is None or not can_promote(old, new):
            if declared:
                raise SchemaMismatchError(
                    f"column {f.name!r} is declared {new} in Scd2Spec.types but is "
                    f"{old or f.dataType.simpleString()} in {spec.table}, and Iceberg cannot change it "
                    "to that type; declare the table's type"
                )
            continue
        if not spec.promote_types:
            if declared:
                raise SchemaMismatchError(
                    f"column {f.name!r} is declared {new} in Scd2Spec.types but is {old} in {spec.table}; "
                    "set promote_types: true to widen it (Iceberg allows it), or declare the table's type"
                )
            continue
        if not declared and not _lossy_values(df, src, f.dataType, limit=1):
            continue  # the values fit the table's type: no reason to widen it
        promoted[f.name] = df.schema[src].dataType
    return promoted


def align_to_table(df: DataFrame, table_schema: StructType, batch_id: str) -> DataFrame:
    """The batch with exactly the table's data columns, in table order and table types; columns the
    batch lacks are NULL. A value the table type cannot hold exactly is refused, never silently
    NULLed, truncated or rounded."""
    from pyspark.sql import functions as F

    by_lower = {c.lower(): c for c in df.columns}
    cols = []
    for f in table_schema.fields:
        src = by_lower.get(f.name.lower())
        if src is None:
            cols.append(F.lit(None).cast(f.dataType).alias(f.name))
            continue
        if df.schema[src].dataType != f.dataType:
            bad = _lossy_values(df, src, f.dataType)
            if bad:
                raise SchemaMismatchError(
                    f"batch {batch_id}: column {f.name!r} is {f.dataType.simpleString()} in the table, but "
                    f"the batch has {df.schema[src].dataType.simpleString()} values it cannot hold exactly, "
                    f"e.g. {bad}; nothing was merged: fix the source, or declare the column's type in "
                    "Scd2Spec.types (promote_types: true widens int->long, float->double, decimals)"
                )
        cols.append(F.col(q(src)).cast(f.dataType).alias(f.name))
    flag = F.col(DELETED_FLAG) if DELETED_FLAG in df.columns else F.lit(False)
    return df.select(*cols, SOURCE_FILE, _POS, flag.alias(DELETED_FLAG))


# --------------------------------------------------------------------------- idempotency


@dataclass(frozen=True)
class CommitLog:
    """What the table's live snapshots and rows say about merged batches."""

    batch_ids: frozenset[str]
    high_water: datetime | None  # newest as-of of any merged batch


def batch_commits(spark: SparkSession, table: str) -> dict[str, datetime | None]:
    """The batches the table's live snapshot summaries record: batch id -> its as-of time."""
    rows = spark.sql(
        f"SELECT summary['{BATCH_ID_PROPERTY}'] AS b, summary['{BATCH_AS_OF_PROPERTY}'] AS t "
        f"FROM {qtable(table)}.snapshots WHERE summary['{BATCH_ID_PROPERTY}'] IS NOT NULL"
    ).collect()
    return {str(r["b"]): datetime.fromisoformat(str(r["t"])) if r["t"] else None for r in rows}


def commit_log(spark: SparkSession, table: str) -> CommitLog:
    commits = batch_commits(spark, table)
    ids = frozenset(commits)
    times = [t for t in commits.values() if t is not None]
    if not times:
        # Every batch snapshot has expired (or none was ever made): the rows still carry the times.
        data = spark.sql(
            f"SELECT max(unix_micros({q(VALID_FROM)})) AS f, max(unix_micros({q(VALID_TO)})) AS t "
            f"FROM {qtable(table)}"
        ).collect()[0]
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        times = [epoch + timedelta(microseconds=int(v)) for v in (data["f"], data["t"]) if v is not None]
    return CommitLog(ids, max(times) if times else None)


def with_commit_properties(spark: SparkSession, properties: dict[str, str], action: Callable[[], T]) -> T:
    """Run `action` so that every Iceberg commit it makes carries `properties` in its snapshot summary.

    Iceberg's CommitMetadata.withCommitProperties keeps them in a JVM thread-local; PySpark's pinned
    py4j threads run the Python callback's own JVM calls on that same thread.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    sc = spark.sparkContext
    ensure_callback_server_started(sc._gateway)  # type: ignore[no-untyped-call]
    jvm: Any = sc._jvm
    jprops = jvm.java.util.HashMap()
    for key, value in properties.items():
        jprops.put(key, value)

    class _Call:
        def __init__(self) -> None:
            self.result: Any = None
            self.error: BaseException | None = None

        def call(self) -> None:
            try:
                self.result = action()
            except BaseException as exc:  # re-raised on the Python side, not through py4j
                self.error = exc

        class Java:
            implements = ["java.util.concurrent.Callable"]  # noqa: RUF012

    call = _Call()
    runtime_exception = jvm.java.lang.Class.forName("java.lang.RuntimeException")
    jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(jprops, call, runtime_exception)
    if call.error is not None:
        raise call.error
    result: T = call.result
    return result


# --------------------------------------------------------------------------- the merge


def tracked_columns(spec: Scd2Spec, table_schema: StructType) -> list[str]:
    names = table_schema.fieldNames()
    if spec.tracked is not None:
        unknown = [c for c in spec.tracked if c not in names]
        if unknown:
            raise IngestError(f"tracked column(s) {unknown} are not in {spec.table} (columns: {names})")
        return list(spec.tracked)
    return [c for c in names if c not in spec.keys and c not in spec.ignored]


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
    order.append(f"{q(_POS)} DESC")
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


def merge_sql(spec: Scd2Spec, source_view: str, table_schema: StructType) -> str:
    """Delete the current versions the source closes (matched by key: the MERGE reads only the key
    columns of the current rows), insert the closed copies and the new versions (one commit)."""
    names = [*table_schema.fieldNames(), *SCD2_COLUMNS]
    on = " AND ".join(f"t.{q(k)} = s.{q('__mk_' + k)}" for k in spec.keys)
    insert_cols = ", ".join(q(c) for c in names)
    values = ", ".join(f"s.{q(c)}" for c in names)
    return f"""
MERGE INTO {qtable(spec.table)} t
USING {source_view} s
ON {on} AND t.{q(IS_CURRENT)}
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED THEN INSERT ({insert_cols}) VALUES ({values})
"""


def count_changes(changes: DataFrame, spec: Scd2Spec, batch_id: str) -> dict[str, int]:
    """Rows per action; refuses a batch with NULL keys before anything is written."""
    from pyspark.sql import functions as F

    null_key = F.expr(" OR ".join(f"{q(k)} IS NULL" for k in spec.keys)) & (F.col("__action") != "deleted")
    counts: dict[str, int] = {}
    null_keys = 0
    for row in changes.groupBy("__action", null_key.alias("__null_key")).count().collect():
        if row["__null_key"]:
            null_keys += row["count"]
        else:
            counts[row["__action"]] = row["count"]
    if null_keys:
        raise InvalidBatchError(
            f"batch {batch_id} has record(s) with a NULL key {list(spec.keys)} "
            f"({null_keys} key group(s)); nothing was merged: fix the source or the key columns"
        )
    return counts


def merge_batch(
    spark: SparkSession,
    spec: Scd2Spec,
    batch_df: DataFrame,
    *,
    batch_id: str,
    as_of: datetime,
    full_load: bool,
    ingested_at: datetime | None = None,
    present: frozenset[str] | None = None,
    recorded: dict[str, datetime] | None = None,
) -> MergeResult:
    """Merge one batch (columns: data, `_source_file`, position, optionally the tombstone flag) in
    one Iceberg commit. `present`: the data columns some record carries (None: every column of
    `batch_df`). `recorded`: batches recorded outside the table (empty batches merged before the
    table existed), batch id -> as-of. An empty batch before the table exists returns `empty=True`
    and creates nothing: the caller records it (merge_pending writes it to the endpoint's ledger)."""

    ingested_at = ingested_at or datetime.now(UTC)
    exists = table_exists(spark, spec.table)
    commits = dict(recorded or {})
    ids, times = set(commits), list(commits.values())
    if exists:
        log = commit_log(spark, spec.table)
        ids |= log.batch_ids
        times += [log.high_water] if log.high_water is not None else []
    high_water = max(times, default=None)
    if batch_id in ids:
        return MergeResult(batch_id=batch_id, table=spec.table, skipped=True)
    if high_water is not None and as_of <= high_water:
        raise OutOfOrderBatchError(batch_id, as_of.isoformat(), high_water.isoformat())
    empty = batch_df.limit(1).count() == 0
    if empty and full_load and not spec.allow_empty_full_load:
        raise EmptyFullLoadError(batch_id)
    if empty and not exists:
        return MergeResult(batch_id=batch_id, table=spec.table, skipped=False, empty=True)
    # Evaluate: everything that can refuse the batch runs before the table is touched.
    plan = plan_schema(spark, spec, batch_df)
    aligned = align_to_table(batch_df, plan.schema, batch_id)
    seen = {c.lower() for c in (present if present is not None else batch_df.columns)}
    absent = (
        frozenset()
        if spec.absent_means_null or empty
        else frozenset(c for c in plan.schema.fieldNames() if c.lower() not in seen)
    )
    suffix = abs(hash((batch_id, spec.table))) % 10**12
    batch_view, changes_view, source_view = (f"icelake_{p}_{suffix}" for p in ("batch", "changes", "source"))
    aligned.createOrReplaceTempView(batch_view)
    # The one pass over the batch and the current rows; the MERGE below reads this cached result.
    classify = changes_sql(spec, batch_view, plan.schema, full_load, absent, current_rows_sql(spec, plan))
    changes = spark.sql(classify).cache()
    try:
        changes.createOrReplaceTempView(changes_view)
        counts = count_changes(changes, spec, batch_id)
        # Change: the schema, then the MERGE; a MERGE that does not commit restores the schema.
        before = apply_schema_plan(spark, spec, plan)
        try:
            table_schema = data_columns(spark, spec.table)
            source = merge_source_sql(spec, changes_view, table_schema, as_of=as_of, ingested_at=ingested_at)
            spark.sql(source).createOrReplaceTempView(source_view)
            statement = merge_sql(spec, source_view, table_schema)
            properties = {
                BATCH_ID_PROPERTY: batch_id,
                BATCH_AS_OF_PROPERTY: as_of.astimezone(UTC).isoformat(),
            }
            with_commit_properties(spark, properties, lambda: spark.sql(statement).collect())
        except BaseException:
            restore_table(spark, spec, plan, before)
            raise
    finally:
        changes.unpersist()
        for view in (source_view, changes_view, batch_view):
            spark.catalog.dropTempView(view)
    snapshot = spark.sql(
        f"SELECT snapshot_id FROM {qtable(spec.table)}.snapshots "
        f"WHERE summary['{BATCH_ID_PROPERTY}'] = {_sql_string(batch_id)}"
    ).collect()
    new, changed = counts.get("new", 0), counts.get("changed", 0)
    return MergeResult(
        batch_id=batch_id,
        table=spec.table,
        skipped=False,
        snapshot_id=snapshot[0]["snapshot_id"] if snapshot else None,
        inserted=new + changed,
        new_keys=new,
        closed=changed,
        deleted=counts.get("deleted", 0),
        added_columns=plan.added,
        promoted_columns=plan.promoted,
        empty=empty,
    )


def merge_pending(
    spark: SparkSession,
    spec: Scd2Spec,
    io: FileIO,
    batches: Iterable[PendingBatch],
    *,
    ingested_at: datetime | None = None,
    quarantine: bool = False,
) -> list[MergeResult]:
    """Merge landed batches oldest first, one commit each (what the Glue job runs).

    `quarantine`: a batch that cannot merge for a reason inside its data (InvalidBatchError:
    malformed JSON, a missing or NULL key, a type conflict, an empty full load) is moved to
    `quarantine/{source}/{endpoint}/{run_id}/` with a reason.json, and the later batches go on.
    Without it the error is raised. A requeued batch that is no longer newer than everything
    merged goes back to quarantine with that reason."""
    ordered = sorted(batches, key=lambda b: (b.manifest.fetched_at, b.manifest.run_id))
    results = []
    for batch in ordered:
        recorded = read_ledger(io, batch)
        try:
            frame = batch_frame(spark, io, batch, spec)
            result = merge_batch(
                spark,
                spec,
                frame.df,
                batch_id=batch.manifest.batch_id,
                as_of=batch.manifest.fetched_at,
                full_load=batch.manifest.full_load,
                ingested_at=ingested_at,
                present=frame.present,
                recorded=recorded,
            )
        except (InvalidBatchError, OutOfOrderBatchError) as exc:
            requeued_late = isinstance(exc, OutOfOrderBatchError) and batch.manifest.requeued_at is not None
            if not quarantine or not (isinstance(exc, InvalidBatchError) or requeued_late):
                raise
            where = quarantine_batch(io, batch, exc, keys=spec.keys)
            result = MergeResult(
                batch_id=batch.manifest.batch_id,
                table=spec.table,
                skipped=False,
                quarantined_to=where,
                reason=str(exc),
            )
        if result.empty and not result.skipped:
            record_in_ledger(io, batch)
        results.append(result)
    return results


# --------------------------------------------------------------------------- maintenance


def compact(spark: SparkSession, table: str, config: MaintenanceConfig) -> dict[str, int]:
    """rewrite_data_files (files with at least `delete_file_threshold` delete files are rewritten with
    the deletes applied, small files packed towards the target size), then
    rewrite_position_delete_files (what deletes are left, and dangling ones, compacted away)."""
    if config.delete_file_threshold == 0:
        return {}
    catalog, database, name = table.split(".")
    ident = _sql_string(f"{database}.{name}")
    options = {
        "delete-file-threshold": str(config.delete_file_threshold),
        "target-file-size-bytes": str(config.target_file_size_bytes),
        "min-input-files": str(config.min_input_files),
        "remove-dangling-deletes": "true",
    }
    opts = ", ".join(f"{_sql_string(k)}, {_sql_string(v)}" for k, v in options.items())
    data = spark.sql(
        f"CALL {q(catalog)}.system.rewrite_data_files(table => {ident}, options => map({opts}))"
    ).collect()[0]
    deletes = spark.sql(
        f"CALL {q(catalog)}.system.rewrite_position_delete_files(table => {ident}, "
        "options => map('rewrite-all', 'true'))"
    ).collect()[0]
    return {
        "rewritten_data_files": int(data["rewritten_data_files_count"]),
        "added_data_files": int(data["added_data_files_count"]),
        "removed_delete_files": int(data.asDict().get("removed_delete_files_count") or 0),
        "rewritten_delete_files": int(deletes["rewritten_delete_files_count"]),
        "added_delete_files": int(deletes["added_delete_files_count"]),
    }


def maintain(
    spark: SparkSession, table: str, config: MaintenanceConfig, now: datetime | None = None
) -> dict[str, Any]:
    """Compact (data files with deletes, position-delete files), expire old snapshots, rewrite
    manifests, remove orphan files (Iceberg's Spark procedures)."""
    now = now or datetime.now(UTC)
    catalog, database, name = table.split(".")
    ident = _sql_string(f"{database}.{name}")
    compacted = compact(spark, table, config)
    expire_before = ts_constant(now - timedelta(days=config.expire_older_than_days))
    orphan_before = ts_constant(now - timedelta(hours=config.orphan_older_than_hours))
    expired = spark.sql(
        f"CALL {q(catalog)}.system.expire_snapshots(table => {ident}, older_than => {expire_before}, "
        f"retain_last => {config.retain_last})"
    ).collect()[0]
    rewritten = spark.sql(f"CALL {q(catalog)}.system.rewrite_manifests(table => {ident})").collect()[0]
    orphans = spark.sql(
        f"CALL {q(catalog)}.system.remove_orphan_files(table => {ident}, older_than => {orphan_before})"
    ).collect()
    return {
        **compacted,
        "expired_data_files": int(expired["deleted_data_files_count"]),
        "expired_manifest_lists": int(expired["deleted_manifest_lists_count"]),
        "rewritten_manifests": int(rewritten["rewritten_manifests_count"]),
        "added_manifests": int(rewritten["added_manifests_count"]),
        "orphan_files_removed": [str(r["orphan_file_location"]) for r in orphans],
    }
