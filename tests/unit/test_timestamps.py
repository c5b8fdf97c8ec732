"""icelake's sessions parse timestamps with a fast path for S3's ISO 8601 form: every value must
read as botocore's own parser reads it (equal instants, always zone-aware where botocore's is)."""

from __future__ import annotations

import botocore.utils
import pytest

from icelake.aws.clients import new_session, parse_timestamp


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-27T16:52:56.000Z",  # S3's XML (LastModified of CopyObject and ListObjectsV2)
        "2026-11-27T16:52:56Z",
        "2026-11-27T16:52:56.123456+02:00",
        "Fri, 27 Nov 2026 16:52:56 GMT",  # S3's Last-Modified header
        "2026-11-27T16:52:56",  # no zone: botocore's own reading decides
        1764262376,
        "1764262376.5",
    ],
)
def test_a_timestamp_reads_as_botocore_reads_it(value: object) -> None:
    ours, theirs = parse_timestamp(value), botocore.utils.parse_timestamp(value)
    assert ours == theirs
    assert (ours.tzinfo is None) == (theirs.tzinfo is None)


def test_sessions_parse_with_it() -> None:
    s3 = new_session(region_name="us-east-1").client("s3")
    parser = s3._endpoint._response_parser_factory.create_parser("rest-xml")
    assert parser._timestamp_parser is parse_timestamp
