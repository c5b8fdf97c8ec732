"""An endpoint's state file (watermark, ledger of empty batches): only its absence reads as empty."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from icelake.aws.fileio import S3FileIO
from icelake.ingest.landing import read_state, write_state


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
