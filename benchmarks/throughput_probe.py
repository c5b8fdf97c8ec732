"""Measure the throughput model's S3 parameters on an S3 endpoint: the embedded AWS by default.

    .venv/bin/python -m benchmarks.throughput_probe                 # the embedded AWS (moto, loopback)
    .venv/bin/python -m benchmarks.throughput_probe --endpoint ''   # real S3 (AWS_PROFILE, --bucket)

Each request kind the estimate counts (list, head, get, put, copy, delete) is sent `--requests`
times, one at a time, on a small object; the model's `latency_s` is each kind's median seconds,
`latency_spread` the kinds' p10 and p90 over their median, averaged.
`list_key_s` is what each key adds to a listing: a listing of a full page (`LIST_KEYS`, 1,000 keys
written for it), less a listing of one, over the keys it adds. A page of 100 keys added about 10 ms
to a listing whose latency varies by more than that from one request to the next: the difference
of the two medians came out anywhere from 2.7e-6 to 1.4e-4 s a key in runs against one model (a
full page: 5.2e-5 to 6.3e-5 in three). `list_key_client_s` is the client's part of it: this
thread's CPU over the full page less the one-key listing's, over the keys (what a process that
lists many ranges at once spends on its own core while the endpoint answers the others' pages).
`copy_mib_per_s` is one server-side copy of a `--copy-mib`
object, less a small copy's latency.
Prints a JSON throughput model (the parameters measured; the others are ThroughputModel's defaults:
pass it to `icelake assess --throughput FILE`). On real S3 run it from where the copy runs (a
Lambda or an EC2 instance in the region), not a laptop: the latencies are the network's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

KINDS = ("list", "head", "get", "put", "copy", "delete")


SPREAD: dict[str, tuple[float, float]] = {}  # kind -> (p10, p90) over the median, as measured


def _median(call: Callable[[int], object], n: int) -> float:
    times = []
    for i in range(n):
        started = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - started)
    median = statistics.median(times)
    deciles = statistics.quantiles(times, n=10)
    SPREAD[str(len(SPREAD))] = (deciles[0] / median, deciles[-1] / median)
    return median


LIST_KEYS = 1000  # a full page of a listing
LIST_ROUNDS = 25  # listings of the full page (each about 0.1 s on the S3 model)


def _page_keys(s3: Any, bucket: str, prefix: str, keys: int) -> list[str]:
    """`keys` empty objects under `prefix` (written 16 at a time: the probe's own set-up)."""
    from concurrent.futures import ThreadPoolExecutor

    names = [f"{prefix}{i:05d}" for i in range(keys)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda key: s3.put_object(Bucket=bucket, Key=key, Body=b""), names))
    return names


def _on_cpu(cpu: dict[str, float], name: str, call: Callable[[], object]) -> Callable[[int], object]:
    """`call` as `_median` calls it, its calls' CPU seconds on this thread added to cpu[name]."""

    def timed(_: int) -> object:
        started = time.thread_time()
        try:
            return call()
        finally:
            cpu[name] = cpu.get(name, 0.0) + time.thread_time() - started

    return timed


