"""Copies into a table bucket's storage (S3 Tables) are streamed through the engine, on the
embedded AWS: moto's s3tables gives each table a warehouse location, a bucket of its own named
`...--table-s3`, which S3 Tables' storage serves with PutObject, GetObject, HeadObject and the
multipart upload calls only (no CopyObject, UploadPartCopy, ListObjects or DeleteObject).

The embedded AWS refuses the other operations there (icelake/local/s3tables/), and each test
also records what the clients send (botocore's before-parameter-build event; request_count.py
counts the same way) and asserts that nothing outside the supported list reaches the table's
storage, as AWS's page lists them with their headers (table_storage.TABLE_STORAGE_PARAMETERS).
awscrt is installed here (requirements-dev.txt): moto computes real CRC64NVME checksums, and the
streamed copy checks the bytes it reads against them."""

from __future__ import annotations

import base64
import zlib
from collections import Counter
from typing import Any

import pytest
from moto.s3.models import s3_backends
from pyiceberg.table import StaticTable

from icelake.assess.estimate.model import copy_seconds
from icelake.aws.fileio import ObjectInfo, S3FileIO
from icelake.aws.request_count import REQUEST_KINDS, added, kind_of
from icelake.errors import CopyVerificationError, UnsafeTargetError
from icelake.migrate import migrate_table
from icelake.migrate.copy.common import CopySettings
from icelake.migrate.copy.engine import migration_requests, run_migration
from icelake.migrate.copy.objects import copy_file_proved, copy_requests
from icelake.migrate.copy.table_storage import (
    NO_DELETE,
    TABLE_STORAGE_OPERATIONS,
    TABLE_STORAGE_PARAMETERS,
    is_table_storage,
)
from icelake.migrate.models import MigrationResult
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.prune import not_pruned, prune_target
from icelake.migrate.settings import EngineSettings
from icelake.throughput import ThroughputModel
from tests.lake import SOURCE_BUCKET, Lake, add_source_table, bucket_state, s3_props
from tests.moto_keys import damage_recorded_checksum

MiB = 1024**2
# S3's smallest part is 5 MiB: a part size of 5 MiB makes an 11 MiB file three parts.
SETTINGS = CopySettings(stream_part_size=5 * MiB, stream_parts_in_memory=2)


def _warehouse(lake: Lake, table: str = "orders") -> str:
    """A new S3 Tables table's warehouse location (its storage bucket), in the target account."""
    s3t = lake.target.client("s3tables")
    arn = s3t.create_table_bucket(name=f"lake-{table}")["arn"]
    s3t.create_namespace(tableBucketARN=arn, namespace=["sales"])
    s3t.create_table(tableBucketARN=arn, namespace="sales", name=table, format="ICEBERG")
    location = s3t.get_table(tableBucketARN=arn, namespace="sales", name=table)["warehouseLocation"]
    assert is_table_storage(location), location
    return str(location)


