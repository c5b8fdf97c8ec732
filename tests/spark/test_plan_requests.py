"""Planning learns what exists by listing: requests to S3 per data file, counted on the wire
(botocore's before-send) against moto, for a table of a few thousand files on each side."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from benchmarks.synthetic_table import build_synthetic_table
from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.migrate.copy.engine import migrate_table
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.reads import FAST_READS
from icelake.migrate.progress import NoProgress
from icelake.migrate.settings import EngineSettings
from icelake.uris import local_path
from tests.reference_plan import REFERENCE_READS

pytestmark = [pytest.mark.spark, pytest.mark.slow]
FILE_SIZE = 16
SNAPSHOTS, FILES_PER_SNAPSHOT = 3, 1000


@pytest.fixture
def s3(aws_env: None) -> Any:
    client = boto3.client("s3")
    for bucket in ("source-lake", "target-lake"):
        client.create_bucket(Bucket=bucket)
    return client


def counted(requests: list[str]) -> Any:
    """An S3 client that records the operation of every HTTP request it sends (retries included)."""
    client = boto3.client("s3")
    client.meta.events.register(
        "before-send.s3.*", lambda event_name, **_: requests.append(event_name.rsplit(".", 1)[-1])
    )
    return client


def test_planning_sends_far_fewer_than_one_request_per_data_file(
    spark: Any, s3: Any, hadoop_catalog: Callable[[str], str]
) -> None:
    built = build_synthetic_table(
        spark,
        hadoop_catalog("plan_requests"),
        snapshots=SNAPSHOTS,
        files_per_snapshot=FILES_PER_SNAPSHOT,
        partitions_per_snapshot=10,
        file_size=FILE_SIZE,
    )
    for (path,) in spark.sql(f"SELECT file_path FROM {built.identifier}.files").collect():
        os.makedirs(os.path.dirname(local_path(path)), exist_ok=True)
        Path(local_path(path)).write_bytes(b"x" * FILE_SIZE)
    data_files = SNAPSHOTS * FILES_PER_SNAPSHOT
    source = "s3://source-lake/lake/db/t"
    published = migrate_table(built.current_metadata, source, src_io=LocalFileIO(), dst_io=S3FileIO(s3))
    metadata = published.target_metadata_location

    def plan(fast: bool) -> tuple[list[str], list[str], Any]:
        src_requests: list[str] = []
        dst_requests: list[str] = []
        result = build_plan(
            metadata,
            "s3://target-lake/warehouse/db/t",
            [],
            S3FileIO(counted(src_requests)),
            S3FileIO(counted(dst_requests)),
            settings=EngineSettings(
                overwrite=False,
                workers=4,
                progress=NoProgress(),
                reads=FAST_READS if fast else REFERENCE_READS,
            ),
        )
        return src_requests, dst_requests, result

    src, dst, listed = plan(fast=True)
    ref_src, ref_dst, headed = plan(fast=False)  # the reference path: one HEAD per file and side
    print(
        f"\nplan requests for {data_files} data files: source {len(src)} ({len(src) / data_files:.4f}/file), "
        f"target {len(dst)} ({len(dst) / data_files:.4f}/file); one HEAD per file: {len(ref_src)} and "
        f"{len(ref_dst)}"
    )
    # Same plan either way: every file copied, with the size the metadata records.
    assert len(listed.copies) == len(headed.copies) == data_files
    assert {(c.source, c.target, c.info.size) for c in listed.copies} == {
        (c.source, c.target, c.info.size) for c in headed.copies
    }
    assert len(src) / data_files <= 0.01 and len(dst) / data_files <= 0.01, (src, dst)
    assert src.count("ListObjectsV2") >= data_files // 1000 and ref_src.count("HeadObject") >= data_files
