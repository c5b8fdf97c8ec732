"""The SCD2 table's DDL and schema evolution: the table from code, the schema a batch needs (added
columns, widened types) planned and checked before anything changes, applied just before the MERGE,
and restored when the MERGE does not commit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icelake.errors import InvalidBatchError, SchemaMismatchError
from icelake.ingest.models import Scd2Spec
from icelake.ingest.scd2.names import (
    DELETED_FLAG,
    IS_CURRENT,
    POSITION,
    RESERVED,
    SCD2_COLUMNS,
    SOURCE_FILE,
    VALID_TO,
    q,
    qtable,
    sql_string,
)
from icelake.ingest.types import IcebergType, can_promote, parse_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

DEFAULT_PROPERTIES = {
    "format-version": "2",
    "write.merge.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "100",
}


def table_exists(spark: SparkSession, table: str) -> bool:
    return bool(spark.catalog.tableExists(table))


def create_table_ddl(spec: Scd2Spec, data_schema: StructType) -> str:
    """CREATE TABLE for `spec`: the data columns of `data_schema`, then the SCD2 columns."""
    lines = []
    for f in data_schema.fields:
        comment = spec.column_comments.get(f.name) or ("business key" if f.name in spec.keys else None)
        not_null = " NOT NULL" if f.name in spec.keys else ""
        suffix = f" COMMENT {sql_string(comment)}" if comment else ""
        lines.append(f"{q(f.name)} {f.dataType.simpleString()}{not_null}{suffix}")
    for name, (sql_type, comment) in SCD2_COLUMNS.items():
        not_null = "" if name == VALID_TO else " NOT NULL"
        lines.append(f"{q(name)} {sql_type}{not_null} COMMENT {sql_string(comment)}")
    properties = {
        **DEFAULT_PROPERTIES,
        "icelake.scd2.keys": ",".join(spec.keys),
        "icelake.scd2.order-by": spec.order_by or "",
        **spec.properties,
    }
    props = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in properties.items())
    columns = ",\n  ".join(lines)
    return (
        f"CREATE TABLE IF NOT EXISTS {qtable(spec.table)} (\n  {columns}\n) USING iceberg\n"
        # Current rows apart from history: the change detection and the MERGE read only them,
        # however long the history grows (and so do readers asking for the current state).
        f"PARTITIONED BY ({q(IS_CURRENT)})\n"
        f"COMMENT {sql_string(spec.comment)}\nTBLPROPERTIES ({props})"
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

    batch_schema = batch_df.drop(SOURCE_FILE, POSITION, DELETED_FLAG).schema
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
            f"ALTER TABLE {qtable(spec.table)} ADD COLUMN {q(name)} {kind} COMMENT {sql_string(comment)}"
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


def same_type(a: Any, b: Any) -> bool:
    """Whether two Spark types are the same but for nullability (a struct the batch built with
    required fields is an Iceberg struct of optional ones): a cast between them loses nothing, so
    no pass over the batch needs to check its values."""
    return bool(a == b or a.simpleString() == b.simpleString())


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
        if src is None or same_type(df.schema[src].dataType, f.dataType):
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
        if not same_type(df.schema[src].dataType, f.dataType):
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
    return df.select(*cols, SOURCE_FILE, POSITION, flag.alias(DELETED_FLAG))
