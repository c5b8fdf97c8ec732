"""Server-side copies are verified end to end by MD5 ETags or by S3 checksums, on moto with awscrt
installed so that moto computes real checksums (CRC64NVME included; without awscrt it would return a CRC32
under that name, which is why awscrt is pinned in requirements-dev.txt).

A copy of an object written in one part, planned from a listing, is one CopyObject: S3 computes
the copy's ETag as the MD5 of its bytes, which must be the source's listed (MD5) ETag. Otherwise a
copy asks S3 for the checksum of what it wrote in the source object's own algorithm and compares
it with the checksum S3 recorded for the source (one HEAD). The damage is injected in moto's backend: the
source's recorded checksum no longer matches its bytes, as when an object is damaged at rest or
replaced between the plan and the copy."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from awscrt import checksums

from icelake.aws.fileio import S3FileIO
from icelake.errors import CopyVerificationError
from icelake.migrate import migrate_table
from icelake.migrate.copy.objects import CopySettings, copy_file
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, add_source_table, bucket_state
from tests.moto_keys import damage_bytes, damage_recorded_checksum, give_etag_no_md5

MiB = 1024**2


def _ios(lake: Lake) -> tuple[S3FileIO, S3FileIO]:
    return S3FileIO(lake.source.client("s3")), S3FileIO(lake.target.client("s3"))


def test_every_copy_is_verified_and_a_damaged_one_stops_the_table(lake: Lake) -> None:
    metadata = add_source_table(lake, "orders", [[1, 2], [3]])
    src, dst = _ios(lake)
    result = migrate_table(metadata, f"s3://{TARGET_BUCKET}/w/orders", src_io=src, dst_io=dst)
    assert result.files_copied == 2 and result.files_verified == 2

    data = next(uri for uri, _ in src.list(f"s3://{SOURCE_BUCKET}/lake/sales/orders/data"))
    damage_recorded_checksum(data)
    source_before = bucket_state(lake.source, SOURCE_BUCKET)
    target = f"s3://{TARGET_BUCKET}/w/orders-again"
    with pytest.raises(CopyVerificationError, match="is not the source's bytes") as info:
        migrate_table(metadata, target, src_io=src, dst_io=dst)
    assert data in str(info.value)
    assert not [uri for uri, _ in dst.list(target) if uri.endswith(".metadata.json")]  # never visible
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before


def test_a_multipart_copy_is_verified_by_its_full_object_crc(lake: Lake) -> None:
    src, dst = _ios(lake)
    body = bytes(range(256)) * (6 * MiB // 256 + 1)
    s3 = lake.source.client("s3")
    s3.put_object(Bucket=SOURCE_BUCKET, Key="big/object.bin", Body=body, ChecksumAlgorithm="CRC64NVME")
    info = src.stat(f"s3://{SOURCE_BUCKET}/big/object.bin")
    assert info is not None and info.checksum is not None
    expected = checksums.crc64nvme(body).to_bytes(8, "big")
    assert info.checksum == ("CRC64NVME", base64.b64encode(expected).decode())  # moto computed it
    settings = CopySettings(multipart_threshold=5 * MiB, part_size=5 * MiB, part_workers=2)
    target = f"s3://{TARGET_BUCKET}/big/object.bin"
    assert copy_file(src, f"s3://{SOURCE_BUCKET}/big/object.bin", info, dst, target, settings)
    assert dst.read(target) == body

    damage_recorded_checksum(f"s3://{SOURCE_BUCKET}/big/object.bin")
    damaged = src.stat(f"s3://{SOURCE_BUCKET}/big/object.bin")
    assert damaged is not None
    with pytest.raises(CopyVerificationError):
        copy_file(src, f"s3://{SOURCE_BUCKET}/big/object.bin", damaged, dst, target + ".2", settings)


def _sent(io: S3FileIO) -> list[str]:
    """The S3 operations `io`'s client sends from now on, in order."""
    sent: list[str] = []
    io.client.meta.events.register("before-call.s3", lambda model, **_: sent.append(model.name))
    return sent


def _listed(io: S3FileIO, uri: str) -> Any:
    """What the plan knows of an object it listed: size and ETag, no checksum value."""
    return next(info for listed, info in io.list(uri.rsplit("/", 1)[0]) if listed == uri)


def _put_and_list(lake: Lake, src: S3FileIO, key: str, body: bytes, algorithm: str) -> tuple[str, Any]:
    """A source object put in one part with a checksum, and what a listing says of it."""
    lake.source.client("s3").put_object(Bucket=SOURCE_BUCKET, Key=key, Body=body, ChecksumAlgorithm=algorithm)
    source = f"s3://{SOURCE_BUCKET}/{key}"
    return source, _listed(src, source)


