"""The S3 model's state (benchmarks/s3_model.py runs it): its throttling, a token bucket per
prefix for writes and another for reads, its seeded lognormal latency and its counts of requests
and slowdowns (`Model.admit`, `Model.latency_s`), and the objects it holds, as sizes and digests
(`Obj`: metadata files keep their bytes)."""

from __future__ import annotations

import base64
import hashlib
import math
import random
import threading
import time
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

MiB = 1024**2
Z_99 = 2.3263478740408408  # the standard normal's 99th percentile
CHECKSUM_ALGORITHMS = ("CRC64NVME", "CRC32C", "CRC32", "SHA256", "SHA1")
METADATA_SUFFIXES = (".json", ".avro", ".puffin", ".gz")
WRITE, READ = "write", "read"
KINDS = {  # request kind -> which bucket of its prefix it draws from
    "PUT": WRITE,
    "COPY": WRITE,
    "DELETE": WRITE,
    "MULTIPART": WRITE,
    "UPLOAD_PART_COPY": WRITE,
    "GET": READ,
    "HEAD": READ,
    "LIST": READ,
}


@dataclass
class ModelConfig:
    """The model's parameters (what `make bench-copy` reports under `model`)."""

    seed: int = 1
    # This machine (2 cores, the model and the engines on them) serves about 300 copies a second
    # (RESULTS.md, copy table): at 30 % in one prefix, that prefix sees about 90 a second. A limit
    # of 60 binds there with a third in hand, as S3's 3,500 binds a Glue job of tens of executors
    # (and 200, the issue's example, never bound: no SlowDown at all). Reads at S3's ratio (5,500/3,500).
    per_prefix_writes_per_s: float = 60.0
    per_prefix_reads_per_s: float = 95.0
    burst_s: float = 0.25  # each bucket holds this many seconds of its rate
    slowdown_ms: float = 5.0
    latency_median_ms: float = 30.0
    latency_p99_ms: float = 150.0
    latency: bool = True
    bandwidth_mib_s: float = 100.0  # per copy (or GET/PUT body) of a large object
    large_object_mib: float = 16.0

    @property
    def sigma(self) -> float:
        return math.log(self.latency_p99_ms / self.latency_median_ms) / Z_99

    @property
    def latency_mean_ms(self) -> float:
        """The lognormal's mean: what a lower bound on time per request uses."""
        return self.latency_median_ms * math.exp(self.sigma**2 / 2)

    def transfer_s(self, size: int) -> float:
        return size / (self.bandwidth_mib_s * MiB) if size > self.large_object_mib * MiB else 0.0

    def summary(self) -> dict[str, Any]:
        return {**asdict(self), "latency_mean_ms": round(self.latency_mean_ms, 2)}


class TokenBucket:
    """`rate` tokens a second, at most `rate * burst_s` held (at least one)."""

    def __init__(self, rate: float, burst_s: float, now: float) -> None:
        self.rate = rate
        self.capacity = max(1.0, rate * burst_s)
        self.tokens = self.capacity
        self.at = now

    def refill(self, now: float) -> None:
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now


@dataclass
class Obj:
    size: int
    digest: bytes  # SHA-256 of the bytes written
    md5: str
    data: bytes | None  # kept for metadata files only
    checksum_algorithm: str | None  # the full-object checksum the object carries
    metadata: dict[str, str] = field(default_factory=dict)
    modified: float = field(default_factory=time.time)

    def checksum(self, algorithm: str) -> str:
        """The object's checksum in `algorithm`: real for SHA256 (and for the others when the bytes
        are kept), else a stand-in derived from the digest."""
        if algorithm == "SHA256":
            return base64.b64encode(self.digest).decode()
        if self.data is not None and algorithm == "CRC32":
            return base64.b64encode(zlib.crc32(self.data).to_bytes(4, "big")).decode()
        width = {"CRC64NVME": 8, "CRC32C": 4, "CRC32": 4, "SHA1": 20}[algorithm]
        stand_in = hashlib.sha256(algorithm.encode() + self.digest).digest()[:width]
        return base64.b64encode(stand_in).decode()

    def exact_checksums(self) -> dict[str, str]:
        """Checksums the model computes exactly (safe to send with a body botocore validates)."""
        out = {"SHA256": self.checksum("SHA256")} if self.checksum_algorithm == "SHA256" else {}
        if self.checksum_algorithm == "CRC32" and self.data is not None:
            out["CRC32"] = self.checksum("CRC32")
        return out


def keeps_bytes(key: str) -> bool:
    return "metadata" in key.split("/")[:-1] or key.endswith(METADATA_SUFFIXES)


