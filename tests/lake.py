"""The embedded two-account lake, plus tables written by pyiceberg for the workflow tests."""

from __future__ import annotations

import os

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import In

from icelake.local.lake import (
    SOURCE_ACCOUNT,
    SOURCE_BUCKET,
    TARGET_ACCOUNT,
    TARGET_BUCKET,
    Lake,
    bucket_state,
    build_lake,
    catalog_state,
)

__all__ = [
    "SOURCE_ACCOUNT",
    "SOURCE_BUCKET",
    "TARGET_ACCOUNT",
    "TARGET_BUCKET",
    "Lake",
    "add_source_table",
    "bucket_state",
    "build_lake",
    "catalog_state",
    "commit",
    "s3_props",
]


def add_source_table(lake: Lake, name: str, batches: list[list[int]], database: str = "sales") -> str:
    """Write a table with pyiceberg locally, move it to the source bucket, register it in Glue."""
    root = lake.local_root / database / name
    root.mkdir(parents=True, exist_ok=True)
    cat = SqlCatalog(name, uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.create_namespace_if_not_exists(database)
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = cat.create_table(f"{database}.{name}", schema=schema)
    for ids in batches:
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}, schema=schema))
    return lake.publish(database, name, cat.load_table(f"{database}.{name}").metadata_location)


def commit(lake: Lake, name: str, ids: list[int], database: str = "sales") -> str:
    """One more pyiceberg commit on a table made by `add_source_table`, published to the source."""
    root = lake.local_root / database / name
    cat = SqlCatalog(name, uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    table = cat.load_table(f"{database}.{name}")
    rows = pa.table(
        {"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}, schema=table.schema().as_arrow()
    )
    table.append(rows)
    return lake.publish(database, name, cat.load_table(f"{database}.{name}").metadata_location)


def delete_ids(lake: Lake, name: str, ids: list[int], database: str = "sales") -> str:
    """A pyiceberg delete on a table made by `add_source_table`, published to the source."""
    root = lake.local_root / database / name
    cat = SqlCatalog(name, uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.load_table(f"{database}.{name}").delete(In("id", ids))
    return lake.publish(database, name, cat.load_table(f"{database}.{name}").metadata_location)


def s3_props() -> dict[str, str]:
    """pyiceberg properties to read the embedded AWS's buckets (moto does not enforce accounts)."""
    return {
        "s3.endpoint": os.environ["AWS_ENDPOINT_URL"],
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
        "s3.region": "us-east-1",
    }
