"""A landed batch read into a DataFrame: its records with their page, position and tombstone flag,
declared columns converted strictly, records without a key refused before anything is written."""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from icelake.aws.fileio import FileIO
from icelake.errors import InvalidBatchError, SchemaMismatchError
from icelake.ingest.landing import iter_batch_records
from icelake.ingest.models import DeleteMarker, PendingBatch, Scd2Spec
from icelake.ingest.scd2.names import DELETED_FLAG, POSITION, RESERVED, SOURCE_FILE, q
from icelake.ingest.types import IcebergType, convert, parse_type

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession


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


_BOOKKEEPING = (SOURCE_FILE, POSITION, DELETED_FLAG)
_BOOKKEEPING_DDL = f"{q(SOURCE_FILE)} STRING, {q(POSITION)} BIGINT, {q(DELETED_FLAG)} BOOLEAN"


def _is_tombstone(record: dict[str, Any], marker: DeleteMarker | None) -> bool:
    """Whether a record is an API tombstone; the marker column is taken out of the record."""
    if marker is not None and marker.column in record:
        return _is_marker(record.pop(marker.column), marker.value)
    return False


def _json_lines(
    io: FileIO, batch: PendingBatch, spec: Scd2Spec, declared: dict[str, IcebergType]
) -> tuple[list[str], set[str]]:
    """Each record, checked, its tombstone flag decided and its declared columns converted, as one
    JSON line with its page and position; and the data columns at least one record carries."""
    lines: list[str] = []
    present: set[str] = set()
    batch_id = batch.manifest.batch_id
    for pos, (page, record) in enumerate(iter_batch_records(io, batch, exact=True)):
        _check_record(record, page, pos, spec, batch_id)
        deleted = _is_tombstone(record, spec.delete_marker)
        for name, kind in declared.items():
            if name in record:
                record[name] = convert(name, record[name], kind)
        present.update(record)
        lines.append(
            json.dumps(
                {**record, SOURCE_FILE: page, POSITION: pos, DELETED_FLAG: deleted}, default=_json_default
            )
        )
    return lines, present


def _read_declared(
    spark: SparkSession,
    reader: DataFrameReader,
    rdd: RDD[str],
    declared: dict[str, IcebergType],
    undeclared: set[str],
    lines: list[str],
) -> DataFrame:
    """The lines with the declared columns read in their transport type and converted back, and the
    undeclared ones some record carries typed by inference."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    inferred = spark.read.json(rdd).schema if undeclared and lines else StructType([])
    fields = [f for f in inferred.fields if f.name in undeclared]
    transport = ", ".join(f"{q(n)} {k.transport_sql}" for n, k in declared.items())
    ddl = ", ".join(
        [transport, *(f"{q(f.name)} {f.dataType.simpleString()}" for f in fields), _BOOKKEEPING_DDL]
    )
    raw = reader.schema(ddl).json(rdd)
    return raw.select(
        *[F.expr(k.from_transport(q(n))).alias(n) for n, k in declared.items()],
        *[F.col(q(f.name)) for f in fields],
        *_BOOKKEEPING,
    )


def batch_frame(spark: SparkSession, io: FileIO, batch: PendingBatch, spec: Scd2Spec) -> BatchFrame:
    """The batch's records with `_source_file`, their position and the tombstone flag. Declared
    columns (`spec.types`) are converted strictly (TypeConflictError names column, value, type);
    the others are typed by `spec.schema_ddl` or inferred from the JSON. A record without a key
    column or with a NULL key is refused here, before anything is written."""
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    declared = {name: parse_type(text) for name, text in spec.types.items()}
    lines, present = _json_lines(io, batch, spec, declared)
    batch_id = batch.manifest.batch_id
    if not spec.schema_ddl and not declared and not lines:  # nothing to read, nothing to type it by
        extra = [
            StructField(SOURCE_FILE, StringType()),
            StructField(POSITION, LongType()),
            StructField(DELETED_FLAG, BooleanType()),
        ]
        return BatchFrame(spark.createDataFrame([], StructType(extra)), frozenset(), 0)
    reader = spark.read.option("mode", "FAILFAST")
    rdd = spark.sparkContext.parallelize(lines, max(1, min(len(lines) // 50_000, 64)))
    try:
        if spec.schema_ddl:
            df = reader.schema(f"{spec.schema_ddl}, {_BOOKKEEPING_DDL}").json(rdd)
        elif declared:
            df = _read_declared(spark, reader, rdd, declared, present - set(declared), lines)
        else:
            df = reader.json(rdd)
    except Exception as exc:  # FAILFAST surfaces malformed or mistyped records here
        raise SchemaMismatchError(
            f"batch {batch_id} cannot be read with the table schema: {str(exc).splitlines()[0]}"
        ) from exc
    data = [c for c in df.columns if c not in _BOOKKEEPING]
    return BatchFrame(df.select(*data, *_BOOKKEEPING), frozenset(present), len(lines))


def batch_dataframe(spark: SparkSession, io: FileIO, batch: PendingBatch, spec: Scd2Spec) -> DataFrame:
    """`batch_frame(...).df`."""
    return batch_frame(spark, io, batch, spec).df
