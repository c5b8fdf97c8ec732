"""What a copy streamed through the engine costs it (icelake/migrate/copy/streamed.py, the copy
into S3 Tables' storage, which takes no CopyObject): memory and CPU per MiB.

    .venv/bin/python -m benchmarks.stream_copy_bench [--mib 256] [--part-mib 32] [--record]

The embedded AWS's S3 (moto, with its s3tables: the target is a table's warehouse location) runs
in a process of its own, so this process measures the copy alone:
- `peak_mib`: tracemalloc's peak over the copy of one `--mib` file in parts of `--part-mib`, two
  held at once (CopySettings' default): the bound is a few parts, whatever the file's size, and
  `peak_over_part` says how many;
- `cpu_ms_per_mib`: the copying thread's CPU time (time.thread_time) over the MiB it moved, with
  one part held at a time (every GET, checksum and UploadPart in that thread): what one core spends
  per MiB, so 1,000 / it is the most MiB a second one core streams. It includes computing the
  source's CRC64NVME (awscrt, as botocore[crt] would), each part's CRC32 (botocore) and MD5s;
- `wall_mib_per_s`: the same copy's speed on loopback, which moto's own CPU bounds (it shares
  this machine): not a figure for AWS, whose bound is the engine's network
  (ThroughputModel.lambda_stream_mib_per_s and glue_worker_stream_mib_per_s).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
from icelake.aws.fileio import S3FileIO
from icelake.migrate.copy.common import CopySettings
from icelake.migrate.copy.streamed import stream_copy

from benchmarks.results_md import REPO, record_row, run_facts

MiB = 1024**2
HEADING = "## Streamed copy (S3 Tables' storage)"
SECTION = (
    "`python -m benchmarks.stream_copy_bench`: one file copied into a table's warehouse location "
    "through this process (GET, checksums, UploadParts) on the embedded AWS in a process of its "
    "own. Peak memory by tracemalloc (parts of the given size, two held at once); CPU per MiB of "
    "the copying thread (one part at a time); wall speed on loopback (moto-bound, not AWS's).\n\n"
    "| date | commit | cores | load | file MiB | part MiB | peak MiB | peak / part | CPU ms/MiB "
    "| MiB/s a core | loopback MiB/s |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|\n"
)


@contextlib.contextmanager
def moto_process() -> Iterator[str]:
    """moto's server on a free loopback port, in its own process; yields its endpoint."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1)
                break
            time.sleep(0.1)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _session() -> boto3.Session:
    return boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )


def _setup(endpoint: str, mib: int) -> tuple[S3FileIO, str, str]:
    """A source object of `mib` MiB (CRC64NVME) and a table's warehouse location."""
    session = _session()
    s3 = session.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket="bench-source")
    body = os.urandom(mib * MiB)
    s3.put_object(Bucket="bench-source", Key="data/big.parquet", Body=body, ChecksumAlgorithm="CRC64NVME")
    del body
    s3t = session.client("s3tables", endpoint_url=endpoint)
    arn = s3t.create_table_bucket(name="bench")["arn"]
    s3t.create_namespace(tableBucketARN=arn, namespace=["sales"])
    s3t.create_table(tableBucketARN=arn, namespace="sales", name="orders", format="ICEBERG")
    warehouse = s3t.get_table(tableBucketARN=arn, namespace="sales", name="orders")["warehouseLocation"]
    return S3FileIO(s3), "s3://bench-source/data/big.parquet", str(warehouse)


def _copy(io: S3FileIO, src: str, dst: str, settings: CopySettings) -> dict[str, float]:
    """One streamed copy in a thread of its own: its wall and CPU seconds."""
    info = io.stat(src)
    assert info is not None and info.checksum is not None
    out: dict[str, float] = {}

    def run() -> None:
        cpu, wall = time.thread_time(), time.perf_counter()
        copied = stream_copy(io, src, info, io, dst, settings)
        out["cpu_s"], out["wall_s"] = time.thread_time() - cpu, time.perf_counter() - wall
        out["verified"] = float(copied.verified)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out


def measure(mib: int, part_mib: int) -> dict[str, Any]:
    with moto_process() as endpoint:
        io, src, warehouse = _setup(endpoint, mib)
        # CPU: one part at a time, every request and checksum in the copying thread
        serial = _copy(
            io,
            src,
            f"{warehouse}/data/cpu.parquet",
            CopySettings(stream_part_size=part_mib * MiB, stream_parts_in_memory=1),
        )
        # Memory: the default two parts held at once, under tracemalloc
        tracemalloc.start()
        tracemalloc.reset_peak()
        piped = _copy(io, src, f"{warehouse}/data/mem.parquet", CopySettings(stream_part_size=part_mib * MiB))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    cpu_ms = 1000 * serial["cpu_s"] / mib
    return {
        **run_facts(),
        "file_mib": mib,
        "part_mib": part_mib,
        "peak_mib": round(peak / MiB, 1),
        "peak_over_part": round(peak / (part_mib * MiB), 2),
        "cpu_ms_per_mib": round(cpu_ms, 2),
        "mib_per_s_a_core": round(1000 / cpu_ms, 1),
        "wall_mib_per_s": round(mib / piped["wall_s"], 1),
        "verified": bool(serial["verified"] and piped["verified"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=256, help="the file's size")
    ap.add_argument("--part-mib", type=int, default=32, help="the streamed copy's part size")
    ap.add_argument("--record", action="store_true", help="write the JSON and a RESULTS.md row")
    args = ap.parse_args()
    result = measure(args.mib, args.part_mib)
    print(json.dumps(result))
    if args.record:
        name = f"stream-copy-{result['date']}-{result['commit']}.json"
        (REPO / "benchmarks" / "results" / name).write_text(json.dumps(result, indent=1) + "\n")
        r = result
        row = (
            f"| {r['date']} | {r['commit']} | {r['nproc']} | {r['load_average']} | {r['file_mib']} | "
            f"{r['part_mib']} | {r['peak_mib']} | {r['peak_over_part']} | {r['cpu_ms_per_mib']} | "
            f"{r['mib_per_s_a_core']} | {r['wall_mib_per_s']} |"
        )
        record_row(REPO / "benchmarks" / "RESULTS.md", HEADING, SECTION, row)


if __name__ == "__main__":
    main()
