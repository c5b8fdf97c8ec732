"""A few hundred copies against the S3 model (`benchmarks/s3_model.py`, its own process) with a
tiny per-prefix limit: S3 answers SlowDown, and the table still migrates, to exactly the bytes
an unthrottled run writes.

Given a pyiceberg table of 320 data files over 8 partition prefixes, one holding 30 % of them,
published to the model's source bucket; when it is migrated once with no limits and no latency,
and again (to the same target, emptied) at 8 writes and 12 reads a second per prefix, then the
second run saw SlowDowns, finished, verified every copy, and left the target identical, key for
key and digest for digest (every metadata file's bytes; every data object's identity).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from benchmarks.s3_model import ModelProcess, start_model
from icelake.aws.clients import new_session
from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.errors import CopyVerificationError
from icelake.migrate import migrate_table
from icelake.migrate.copy.objects import CopySettings, copy_file
from icelake.migrate.settings import EngineSettings

SOURCE, TARGET = "model-source", "model-target"
HOT_FILES, OTHER_FILES, OTHER_PARTITIONS = 96, 32, 7  # 96 + 7 x 32 = 320 files, 30 % in p=hot


@pytest.fixture(scope="module")
def model() -> Iterator[ModelProcess]:
    with start_model("--seed", "7", "--writes-per-s", "0", "--reads-per-s", "0", "--no-latency") as m:
        yield m


def _client(model: ModelProcess) -> Any:
    session = new_session(aws_access_key_id="model", aws_secret_access_key="model", region_name="us-east-1")
    return session.client("s3", endpoint_url=model.endpoint)


def _skewed_table(root: Path) -> str:
    """Local pyiceberg table, one append: a file per row (the target file size is one byte)."""
    cat = SqlCatalog("skew", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.create_namespace_if_not_exists("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "p", StringType(), required=False)
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="p"))
    props = {"write.target-file-size-bytes": "1"}
    table = cat.create_table("db.t", schema=schema, partition_spec=spec, properties=props)
    parts = ["hot"] * HOT_FILES + [f"p{i}" for i in range(OTHER_PARTITIONS) for _ in range(OTHER_FILES)]
    arrow = schema.as_arrow()
    rows = [pa.record_batch({"id": [i], "p": [p]}, schema=arrow) for i, p in enumerate(parts)]
    table.append(pa.Table.from_batches(rows, schema=arrow))
    return cat.load_table("db.t").metadata_location


def _migrate(model: ModelProcess, source_metadata: str) -> Any:
    return migrate_table(
        source_metadata,
        f"s3://{TARGET}/w/t",
        src_io=S3FileIO(_client(model)),
        dst_io=S3FileIO(_client(model)),
        settings=EngineSettings(processes=1),
    )


@pytest.mark.slow
def test_slowdowns_never_fail_a_table_and_change_no_byte(model: ModelProcess, tmp_path: Path) -> None:
    s3 = _client(model)
    for bucket in (SOURCE, TARGET):
        s3.create_bucket(Bucket=bucket)
    published = migrate_table(
        _skewed_table(tmp_path), f"s3://{SOURCE}/lake/db/t", src_io=LocalFileIO(), dst_io=S3FileIO(s3)
    )
    source = published.target_metadata_location
    data_prefixes = {k.rpartition("/")[0] for k in model.objects(SOURCE) if "/data/" in k}
    assert len(data_prefixes) == 1 + OTHER_PARTITIONS

    plain = _migrate(model, source)
    unthrottled = model.objects(TARGET)
    assert plain.files_copied == 320 and plain.files_verified == 320

    model.clear(TARGET)
    model.configure(
        reset=True,
        per_prefix_writes_per_s=8,
        per_prefix_reads_per_s=12,
        latency=True,
        latency_median_ms=2,
        latency_p99_ms=10,
    )
    tight = _migrate(model, source)
    stats = model.stats()

    assert stats["slowdowns_by_kind"].get("COPY", 0) > 0, stats["slowdowns_by_kind"]
    assert tight.files_copied == 320 and tight.files_verified == 320
    assert model.objects(TARGET) == unthrottled


def test_the_copy_names_the_planned_object_and_a_replaced_one_is_refused(model: ModelProcess) -> None:
    # Given an object the plan listed, then replaced at the source by one of the same size
    model.configure(reset=True, per_prefix_writes_per_s=0, per_prefix_reads_per_s=0, latency=False)
    s3 = _client(model)
    for bucket in ("match-source", "match-target"):
        s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket="match-source", Key="d/a.parquet", Body=b"a" * 100)
    s3.put_object(Bucket="match-source", Key="d/b.parquet", Body=b"b" * 100)
    src, dst = S3FileIO(_client(model)), S3FileIO(_client(model))
    listed = dict(src.list("s3://match-source/d"))
    s3.put_object(Bucket="match-source", Key="d/b.parquet", Body=b"c" * 100)
    model.configure(reset=True)

    # When both are copied as planned
    a, b = "s3://match-source/d/a.parquet", "s3://match-source/d/b.parquet"
    verified = copy_file(src, a, listed[a], dst, "s3://match-target/d/a.parquet", CopySettings())
    with pytest.raises(CopyVerificationError, match="changed or disappeared after planning"):
        copy_file(src, b, listed[b], dst, "s3://match-target/d/b.parquet", CopySettings())

    # Then the unchanged one is one CopyObject, verified by its ETag; S3 refused the replaced one
    # (CopySourceIfMatch), so nothing was written for it
    assert verified
    assert model.stats()["requests_by_kind"] == {"COPY": 1}  # no HEAD; the model counts no refusal
    assert sorted(model.objects("match-target")) == ["d/a.parquet"]


def test_the_models_listing_answers_what_was_written_page_by_page(model: ModelProcess) -> None:
    # Given 1,200 objects whose keys hold XML's special characters, written with two checksums
    # (the model writes a listing's XML as text: each key must be escaped)
    model.configure(reset=True, per_prefix_writes_per_s=0, per_prefix_reads_per_s=0, latency=False)
    s3 = _client(model)
    s3.create_bucket(Bucket="listing")
    written = {}
    for i in range(1200):
        key = f"a&b/<c>/'{i:04d}\".parquet"
        algorithm = "CRC32C" if i % 2 else "SHA256"
        answer = s3.put_object(Bucket="listing", Key=key, Body=b"x" * (i % 7), ChecksumAlgorithm=algorithm)
        written[key] = (i % 7, answer["ETag"], algorithm)

    # When the prefix is listed through its pages, and from after a key
    pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket="listing", Prefix="a&b/"))
    after = sorted(written)[1099]
    rest = s3.list_objects_v2(Bucket="listing", Prefix="a&b/", StartAfter=after)

    # Then every key comes back once, in order, with its size, ETag and checksum's algorithm
    listed = {
        c["Key"]: (c["Size"], c["ETag"], (c.get("ChecksumAlgorithm") or [None])[0])
        for p in pages
        for c in p["Contents"]
    }
    assert [p["KeyCount"] for p in pages] == [1000, 200] and pages[0]["IsTruncated"]
    assert listed == written
    assert [c["Key"] for c in rest["Contents"]] == sorted(written)[1100:]
