"""An endpoint's state file (watermark, ledger of empty batches) and a batch's marker: only their
absence reads as "none"; any other failed read fails."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from icelake.aws.fileio import S3FileIO
from icelake.errors import InvalidBatchError
from icelake.ingest.landing import read_manifest, read_state, write_state


def test_a_missing_state_is_empty_and_a_written_one_reads_back(aws_env: None) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="raw")
    io = S3FileIO(s3)
    assert read_state(io, "s3://raw", "crm", "customers") == {}
    write_state(io, "s3://raw", "crm", "customers", {"watermark": "2026-11-01"})
    assert read_state(io, "s3://raw", "crm", "customers") == {"watermark": "2026-11-01"}


def test_a_state_that_cannot_be_read_fails_instead_of_reading_as_empty(aws_env: None) -> None:
    # Any answer but "no such key" (here the bucket is gone; on AWS, AccessDenied or throttling)
    # must not pass for "no state yet": that would drop the watermark and the empty batches' ledger.
    with pytest.raises(ClientError, match="NoSuchBucket"):
        read_state(S3FileIO(boto3.client("s3")), "s3://gone", "crm", "customers")


def test_a_missing_marker_is_no_batch_and_an_unreadable_one_fails(aws_env: None) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="raw")
    with pytest.raises(InvalidBatchError, match=r"no readable \.pending marker"):
        read_manifest(S3FileIO(s3), "s3://raw/raw/crm/customers/run-1")
    # Callers skip a directory without a batch (advance_watermark: "already complete"), so a read
    # that failed for another reason must not look like one.
    with pytest.raises(ClientError, match="NoSuchBucket"):
        read_manifest(S3FileIO(s3), "s3://gone/raw/crm/customers/run-1")