def probe(s3: Any, bucket: str, requests: int, copy_mib: int, list_keys: int = LIST_KEYS) -> dict[str, Any]:
    """The measured parameters on `bucket` (objects written under a fresh prefix, then deleted)."""
    prefix = f"icelake-probe/{uuid.uuid4().hex}/"
    page = _page_keys(s3, bucket, f"{prefix}page/", list_keys)
    body = b"x" * 1024
    cpu: dict[str, float] = {}  # the listings' CPU on this thread: the client's share of list_key_s
    full_rounds = min(requests, LIST_ROUNDS)
    latency = {
        "put": _median(lambda i: s3.put_object(Bucket=bucket, Key=f"{prefix}o{i}", Body=body), requests),
        "head": _median(lambda i: s3.head_object(Bucket=bucket, Key=f"{prefix}o{i}"), requests),
        "get": _median(lambda i: s3.get_object(Bucket=bucket, Key=f"{prefix}o{i}")["Body"].read(), requests),
        # a listing of one key: its latency; of the full page: what each key adds (list_key_s)
        "list": _median(
            _on_cpu(cpu, "list", lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}o0")), requests
        ),
        "list_full": _median(
            _on_cpu(
                cpu,
                "list_full",
                lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}page/", MaxKeys=1000),
            ),
            full_rounds,
        ),
        "copy": _median(
            lambda i: s3.copy_object(
                Bucket=bucket, Key=f"{prefix}c{i}", CopySource={"Bucket": bucket, "Key": f"{prefix}o{i}"}
            ),
            requests,
        ),
        "delete": _median(lambda i: s3.delete_object(Bucket=bucket, Key=f"{prefix}o{i}"), requests),
    }
    big = f"{prefix}big"
    s3.put_object(Bucket=bucket, Key=big, Body=b"y" * (copy_mib * 1024**2))
    started = time.perf_counter()
    s3.copy_object(Bucket=bucket, Key=f"{big}-copy", CopySource={"Bucket": bucket, "Key": big})
    streaming = max(time.perf_counter() - started - latency["copy"], 1e-6)
    for key in [big, f"{big}-copy", *(f"{prefix}c{i}" for i in range(requests))]:
        s3.delete_object(Bucket=bucket, Key=key)
    for start in range(0, len(page), 1000):
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in page[start : start + 1000]]})
    lows, highs = zip(*SPREAD.values(), strict=True)
    return {
        "latency_s": {k: round(latency[k], 5) for k in KINDS},
        "list_key_s": round(max(0.0, latency["list_full"] - latency["list"]) / max(1, list_keys - 1), 8),
        "list_key_client_s": round(
            max(0.0, cpu["list_full"] / full_rounds - cpu["list"] / requests) / max(1, list_keys - 1), 8
        ),
        "copy_mib_per_s": round(copy_mib / streaming, 1),
        # the kinds' p10 and p90 over their median, averaged: the estimate's low and high factors
        "latency_spread": [round(statistics.mean(lows), 2), round(statistics.mean(highs), 2)],
    }


def entry_seconds(uri: str, data: bytes, rounds: int = 7) -> float:
    """`manifest_entry_s`: the plan's read of the manifest `data` (icelake's own, as a sync's Plan
    and the Copy's plan read a commit's new manifests), its median seconds over its entries."""
    from icelake.migrate.plan.entries import manifest_files
    from icelake.migrate.plan_scan import planned_entries

    times, entries = [], 0
    for _ in range(rounds):
        started = time.perf_counter()
        files, _ = manifest_files(planned_entries, uri, data)
        times.append(time.perf_counter() - started)
        entries = len(files.paths)
    if not entries:
        raise SystemExit(f"{uri} has no entries: pass a manifest of the table's (a data manifest)")
    return statistics.median(times) / entries


def _manifest(where: str) -> tuple[str, bytes]:
    """A manifest's URI and bytes: a local path, or an s3:// URI read with the default credentials."""
    if where.startswith("s3://"):
        import boto3

        bucket, _, key = where[len("s3://") :].partition("/")
        return where, boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    return where, Path(where).read_bytes()


@contextlib.contextmanager
def _endpoint(endpoint: str | None) -> Iterator[None]:
    if endpoint == "":
        yield
        return
    from icelake.local.moto_server import embedded_aws

    with embedded_aws():
        yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default=None, help="'' for real S3; default: an embedded AWS")
    parser.add_argument("--bucket", default="icelake-throughput-probe")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--copy-mib", type=int, default=64)
    parser.add_argument(
        "--manifest",
        default=None,
        help="a data manifest of your table's (a path or s3:// URI), its entries decoded to measure "
        "manifest_entry_s; run it where the steps run (a Lambda of the deployed size)",
    )
    args = parser.parse_args()
    import boto3

    with _endpoint(args.endpoint):
        s3 = boto3.client("s3", region_name="us-east-1")
        if args.endpoint is None:
            s3.create_bucket(Bucket=args.bucket)
        measured = probe(s3, args.bucket, args.requests, args.copy_mib)
    if args.manifest:
        measured["manifest_entry_s"] = round(entry_seconds(*_manifest(args.manifest)), 8)
    print(json.dumps({"name": "measured", **measured}, indent=1))


if __name__ == "__main__":
    main()
