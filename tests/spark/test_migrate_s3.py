"""S3 to S3 between two moto accounts: server-side copies, target KMS key, source untouched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.aws.session import assume_role_session
from icelake.local.moto_server import embedded_aws
from icelake.migrate import migrate_table
from icelake.migrate.copy.objects import CopySettings, copy_file, is_same_copy
from icelake.uris import local_path
from tests.spark.corpus import PYICEBERG_CASES, SourceTable
from tests.verify import assert_no_source_paths, assert_same_table, assert_sizes_match

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SOURCE_ROLE = "arn:aws:iam::111111111111:role/icelake-source"
TARGET_ROLE = "arn:aws:iam::222222222222:role/icelake-target"


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, Any]]:
    with embedded_aws() as endpoint:
        src = assume_role_session(SOURCE_ROLE)
        dst = assume_role_session(TARGET_ROLE)
        src.client("s3").create_bucket(Bucket="source-lake")
        dst.client("s3").create_bucket(Bucket="target-lake")
        key = dst.client("kms").create_key(Description="target lake")["KeyMetadata"]["Arn"]
        yield {"endpoint": endpoint, "src": src, "dst": dst, "kms_key": key}


def _pyiceberg_props(endpoint: str) -> dict[str, str]:
    return {
        "s3.endpoint": endpoint,
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
        "s3.region": "us-east-1",
    }


def _listing(session: boto3.Session, bucket: str) -> dict[str, str]:
    pages = session.client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {o["Key"]: o["ETag"] for p in pages for o in p.get("Contents", [])}


# Java's hard cases, and every other writer's (tests/spark/corpus.py).
S3_CASES = ["v2_merge_on_read", "v3_deletion_vectors", "data_elsewhere", "statistics", "java_gzip_metadata"]


@pytest.mark.parametrize("case", [*S3_CASES, *PYICEBERG_CASES])
def test_s3_to_s3_across_accounts(
    case: str, aws: dict[str, Any], source_tables: dict[str, SourceTable], spark: Any, tmp_path: Path
) -> None:
    table = source_tables[case]
    src_s3 = S3FileIO(aws["src"].client("s3"))
    dst_s3 = S3FileIO(aws["dst"].client("s3"), kms_key_id=aws["kms_key"])
    local = LocalFileIO()
    # Given the table in the source account's bucket (seeded from the Spark-written corpus)
    seed_maps = [(p, f"s3://source-lake/extra/{case}/{s}") for p, s in table.extra_prefixes.items()]
    seeded = migrate_table(
        table.metadata, f"s3://source-lake/wh/{case}", seed_maps, src_io=local, dst_io=src_s3
    )
    source_before = _listing(aws["src"], "source-lake")

    # When it is migrated to the target account, reading as the source role, writing as the target role
    maps = [(f"s3://source-lake/extra/{case}", f"s3://target-lake/extra/{case}")] if seed_maps else []
    result = migrate_table(
        seeded.target_metadata_location, f"s3://target-lake/wh/{case}", maps, src_io=src_s3, dst_io=dst_s3
    )

    # Then pyiceberg reads every snapshot of the S3 target like the original source
    props = _pyiceberg_props(aws["endpoint"])
    assert assert_same_table(table.metadata, result.target_metadata_location, target_props=props) > 0
    # and no target file names the source bucket, every recorded size is true
    assert_no_source_paths(dst_s3, ["s3://target-lake/"], ["source-lake", local_path(table.location)])
    assert assert_sizes_match(dst_s3, result.target_metadata_location) > 0
    # and everything written is encrypted under the target account's key
    client = aws["dst"].client("s3")
    for key in _listing(aws["dst"], "target-lake"):
        if key.startswith((f"wh/{case}/", f"extra/{case}/")):
            head = client.head_object(Bucket="target-lake", Key=key)
            assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", aws["kms_key"])
    # and the source bucket is unchanged
    assert _listing(aws["src"], "source-lake") == source_before
    # and Spark (Iceberg Java) reads it too, after a path-only hop back to local disk
    hop_maps = [(f"s3://target-lake/extra/{case}", str(tmp_path / "extra"))] if seed_maps else []
    back = migrate_table(
        result.target_metadata_location, str(tmp_path / "t"), hop_maps, src_io=dst_s3, dst_io=local
    )
    assert_same_table(table.metadata, back.target_metadata_location, spark=spark)

    # And a second run copies and writes nothing
    again = migrate_table(
        seeded.target_metadata_location, f"s3://target-lake/wh/{case}", maps, src_io=src_s3, dst_io=dst_s3
    )
    assert (again.files_copied, again.files_rewritten) == (0, 0)


def test_large_objects_are_copied_in_parallel_parts(aws: dict[str, Any]) -> None:
    src_s3 = S3FileIO(aws["src"].client("s3"))
    dst_s3 = S3FileIO(aws["dst"].client("s3"), kms_key_id=aws["kms_key"])
    payload = bytes(range(256)) * (12 * 1024 * 1024 // 256 + 7)  # just over 12 MiB
    src_s3.write("s3://source-lake/big/blob.bin", payload)
    info = src_s3.stat("s3://source-lake/big/blob.bin")
    assert info is not None
    settings = CopySettings(multipart_threshold=5 * 1024 * 1024, part_size=5 * 1024 * 1024, part_workers=3)

    copy_file(
        src_s3, "s3://source-lake/big/blob.bin", info, dst_s3, "s3://target-lake/big/blob.bin", settings
    )

    assert dst_s3.read("s3://target-lake/big/blob.bin") == payload
    copied = dst_s3.stat("s3://target-lake/big/blob.bin")
    assert copied is not None and copied.source_etag == info.etag
    assert is_same_copy(
        src_s3, "s3://source-lake/big/blob.bin", info, dst_s3, "s3://target-lake/big/blob.bin", copied
    )
