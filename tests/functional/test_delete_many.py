"""Rollback's deletes: DeleteObjects with 1,000 keys a request, not one request per object."""

from __future__ import annotations

from typing import Any

import pytest

from icelake.aws.clients import new_session
from icelake.aws.fileio import S3FileIO
from icelake.local.moto_server import embedded_aws


@pytest.mark.slow
def test_deletes_go_in_batches_of_a_thousand_and_spare_other_keys() -> None:
    with embedded_aws():
        s3 = new_session().client("s3")
        s3.create_bucket(Bucket="rollback-test")
        for i in range(1001):
            s3.put_object(Bucket="rollback-test", Key=f"mine/{i:05d}", Body=b"x")
        s3.put_object(Bucket="rollback-test", Key="theirs/keep", Body=b"y")
        calls: list[str] = []

        def count(model: Any, **_: Any) -> None:
            calls.append(model.name)

        s3.meta.events.register("before-call.s3", count)
        asked = S3FileIO(s3).delete_many(
            [f"s3://rollback-test/mine/{i:05d}" for i in range(1001)] + ["s3://rollback-test/mine/gone"]
        )
        assert asked == 1002
        assert calls == ["DeleteObjects"] * 2
        left = [o["Key"] for o in s3.list_objects_v2(Bucket="rollback-test").get("Contents", [])]
        assert left == ["theirs/keep"]
