"""Server-side copies are verified end to end by S3 checksums, on moto with awscrt installed so
that moto computes real checksums (CRC64NVME included; without awscrt it would return a CRC32
under that name, which is why awscrt is pinned in requirements-dev.txt).

A copy asks S3 for the checksum of what it wrote in the source object's own algorithm and compares
it with the checksum S3 recorded for the source. The damage is injected in moto's backend: the
source's recorded checksum no longer matches its bytes, as when an object is damaged at rest or
replaced between the plan and the copy."""

from __future__ import annotations

import base64

import pytest
from awscrt import checksums

from icelake.aws.fileio import S3FileIO
from icelake.errors import CopyVerificationError
from icelake.migrate import migrate_table
from icelake.migrate.copy import CopySettings, copy_file
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, add_source_table, bucket_state
from tests.moto_keys import damage_recorded_checksum

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