def test_a_copy_planned_from_a_listing_is_one_copyobject_verified_by_md5_etags(lake: Lake) -> None:
    src, dst = _ios(lake)
    source, info = _put_and_list(lake, src, "d/a.parquet", b"a" * 1000, "CRC32C")
    assert info.checksum is None and info.etag is not None
    reads, writes = _sent(src), _sent(dst)

    assert copy_file(src, source, info, dst, f"s3://{TARGET_BUCKET}/d/a.parquet", CopySettings())

    assert (reads, writes) == ([], ["CopyObject"])  # no HEAD: the copy's own answer verified it
    assert dst.read(f"s3://{TARGET_BUCKET}/d/a.parquet") == b"a" * 1000


def test_bytes_damaged_at_rest_fail_a_copy_planned_from_a_listing(lake: Lake) -> None:
    src, dst = _ios(lake)
    source, info = _put_and_list(lake, src, "d/b.parquet", b"b" * 1000, "CRC64NVME")
    damage_bytes(source)  # S3 still lists the ETag and keeps the checksum of the bytes as written
    reads = _sent(src)

    with pytest.raises(CopyVerificationError, match="is not the source's bytes"):
        copy_file(src, source, info, dst, f"s3://{TARGET_BUCKET}/d/b.parquet", CopySettings())
    assert reads == ["HeadObject"]  # the ETags differed: the recorded checksum decided


def test_a_source_whose_etag_is_no_md5_is_verified_by_its_checksum(lake: Lake) -> None:
    # Given two objects whose ETags are not the MD5 of their bytes, as an SSE-KMS source's are
    src, dst = _ios(lake)
    s3 = lake.source.client("s3")
    sources = []
    for name in ("c1", "c2"):
        s3.put_object(
            Bucket=SOURCE_BUCKET, Key=f"d/{name}", Body=name.encode() * 100, ChecksumAlgorithm="CRC32"
        )
        sources.append(f"s3://{SOURCE_BUCKET}/d/{name}")
        give_etag_no_md5(sources[-1])
    infos = [_listed(src, uri) for uri in sources]
    reads, writes = _sent(src), _sent(dst)

    # When both are copied, one after the other
    first = copy_file(src, sources[0], infos[0], dst, f"s3://{TARGET_BUCKET}/d/c1", CopySettings())
    sent_first = (list(reads), list(writes))
    second = copy_file(src, sources[1], infos[1], dst, f"s3://{TARGET_BUCKET}/d/c2", CopySettings())

    # Then both are verified by their CRC32: the first copy (in the default CRC64NVME) read the
    # checksum after its ETags disagreed and copied again in CRC32; the second read it first
    assert first and second
    assert sent_first == (["HeadObject"], ["CopyObject", "CopyObject"])
    assert (reads, writes) == (["HeadObject", "HeadObject"], ["CopyObject", "CopyObject", "CopyObject"])
    assert dst.read(f"s3://{TARGET_BUCKET}/d/c2") == b"c2" * 100


def test_a_copy_to_a_kms_key_reads_the_source_checksum_first(lake: Lake) -> None:
    src = S3FileIO(lake.source.client("s3"))
    key = lake.target.client("kms").create_key()["KeyMetadata"]["KeyId"]
    dst = S3FileIO(lake.target.client("s3"), kms_key_id=key)
    source, info = _put_and_list(lake, src, "d/e.parquet", b"e" * 500, "CRC32C")
    reads, writes = _sent(src), _sent(dst)

    assert copy_file(src, source, info, dst, f"s3://{TARGET_BUCKET}/d/e.parquet", CopySettings())

    assert (reads, writes) == (["HeadObject"], ["CopyObject"])  # a KMS copy's ETag is no MD5


def test_a_source_replaced_after_planning_is_not_copied_as_planned(lake: Lake) -> None:
    src, dst = _ios(lake)
    s3 = lake.source.client("s3")
    s3.put_object(Bucket=SOURCE_BUCKET, Key="d/f.parquet", Body=b"f" * 300)
    source = f"s3://{SOURCE_BUCKET}/d/f.parquet"
    info = _listed(src, source)
    s3.put_object(Bucket=SOURCE_BUCKET, Key="d/f.parquet", Body=b"g" * 300)  # same size, new bytes

    with pytest.raises(CopyVerificationError, match="changed or disappeared after planning"):
        copy_file(src, source, info, dst, f"s3://{TARGET_BUCKET}/d/f.parquet", CopySettings())
