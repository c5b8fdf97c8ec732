"""Regions on moto: each side's clients are made for its region, and S3 requests go to each
bucket's own region, asked once per bucket; a copy across regions is sent to the target bucket's."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from icelake.aws.clients import new_session
from icelake.aws.fileio import S3FileIO
from icelake.migrate.copy.objects import CopySettings, copy_file
from icelake.request.deps import Sessions
from icelake.request.models import MigrationRequest

pytestmark = pytest.mark.usefixtures("aws_env")


def _signed_regions(session: Any) -> Counter[tuple[str, str]]:
    """(operation, region) of every request the session's clients sign."""
    seen: Counter[tuple[str, str]] = Counter()

    def before_sign(operation_name: str, region_name: str, **_: Any) -> None:
        seen[(operation_name, region_name)] += 1

    session._session.register("before-sign", before_sign)
    return seen


def test_a_copy_across_regions_is_sent_to_the_target_buckets_region() -> None:
    # Given a source bucket in us-east-1 and a target bucket in eu-west-1
    session = new_session(region_name="us-east-1")
    signed = _signed_regions(session)  # before any client is made: clients copy the handlers
    s3 = session.client("s3")
    s3.create_bucket(Bucket="src-us")
    session.client("s3", region_name="eu-west-1").create_bucket(
        Bucket="dst-eu", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    s3.put_object(Bucket="src-us", Key="t/a.parquet", Body=b"a" * 100, ChecksumAlgorithm="CRC32C")
    s3.put_object(Bucket="src-us", Key="t/b.parquet", Body=b"b" * 100, ChecksumAlgorithm="CRC32C")
    src_io = S3FileIO(s3, regions=session)
    dst_io = S3FileIO(session.client("s3"), regions=session)
    signed.clear()

    # When two files are copied server-side
    for name in ("a", "b"):
        src = f"s3://src-us/t/{name}.parquet"
        info = src_io.stat(src)
        assert info is not None
        assert copy_file(src_io, src, info, dst_io, f"s3://dst-eu/t/{name}.parquet", CopySettings())

    # Then every CopyObject went to eu-west-1, every HEAD of the source to us-east-1, and each
    # bucket's region was asked once
    assert signed[("CopyObject", "eu-west-1")] == 2 and signed[("CopyObject", "us-east-1")] == 0
    assert signed[("HeadObject", "us-east-1")] == 2
    assert sum(n for (op, _), n in signed.items() if op == "GetBucketLocation") == 2
    assert dst_io.read("s3://dst-eu/t/b.parquet") == b"b" * 100


def test_each_side_is_made_for_its_region_defaulting_to_the_workflows() -> None:
    request = MigrationRequest.model_validate(
        {
            "run_id": "r",
            "source": {"account_id": "111111111111"},
            "target": {"account_id": "222222222222", "bucket": "dst", "region": "eu-central-1"},
            "selection": {"databases": ["sales"]},
        }
    )
    sessions = Sessions(request, new_session(region_name="us-east-1"))
    assert sessions.source.client("glue").meta.region_name == "us-east-1"
    assert sessions.target.client("glue").meta.region_name == "eu-central-1"
    assert sessions.target.client("lakeformation").meta.region_name == "eu-central-1"


def test_a_region_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="region must be an AWS region name such as eu-west-1, got 'Europe'"):
        MigrationRequest.model_validate(
            {
                "run_id": "r",
                "source": {"account_id": "111111111111", "region": "Europe"},
                "target": {"account_id": "222222222222", "bucket": "dst"},
                "selection": {"databases": ["sales"]},
            }
        )
