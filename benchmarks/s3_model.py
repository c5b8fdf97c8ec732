"""A model of S3 for copy benchmarks: its per-prefix request rates, its latency, its SlowDown.

    .venv/bin/python -m benchmarks.s3_model --port 0 --seed 1      # prints {"endpoint": ...} first

A separate process on 127.0.0.1 that speaks the S3 REST API a copy run uses (path-style): bucket
create/head/location, ListObjectsV2, HeadObject, GetObject (ranges), PutObject (also aws-chunked bodies and
If-None-Match), CopyObject (x-amz-copy-source-if-match, x-amz-checksum-algorithm), the multipart
calls around UploadPartCopy, DeleteObject and DeleteObjects. Point boto3 at it with
AWS_ENDPOINT_URL; any credentials do (signatures are not checked). This module starts it and
talks to it; its server is s3_server.py, its throttling and objects s3_throttle.py.

What it enforces, each a command-line option (defaults below, scaled to what a 2-core machine can
serve; S3 itself documents 3,500 writes and 5,500 reads a second per prefix):
- a token bucket per prefix (the key up to its last '/') for writes (PUT, COPY, DELETE, multipart)
  and another for reads (GET, HEAD, LIST), each holding `--burst-s` seconds of its rate. A request
  that finds its bucket empty is answered `503 SlowDown` after `--slowdown-ms`; it takes no token.
  A DeleteObjects takes one write token of each key's prefix (S3 counts each key);
- a lognormal latency per request, median `--latency-median-ms` and 99th percentile
  `--latency-p99-ms`, drawn from a generator seeded by `--seed`, the request's kind, key and how
  many times that key was asked before, so a run's draws do not depend on thread timing; plus
  size / `--bandwidth-mib-s` for objects over `--large-object-mib` that a request moves;
- a count of every request by kind and prefix (and of slowdowns), at GET /_model/stats.

Objects are held as sizes, not bytes (a GET of one answers zeros), except metadata files (keys
with a `metadata` path segment, or ending in .json, .avro, .puffin or .gz), which keep their bytes.
Each object keeps the SHA-256 of the bytes it was written with: its ETag is their MD5 as S3's is
for a single-part upload, a SHA256 checksum is the real one, and a CRC64NVME/CRC32C/CRC32/SHA1
checksum of an object whose bytes are not kept is a stand-in derived from that digest (equal for
equal bytes, which is all a copy's verification compares). GET answers carry only checksums the
model can compute exactly (botocore validates them).

Admin requests (no latency, no limits): GET /_model/stats; POST /_model/config with a JSON object
of any of the options' names (`writes_per_s`, `reads_per_s`, `latency_median_ms`, ...; a limit of
0 turns limiting off, `"latency": false` turns latency off) and `"reset": true` to clear counts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.s3_server import serve
from benchmarks.s3_throttle import ModelConfig


class ModelProcess:
    """The model in a process of its own (`start_model`), and its admin requests."""

    def __init__(self, proc: subprocess.Popen[str], endpoint: str, config: dict[str, Any]) -> None:
        self.proc, self.endpoint, self.config = proc, endpoint, config

    def _admin(self, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        with urllib.request.urlopen(f"{self.endpoint}/_model/{path}", data=data, timeout=60) as answer:
            return json.loads(answer.read())

    def use(self, region: str) -> ModelConfig:
        """Send this process's AWS clients to the model (its endpoint, its credentials, `region`,
        no session token) and return its parameters (but the mean latency, which it derives)."""
        os.environ.update(
            AWS_ENDPOINT_URL=self.endpoint,
            AWS_ACCESS_KEY_ID="model",
            AWS_SECRET_ACCESS_KEY="model",
            AWS_DEFAULT_REGION=region,
        )
        os.environ.pop("AWS_SESSION_TOKEN", None)
        return ModelConfig(**{k: v for k, v in self.config.items() if k != "latency_mean_ms"})

    def configure(self, **changes: Any) -> dict[str, Any]:
        """Change parameters (names of ModelConfig; `reset=True` clears the counts)."""
        self.config = self._admin("config", changes)
        return self.config

    def restart(self, config: ModelConfig) -> dict[str, Any]:
        """Counts cleared, `config`'s per-prefix limits and latency back on: a run measured from
        the start."""
        return self.configure(
            reset=True,
            per_prefix_writes_per_s=config.per_prefix_writes_per_s,
            per_prefix_reads_per_s=config.per_prefix_reads_per_s,
            latency=True,
        )

    def stats(self) -> dict[str, Any]:
        return dict(self._admin("stats"))

    def objects(self, bucket: str) -> dict[str, list[Any]]:
        return dict(self._admin("objects").get(bucket, {}))

    def clear(self, *buckets: str) -> None:
        self._admin("clear", list(buckets))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def start_model(*args: str) -> Iterator[ModelProcess]:
    """`python -m benchmarks.s3_model *args` in its own process, stopped on leaving."""
    cmd = [sys.executable, "-m", "benchmarks.s3_model", *args]
    root = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, text=True)
    model = None
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if not first:
            raise RuntimeError(f"the S3 model did not start (exit {proc.wait()})")
        hello = json.loads(first)
        model = ModelProcess(proc, hello["endpoint"], hello["model"])
        yield model
    finally:
        if model is not None:
            model.stop()
        else:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.s3_model", description=__doc__.split("\n")[0])
    d = ModelConfig()
    ap.add_argument("--port", type=int, default=0, help="0: one the system picks (printed)")
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument(
        "--writes-per-s", type=float, default=d.per_prefix_writes_per_s, help="per prefix; 0: no limit"
    )
    ap.add_argument(
        "--reads-per-s", type=float, default=d.per_prefix_reads_per_s, help="per prefix; 0: no limit"
    )
    ap.add_argument("--burst-s", type=float, default=d.burst_s)
    ap.add_argument("--slowdown-ms", type=float, default=d.slowdown_ms)
    ap.add_argument("--latency-median-ms", type=float, default=d.latency_median_ms)
    ap.add_argument("--latency-p99-ms", type=float, default=d.latency_p99_ms)
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--bandwidth-mib-s", type=float, default=d.bandwidth_mib_s)
    ap.add_argument("--large-object-mib", type=float, default=d.large_object_mib)
    a = ap.parse_args(argv)
    same = ("seed", "burst_s", "slowdown_ms", "latency_median_ms", "latency_p99_ms", "bandwidth_mib_s")
    config = ModelConfig(
        per_prefix_writes_per_s=a.writes_per_s,
        per_prefix_reads_per_s=a.reads_per_s,
        latency=not a.no_latency,
        large_object_mib=a.large_object_mib,
        **{name: getattr(a, name) for name in same},  # the options named as the model's fields
    )
    server, _ = serve(config, a.port)
    print(
        json.dumps({"endpoint": f"http://127.0.0.1:{server.server_address[1]}", "model": config.summary()}),
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