class Sent:
    """The S3 operations (name, bucket and parameters) a client sends from now on."""

    def __init__(self, *ios: S3FileIO) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        for io in ios:
            io.client.meta.events.register("before-parameter-build.s3", self._called)

    def _called(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if "Body" in params:  # kept as its length (botocore may have made it a stream)
            body = params["Body"]
            params = {**params, "Body": len(body) if isinstance(body, bytes) else body.getbuffer().nbytes}
        self.calls.append((model.name, params))

    def to_table_storage(self) -> list[tuple[str, dict[str, Any]]]:
        return [(op, p) for op, p in self.calls if is_table_storage(f"s3://{p.get('Bucket', '')}/")]

    def unsupported(self) -> list[str]:
        """The operations, and the parameters of supported ones, that AWS does not list for a
        table's storage (`TABLE_STORAGE_PARAMETERS`) and that reached one."""
        out = set()
        for op, params in self.to_table_storage():
            if op not in TABLE_STORAGE_OPERATIONS:
                out.add(op)
            else:
                allowed = TABLE_STORAGE_PARAMETERS[op] | {"Bucket", "Key"}
                out.update(f"{op} {name}" for name in params if name not in allowed)
        return sorted(out)

    def counted(self) -> dict[str, int]:
        kinds = {"GetObject": "get", "HeadObject": "head", "PutObject": "put", "UploadPart": "put"}
        kinds |= {"CreateMultipartUpload": "put", "CompleteMultipartUpload": "put"}
        out: dict[str, int] = {}
        for op, _ in self.calls:
            out[kinds.get(op, op)] = out.get(kinds.get(op, op), 0) + 1
        return out


def _ios(lake: Lake) -> tuple[S3FileIO, S3FileIO]:
    return S3FileIO(lake.source.client("s3")), S3FileIO(lake.target.client("s3"))


def _source_object(lake: Lake, key: str, body: bytes) -> tuple[str, ObjectInfo]:
    lake.source.client("s3").put_object(
        Bucket=SOURCE_BUCKET, Key=key, Body=body, ChecksumAlgorithm="CRC64NVME"
    )
    uri = f"s3://{SOURCE_BUCKET}/{key}"
    info = S3FileIO(lake.source.client("s3")).stat(uri)
    assert info is not None and info.checksum is not None
    return uri, info


def _open_uploads(bucket: str) -> int:
    """The multipart uploads in progress on a table's storage, as moto (in this process) holds them."""
    for regions in s3_backends.values():
        for backend in regions.values():
            if bucket in backend.table_buckets:
                return len(backend.table_buckets[bucket].multiparts)
    raise LookupError(bucket)


def _crc32(body: bytes) -> str:
    return base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()


@pytest.mark.slow
def test_small_and_multipart_files_are_streamed_verified_and_bounded(lake: Lake) -> None:
    # Given a table's warehouse location and two source files: one under a part, one of three parts,
    # and a target IO that sends each bucket's requests to its region, as the workflow's does (a
    # table's storage answers no GetBucketLocation: its region is its table bucket's, the target's)
    warehouse = _warehouse(lake)
    src = S3FileIO(lake.source.client("s3"))
    dst = S3FileIO(lake.target.client("s3"), regions=lake.target)
    small_body = b"parquet bytes " * 1000
    big_body = bytes(range(256)) * (11 * MiB // 256)
    small, small_info = _source_object(lake, "lake/t/data/small.parquet", small_body)
    big, big_info = _source_object(lake, "lake/t/data/big.parquet", big_body)
    sent = Sent(src, dst)

    # When each is copied into the table's storage
    small_copy = copy_file_proved(src, small, small_info, dst, f"{warehouse}/data/small.parquet", SETTINGS)
    big_copy = copy_file_proved(src, big, big_info, dst, f"{warehouse}/data/big.parquet", SETTINGS)
    counted = sent.counted()  # the copies' requests (the reads below are the test's)

    # Then both hold the source's bytes, verified by the source's own CRC64NVME
    assert dst.read(f"{warehouse}/data/small.parquet") == small_body
    assert dst.read(f"{warehouse}/data/big.parquet") == big_body
    # (the PutObject carries the CRC32 of the bytes: table storage takes no CRC64NVME header, so the
    # bytes read were checked against the source's CRC64NVME here, and S3 checked what it received)
    assert small_copy.verified and small_copy.checksum == ("CRC32", _crc32(small_body))
    assert big_copy.verified and big_copy.etag is not None and big_copy.etag.endswith("-3")
    # ... with only the operations and headers S3 Tables' storage takes, each write conditional
    assert sent.unsupported() == []
    writes = [p for op, p in sent.to_table_storage() if op in ("PutObject", "CompleteMultipartUpload")]
    assert len(writes) == 2 and all(p.get("IfNoneMatch") == "*" for p in writes)
    # ... the large one in parts of the bounded size, read by ranged GETs no larger
    parts = [p for op, p in sent.calls if op == "UploadPart"]
    assert len(parts) == 3 and max(p["Body"] for p in parts) == 5 * MiB
    ranges = [p["Range"] for op, p in sent.calls if op == "GetObject" and "Range" in p]
    assert ranges == ["bytes=0-5242879", "bytes=5242880-10485759", "bytes=10485760-11534335"]
    # ... and the requests are those the estimates count (a GET and a PUT; parts, create, complete)
    predicted = added(
        copy_requests(small_info.size, SETTINGS, checksum_known=True, streamed=True),
        copy_requests(big_info.size, SETTINGS, checksum_known=True, streamed=True),
    )
    assert {k: counted.get(k, 0) for k in ("get", "put", "head")} == {"get": 4, "put": 6, "head": 0}
    assert {k: predicted[k] for k in ("get", "put", "head")} == {"get": 4, "put": 6, "head": 0}


@pytest.mark.slow
def test_a_copy_already_there_is_taken_and_any_other_object_refused(lake: Lake) -> None:
    # Given a file already copied into a table's storage (a killed run's, or a retried step's)
    warehouse = _warehouse(lake)
    src, dst = _ios(lake)
    body = b"x" * 70_000
    uri, info = _source_object(lake, "lake/t/data/a.parquet", body)
    target = f"{warehouse}/data/a.parquet"
    first = copy_file_proved(src, uri, info, dst, target, SETTINGS)
    sent = Sent(dst)

    # When it is copied again, the PutObject is refused (412) and the object there is asked about
    again = copy_file_proved(src, uri, info, dst, target, SETTINGS)

    # Then it is taken as this copy: icelake's, with the same bytes
    assert again.verified and again.etag == first.etag
    assert [op for op, _ in sent.calls] == ["PutObject", "HeadObject"]

    # Given another object at a target key (not icelake's copy of the source)
    other = f"{warehouse}/data/b.parquet"
    bucket, key = other[len("s3://") :].split("/", 1)
    lake.target.client("s3").put_object(Bucket=bucket, Key=key, Body=b"someone else's")
    b_uri, b_info = _source_object(lake, "lake/t/data/b.parquet", body)

    # Then the copy is refused by name, and the object there is left as it was
    with pytest.raises(UnsafeTargetError, match="is not the copy of"):
        copy_file_proved(src, b_uri, b_info, dst, other, SETTINGS)
    assert dst.read(other) == b"someone else's"
    # ... and a multipart copy onto it too, its upload aborted
    big_uri, big_info = _source_object(lake, "lake/t/data/big.parquet", b"y" * (6 * MiB))
    lake.target.client("s3").put_object(Bucket=bucket, Key="data/big.parquet", Body=b"not it")
    with pytest.raises(UnsafeTargetError):
        copy_file_proved(src, big_uri, big_info, dst, f"{warehouse}/data/big.parquet", SETTINGS)
    assert dst.read(f"{warehouse}/data/big.parquet") == b"not it"
    assert _open_uploads(bucket) == 0  # (ListMultipartUploads is not served on table storage)
    # ... while a multipart copy already there (an earlier attempt's) is taken at its completion,
    # by the ETag of the parts read, its upload aborted
    made = copy_file_proved(src, big_uri, big_info, dst, f"{warehouse}/data/big-2.parquet", SETTINGS)
    remade = copy_file_proved(src, big_uri, big_info, dst, f"{warehouse}/data/big-2.parquet", SETTINGS)
    assert made.etag is not None and made.etag.endswith("-2")
    assert remade.verified and remade.etag == made.etag
    assert _open_uploads(bucket) == 0


def test_a_source_whose_bytes_are_not_its_checksum_stops_the_copy(lake: Lake) -> None:
    warehouse = _warehouse(lake)
    src, dst = _ios(lake)
    for name, size in [("small", 1000), ("big", 6 * MiB)]:
        uri, _ = _source_object(lake, f"lake/t/data/{name}.parquet", b"z" * size)
        damage_recorded_checksum(uri)
        damaged = src.stat(uri)
        assert damaged is not None
        with pytest.raises(CopyVerificationError):
            copy_file_proved(src, uri, damaged, dst, f"{warehouse}/data/{name}.parquet", SETTINGS)
        assert dst.stat(f"{warehouse}/data/{name}.parquet") is None  # nothing left there


@pytest.mark.slow
def test_a_table_migrates_into_table_storage_with_only_its_operations(lake: Lake) -> None:
    # Given a pyiceberg table of two commits at the source and a new S3 Tables table
    metadata = add_source_table(lake, "orders", [[1, 2], [3]])
    warehouse = _warehouse(lake)
    src, dst = _ios(lake)
    source_before = bucket_state(lake.source, SOURCE_BUCKET)
    sent = Sent(src, dst)

    # When the table is migrated into the warehouse location
    planned: list[TablePlan] = []
    at_plan: list[int] = []

    def on_planned(plan: TablePlan) -> None:
        planned.append(plan)
        at_plan.append(len(sent.calls))

    settings = EngineSettings(workers=4, processes=1)
    result = run_migration(
        metadata, warehouse, [], src=src, dst=dst, settings=settings, on_planned=on_planned
    )

    # Then every file is copied and verified, the metadata is there, and the source is untouched
    assert result.files_copied == 2 and result.files_verified == 2
    assert result.target_metadata_location.startswith(warehouse + "/metadata/")
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    # ... the requests after the plan are those the estimates count for it (a GET and a PUT a copy)
    after_plan = Counter(kind_of(op) for op, _ in sent.calls[at_plan[0] :])
    predicted = migration_requests(planned[0])
    assert {k: after_plan[k] for k in REQUEST_KINDS} == {k: predicted.get(k, 0) for k in REQUEST_KINDS}
    # ... and the table reads back, every snapshot, through its storage's GETs and HEADs
    table = StaticTable.from_metadata(result.target_metadata_location, properties=s3_props())
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    first = table.metadata.snapshots[0].snapshot_id
    assert sorted(table.scan(snapshot_id=first).to_arrow().column("id").to_pylist()) == [1, 2]
    # ... with no CopyObject, UploadPartCopy, listing or delete on the table's storage, and every
    # write there (copies and rewritten metadata) conditional: never an overwrite
    assert sent.unsupported() == []
    puts = [p for op, p in sent.to_table_storage() if op == "PutObject"]
    assert puts and all(p.get("IfNoneMatch") == "*" for p in puts)

    # When it runs again: nothing is copied or written again, still with only those operations
    sent.calls.clear()
    again = migrate_table(metadata, warehouse, src_io=src, dst_io=dst, settings=settings)
    assert again.files_copied == 0 and again.files_rewritten == 0
    assert sent.unsupported() == []
    assert not [op for op, _ in sent.to_table_storage() if op != "HeadObject"]

    # ... and a prune there deletes nothing and reads nothing: the bucket's own removal takes what
    # no snapshot reaches, and the reason is there for the outcome
    sent.calls.clear()
    assert prune_target(dst, src, [], warehouse, result.target_metadata_location) == []
    assert sent.calls == [] and not_pruned(warehouse) == NO_DELETE


@pytest.mark.slow
def test_a_table_the_run_created_is_planned_without_a_request_to_its_storage(lake: Lake) -> None:
    # Given a new S3 Tables table (its storage holds only what icelake writes for it)
    metadata = add_source_table(lake, "orders", [[1, 2], [3]])
    warehouse = _warehouse(lake)
    src, dst = _ios(lake)
    sent = Sent(src, dst)
    at_plan: list[int] = []
    fresh = EngineSettings(workers=4, processes=1, copy=CopySettings(fresh_target=True))

    def run() -> MigrationResult:
        at_plan.clear()
        sent.calls.clear()
        hook = lambda _plan: at_plan.append(len(sent.calls))  # noqa: E731
        return run_migration(metadata, warehouse, [], src=src, dst=dst, settings=fresh, on_planned=hook)

    # When it is migrated as a table the run created
    first = run()

    # Then the plan sent nothing to the table's storage (no HEAD a file), and the copies are made
    assert not [op for op, p in sent.calls[: at_plan[0]] if is_table_storage(f"s3://{p.get('Bucket')}/")]
    assert first.files_copied == 2 and first.files_verified == 2

    # When the step runs again (a retry: the keys are taken), each copy's PutObject is refused
    # (412) and the object there, icelake's copy with the same bytes, is taken as done
    again = run()
    refused = [p for op, p in sent.to_table_storage() if op == "PutObject" and p["Key"].startswith("data/")]
    assert len(refused) == 2 and again.files_verified == 2
    assert again.target_metadata_location == first.target_metadata_location
    assert sent.unsupported() == []


@pytest.mark.parametrize("glue", [False, True], ids=["lambda", "glue"])
def test_a_streamed_copy_is_timed_by_the_engine_s_bandwidth(glue: bool) -> None:
    # Given 10,000 files of 1 MiB (10,000 MiB) copied server-side, and streamed into S3 Tables
    model = ThroughputModel()
    files, size = 10_000, MiB
    server_side = {"copy": files}
    streamed = added(*[copy_requests(size, SETTINGS, checksum_known=True, streamed=True)] * files)
    assert streamed == added({"get": files, "put": files})

    # When the copy step is timed in each engine (after its start)
    start = model.glue_startup_s if glue else model.lambda_start_s

    def seconds(requests: dict[str, int]) -> float:
        return copy_seconds(requests, files * size, model, glue=glue, busiest=0.001, files=files) - start

    # Then the streamed copy takes at least its bytes over the engine's bandwidth (one Lambda's,
    # or the Glue job's workers'), which the server-side copy does not pass through the engine
    glue_job = model.glue_workers * model.glue_worker_stream_mib_per_s
    through = glue_job if glue else model.lambda_stream_mib_per_s
    assert seconds(streamed) >= files / through
    assert seconds(server_side) < files / through < seconds(streamed)