def prefix_of(key: str) -> str:
    return key.rpartition("/")[0]


class Model:
    """The buckets' objects, the token buckets and the counts; thread-safe."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.lock = threading.Lock()
        self.buckets: dict[str, dict[str, Obj]] = {}
        self._sorted: dict[str, list[str] | None] = {}
        self.limits: dict[tuple[str, str], TokenBucket] = {}
        self.requests: Counter[tuple[str, str]] = Counter()  # (kind, bucket/prefix)
        self.slowdowns: Counter[tuple[str, str]] = Counter()
        self.asked: Counter[tuple[str, str]] = Counter()  # (kind, key) -> requests so far
        self.uploads: dict[str, dict[str, Any]] = {}

    # -- limits, latency, counts --
    def admit(self, kind: str, bucket: str, keys: list[str]) -> bool:
        """Count the request; False (a SlowDown) when a prefix it touches has no token left. A
        request over many keys (DeleteObjects) needs a token per key: it is admitted with as many
        as its bucket can hold and leaves the rest as debt, repaid before the next is admitted."""
        cls = KINDS[kind]
        rate = self.config.per_prefix_writes_per_s if cls == WRITE else self.config.per_prefix_reads_per_s
        needs = Counter(f"{bucket}/{prefix_of(k)}" for k in keys)
        now = time.monotonic()
        with self.lock:
            self.requests[(kind, f"{bucket}/{prefix_of(keys[0])}" if keys else bucket)] += 1
            if rate <= 0:
                return True
            limits = {p: self._limit(cls, p, rate, now) for p in needs}
            refused = [p for p, tb in limits.items() if tb.tokens < min(needs[p], tb.capacity)]
            if refused:
                for prefix in refused:
                    self.slowdowns[(kind, prefix)] += 1
                return False
            for prefix, tb in limits.items():
                tb.tokens -= needs[prefix]
            return True

    def _limit(self, cls: str, prefix: str, rate: float, now: float) -> TokenBucket:
        tb = self.limits.get((cls, prefix))
        if tb is None or tb.rate != rate:
            tb = self.limits[(cls, prefix)] = TokenBucket(rate, self.config.burst_s, now)
        tb.refill(now)
        return tb

    def latency_s(self, kind: str, key: str, size: int = 0) -> float:
        if not self.config.latency:
            return 0.0
        with self.lock:
            n = self.asked[(kind, key)]
            self.asked[(kind, key)] = n + 1
        rng = random.Random(f"{self.config.seed}:{kind}:{key}:{n}")
        ms = self.config.latency_median_ms * math.exp(self.config.sigma * rng.gauss(0.0, 1.0))
        return ms / 1000 + self.config.transfer_s(size)

    def stats(self) -> dict[str, Any]:
        with self.lock:
            by_kind: dict[str, dict[str, int]] = {}
            for (kind, prefix), n in sorted(self.requests.items()):
                if n:
                    by_kind.setdefault(kind, {})[prefix] = n
            slow: dict[str, dict[str, int]] = {}
            for (kind, prefix), n in sorted(self.slowdowns.items()):
                slow.setdefault(kind, {})[prefix] = n
            return {
                "config": self.config.summary(),
                "requests": by_kind,
                "requests_by_kind": {k: sum(v.values()) for k, v in by_kind.items()},
                "slowdowns": slow,
                "slowdowns_by_kind": {k: sum(v.values()) for k, v in slow.items()},
                "objects": {b: len(objs) for b, objs in self.buckets.items()},
            }

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.slowdowns.clear()
            self.asked.clear()
            self.limits.clear()

    # -- objects --
    def bucket(self, name: str) -> dict[str, Obj]:
        found = self.buckets.get(name)
        if found is None:
            raise S3Error(404, "NoSuchBucket", f"bucket {name} does not exist")
        return found

    def get(self, bucket: str, key: str) -> Obj:
        with self.lock:
            obj = self.bucket(bucket).get(key)
        if obj is None:
            raise S3Error(404, "NoSuchKey", f"{bucket}/{key} does not exist")
        return obj

    def put(self, bucket: str, key: str, obj: Obj) -> None:
        with self.lock:
            self.bucket(bucket)[key] = obj
            self._sorted[bucket] = None

    def delete(self, bucket: str, key: str) -> None:
        with self.lock:
            if self.bucket(bucket).pop(key, None) is not None:
                self._sorted[bucket] = None

    def keys(self, bucket: str) -> list[str]:
        with self.lock:
            keys = self._sorted.get(bucket)
            if keys is None:
                keys = self._sorted[bucket] = sorted(self.bucket(bucket))
            return keys


class S3Error(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
