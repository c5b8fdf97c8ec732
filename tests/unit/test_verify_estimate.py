"""The verify's work as the estimate counts it: the chunks a files check is cut into (listing
ranges of the table location, HEAD batches), the pages they read, and the engine the Verify step
gives a table (threshold, then the estimate against the Lambda's timeout)."""

from __future__ import annotations

import math

import pytest

from icelake.assess.estimate.verify_estimate import (
    VERIFY_TIMEOUT_S,
    VerifyWork,
    choose_verify_engine,
    verify_estimate,
    verify_requests,
    verify_seconds,
)
from icelake.aws.pacing import CUT
from icelake.migrate.check.proof_chunks import (
    HEAD_BATCH,
    RANGE_KEYS,
    FileToProve,
    chunks_of,
    list_pages,
    listing_pages,
)
from icelake.migrate.check.proved import HEAD_THREADS
from icelake.migrate.check.record import Proof
from icelake.throughput import ThroughputModel

LOCATION = "s3://target/lake/db/t"


def _copy(i: int) -> FileToProve:
    path = f"{LOCATION}/data/part-{i:07d}.parquet"
    return FileToProve(path, 100, "data file", Proof(path, "copy", 100, f"etag{i}", None, f"s3://src/{i}"))


def _rewritten(i: int) -> FileToProve:
    path = f"{LOCATION}/metadata/m{i}.avro"
    proof = Proof(path, "data manifest", 10, None, "SHA256:x", f"s3://src/m{i}")
    return FileToProve(path, 10, "manifest", proof)


def test_copies_are_listed_in_ranges_and_rewritten_files_headed_in_batches() -> None:
    # Given 45,000 copies (shuffled) and 450 rewritten files under the location
    copies = [_copy(i) for i in range(45_000)]
    files = [*copies[::2], *[_rewritten(i) for i in range(450)], *copies[1::2]]
    chunks = chunks_of(files, LOCATION)
    ranges = [c for c in chunks if c.location is not None]
    heads = [c for c in chunks if c.location is None]
    # Then the copies are three ranges of sorted keys, each from after the previous one's last key
    assert [len(c.files) for c in ranges] == [RANGE_KEYS, RANGE_KEYS, 5_000]
    assert ranges[0].after == copies[0].path[:-1] and ranges[0].until == copies[RANGE_KEYS - 1].path
    assert ranges[1].after == ranges[0].until and ranges[2].until == copies[-1].path
    # and the rewritten files (recorded by their SHA-256, which a listing does not carry) are HEADed
    assert [len(c.files) for c in heads] == [HEAD_BATCH] * 22 + [10]
    assert listing_pages(45_000) == 2 * list_pages(RANGE_KEYS) + list_pages(5_000) == 2 * 21 + 6


def test_a_few_copies_are_headed_and_files_outside_the_location_too() -> None:
    outside = FileToProve("s3://elsewhere/x.parquet", 5, "data file", None)
    chunks = chunks_of([_copy(i) for i in range(10)] + [outside], LOCATION)
    assert [c.location for c in chunks] == [None] and len(chunks[0].files) == 11 <= HEAD_BATCH
    assert listing_pages(10) == 0


def test_the_engine_is_the_threshold_then_the_estimate() -> None:
    model = ThroughputModel()
    small = VerifyWork(files=10_000, listed=10_000, headed=30, lists=10, manifests=10)
    huge = VerifyWork(files=30_000_000, listed=30_000_000, headed=30_000, lists=10_000, manifests=10_000)
    assert choose_verify_engine(small, model, None).engine == "lambda"
    forced = choose_verify_engine(small, model, 0)
    assert forced.engine == "glue" and "verify_glue_threshold_files 0" in forced.rule
    chosen = choose_verify_engine(huge, model, None)
    assert chosen.engine == "glue" and f"{VERIFY_TIMEOUT_S} s timeout" in chosen.rule
    assert verify_seconds(huge, model, glue=False) > 0.6 * VERIFY_TIMEOUT_S
    assert verify_seconds(huge, model, glue=True) < verify_seconds(huge, model, glue=False)
    # A table whose summaries have no running totals is checked in the Lambda, which reads it all
    assert choose_verify_engine(None, model, None).engine == "lambda"


def test_requests_are_the_listing_pages_and_the_metadata_constant() -> None:
    work = VerifyWork(files=100_000, listed=100_000, headed=301, lists=100, manifests=100)
    assert verify_requests(work) == {"head": 301, "list": 5 * 21, "get": 201}
    figures = verify_estimate(work, ThroughputModel(), None)
    assert figures["requests"] == verify_requests(work) and figures["engine"] == "lambda"
    assert figures["duration_s"]["glue"] > figures["duration_s"]["lambda"]  # the job's start


