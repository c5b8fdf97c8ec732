"""Views for the view tests: Glue entries as Athena, Spark and Glue's multi-dialect views keep
them, and the proof by an engine: each view's SQL run on local Spark over its side's tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
from pyiceberg.table import StaticTable

from icelake.aws import catalog
from icelake.objects import envelope, kinds
from icelake.objects.sql import to_spark
from tests.lake import s3_props


def athena_view(name: str, sql: str, schema: str, columns: list[tuple[str, str]]) -> dict[str, Any]:
    """A view as Athena's CREATE VIEW leaves it in Glue: the envelope, `presto_view`, its columns."""
    body = {
        "originalSql": sql,
        "catalog": "awsdatacatalog",
        "schema": schema,
        "columns": [{"name": n, "type": t} for n, t in columns],
        "owner": "arn:aws:iam::111111111111:role/analyst",
        "runAsInvoker": True,
    }
    hive = {"varchar": "string", "bigint": "bigint", "double": "double"}
    return {
        "Name": name,
        "TableType": "VIRTUAL_VIEW",
        "ViewOriginalText": envelope.encode(body),
        "ViewExpandedText": "/* Presto View */",
        "Parameters": {"presto_view": "true", "comment": "Presto View"},
        "StorageDescriptor": {
            "Columns": [{"Name": n, "Type": hive[t]} for n, t in columns],
            "SerdeInfo": {},
            "Location": "",
        },
    }


def spark_view(name: str, sql: str) -> dict[str, Any]:
    """A view as Spark's CREATE VIEW leaves it in a Glue catalog: plain SQL in both texts."""
    return {
        "Name": name,
        "TableType": "VIRTUAL_VIEW",
        "ViewOriginalText": sql,
        "ViewExpandedText": sql,
        "Parameters": {
            "view.catalogAndNamespace.numParts": "2",
            "view.catalogAndNamespace.part.0": "spark_catalog",
        },
    }


def spark_sql_of(view: dict[str, Any]) -> str:
    """The SQL Spark runs for a Glue view: Athena's transpiled from Trino, the Spark text, or a
    multi-dialect view's SPARK representation."""
    kind = kinds.kind_of(view)
    if kind == kinds.ATHENA_VIEW:
        return to_spark(envelope.decode(view["ViewOriginalText"])["originalSql"], "trino")
    if kind == kinds.MULTI_DIALECT_VIEW:
        reps = view["ViewDefinition"]["Representations"]
        return next(r["ViewOriginalText"] for r in reps if r["Dialect"] == "SPARK")
    return str(view["ViewOriginalText"])


_SPARK_TYPES = {pa.int64(): "bigint", pa.int32(): "int", pa.float64(): "double", pa.string(): "string"}


def view_rows(
    spark: Any, session: boto3.Session, database: str, views: list[str], where: Path
) -> dict[str, list[tuple]]:
    """Each of `views` (in an order that puts a view after those it reads) run by Spark over the
    Iceberg tables of `database` in `session`'s Glue catalog: its rows, sorted. The tables are read
    with pyiceberg (local Spark cannot read s3://) into Spark tables of the same names, in `where`."""
    glue = session.client("glue")
    spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")
    spark.sql(f"CREATE DATABASE {database} LOCATION '{where / database}'")
    entries = {t["Name"]: t for t in catalog.list_tables(glue, database)}
    for name, table in entries.items():
        if catalog.is_iceberg(table):
            rows = (
                StaticTable.from_metadata(catalog.metadata_location(table) or "", s3_props())
                .scan()
                .to_arrow()
            )
            ddl = ", ".join(f"`{f.name}` {_SPARK_TYPES.get(f.type, 'string')}" for f in rows.schema)
            frame = spark.createDataFrame([tuple(r.values()) for r in rows.to_pylist()], ddl)
            frame.write.saveAsTable(f"{database}.{name}")
    spark.sql(f"USE {database}")
    found = {}
    for name in views:
        spark.sql(f"CREATE VIEW {database}.{name} AS {spark_sql_of(entries[name])}")
        found[name] = sorted(tuple(r) for r in spark.table(f"{database}.{name}").collect())
    spark.sql("USE default")
    spark.sql(f"DROP DATABASE {database} CASCADE")
    return found
