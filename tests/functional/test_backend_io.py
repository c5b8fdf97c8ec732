"""`icelake.local.backend_io`: a benchmark's table seeded straight into the embedded S3's store is,
to everything that reads it through the server, the table a publish through the server leaves."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from pyiceberg.catalog.sql import SqlCatalog

from icelake.local.lake import SOURCE_BUCKET
from tests.lake import Lake, add_source_table


def _as_s3_answers(lake: Lake, prefix: str) -> dict[str, dict[str, Any]]:
    """Each object under `prefix` as a listing, a HEAD with checksums and a GET answer for it."""
    s3 = lake.source.client("s3")
    out: dict[str, dict[str, Any]] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=SOURCE_BUCKET, Prefix=prefix):
        for obj in page.get("Contents", []):
            head = s3.head_object(Bucket=SOURCE_BUCKET, Key=obj["Key"], ChecksumMode="ENABLED")
            out[obj["Key"].removeprefix(prefix)] = {
                "size": obj["Size"],
                "etag": obj["ETag"],
                "listed_checksum": obj.get("ChecksumAlgorithm"),
                "sha256": head.get("ChecksumSHA256"),
                "body": s3.get_object(Bucket=SOURCE_BUCKET, Key=obj["Key"])["Body"].read(),
            }
    return out


def test_a_direct_publish_leaves_what_a_publish_through_the_server_leaves(lake: Lake) -> None:
    # Given a pyiceberg table of two commits published through the server
    add_source_table(lake, "orders_http", [[1, 2, 3], [4, 5]])
    root = lake.local_root / "sales" / "orders_http"
    local = SqlCatalog("orders_http", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")

    # When the same local table is published under another name, its files written into the store
    lake.publish(
        "sales", "orders_direct", local.load_table("sales.orders_http").metadata_location, direct=True
    )

    # Then the server answers for every object as for one it was sent: the size, the MD5 ETag, the
    # SHA-256 checksum a HEAD returns and a listing names, and the bytes; the data files are the same
    # objects (metadata files differ by the table location they name)
    http = _as_s3_answers(lake, "lake/sales/orders_http/")
    direct = _as_s3_answers(lake, "lake/sales/orders_direct/")
    assert sorted(http) == sorted(direct) and len(http) >= 8, sorted(http)
    for key, got in direct.items():
        body = got["body"]
        assert got["size"] == len(body), key
        assert got["etag"] == f'"{hashlib.md5(body).hexdigest()}"', key
        assert got["sha256"] == base64.b64encode(hashlib.sha256(body).digest()).decode(), key
        assert got["listed_checksum"] == http[key]["listed_checksum"] == ["SHA256"], key
    data = [key for key in http if key.endswith(".parquet")]
    assert len(data) == 2 and all(direct[key] == http[key] for key in data)