def test_work_from_a_metadata_json_counts_its_snapshots_and_summaries() -> None:
    snapshots = [
        {
            "snapshot-id": i,
            "parent-snapshot-id": i - 1 if i else None,
            "manifest-list": f"{LOCATION}/metadata/snap-{i}.avro",
            "summary": {
                "total-data-files": str(1000 * (i + 1)),
                "total-files-size": "1",
                "added-data-files": "1000",
            },
        }
        for i in range(3)
    ]
    meta = {"snapshots": snapshots, "metadata-log": [{"metadata-file": "a"}, {"metadata-file": "b"}]}
    work = VerifyWork.of_metadata(meta)
    assert work == VerifyWork(files=3000, listed=3000, headed=1 + 2 + 6, lists=3, manifests=3)
    del snapshots[1]["summary"]["total-data-files"]
    assert VerifyWork.of_metadata(meta) is None


def test_metadata_heads_go_no_wider_than_the_endpoint_answers() -> None:
    # Given a check that is all metadata HEADs: 3,200 files (logged versions, statistics), in
    # batches of 20 on the process's HEAD threads
    work = VerifyWork(files=0, listed=0, headed=3_200, lists=0, manifests=0)
    wide = ThroughputModel(
        latency_s={"head": 0.01, "get": 0.01, "list": 0.01}, prefix_read_per_s=1e9, lambda_start_s=0.0
    )
    one_at_a_time = wide.model_copy(update={"endpoint_parallel": 1})
    serial, threaded = (verify_seconds(work, m, glue=False) for m in (one_at_a_time, wide))
    # Then an endpoint that answers one request at a time (the embedded AWS) takes them one after
    # another, and S3 HEAD_THREADS batches at once
    assert serial == pytest.approx(0.01 + 3_200 * 0.01)
    assert threaded == pytest.approx(0.01 + math.ceil(3_200 / HEAD_BATCH / HEAD_THREADS) * HEAD_BATCH * 0.01)


def test_a_lambda_lists_at_its_cores_parse_and_a_glue_task_at_its_ranges_path() -> None:
    # Given 100,000 copies under the location (5 ranges of 21 pages), nothing else to check, and
    # S3 whose page takes 30 ms plus 50 us a key, 40 us of it the client's parse
    work = VerifyWork(files=100_000, listed=100_000, headed=1, lists=0, manifests=0)
    s3 = ThroughputModel(
        latency_s={"head": 0.0, "get": 0.0, "list": 0.03},
        list_key_s=5e-5,
        list_key_client_s=4e-5,
        manifest_entry_s=0.0,
        prefix_read_per_s=1e9,
        lambda_start_s=0.0,
        glue_startup_s=0.0,
        glue_workers=2,
    )
    page_s = 0.03 + 1000 * 5e-5
    lam, glue = (verify_seconds(work, s3, glue=g) for g in (False, True))
    # Then the Lambda's 16 threads list the 5 ranges at once, and its one core parses all 105
    # pages: longer than one range's path of 21 pages
    assert lam == pytest.approx(105 * 1000 * 4e-5)
    # and two Glue tasks take the ranges in 3 rounds, each a page after another
    assert glue == pytest.approx(3 * 21 * page_s)
    # When the client's share is not measured, the Lambda's core takes all of list_key_s
    unsplit = s3.model_copy(update={"list_key_client_s": None})
    assert verify_seconds(work, unsplit, glue=False) == pytest.approx(105 * 1000 * 5e-5)
    # and a slow endpoint makes the path the bound
    slow = s3.model_copy(update={"list_key_s": 5e-4})
    assert verify_seconds(work, slow, glue=False) == pytest.approx(21 * (0.03 + 1000 * 5e-4))
    # A page takes at least its parse, when the probe's CPU figure comes out above list_key_s
    parse = s3.model_copy(update={"list_key_client_s": 6e-5})
    assert verify_seconds(work, parse, glue=True) == pytest.approx(3 * 21 * (0.03 + 1000 * 6e-5))
    # and a prefix read 10 times a second is read at the pacing's pace after its first SlowDown
    # (the metadata file's HEAD, then the 105 pages)
    throttled = s3.model_copy(update={"prefix_read_per_s": 10.0})
    assert verify_seconds(work, throttled, glue=True) == pytest.approx((1 + 105) / (10.0 * CUT))
