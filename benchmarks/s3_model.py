"""A model of S3 for copy benchmarks: its per-prefix request rates, its latency, its SlowDown.

    .venv/bin/python -m benchmarks.s3_model --port 0 --seed 1      # prints {"endpoint": ...} first

A separate process on 127.0.0.1 that speaks the S3 REST API a copy run uses (path-style): bucket
create/head/location, ListObjectsV2, HeadObject, GetObject (ranges), PutObject (also aws-chunked bodies and
If-None-Match), CopyObject (x-amz-copy-source-if-match, x-amz-checksum-algorithm), the multipart
calls around UploadPartCopy, DeleteObject and DeleteObjects. Point boto3 at it with
AWS_ENDPOINT_URL; any credentials do (signatures are not checked).

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
import base64
import bisect
import contextlib
import hashlib
import itertools
import json
import math
import random
import re
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree as ET

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


def _xml(root: str, children: list[tuple[str, Any]]) -> bytes:
    # S3's error documents have no namespace (botocore finds no Code in one that has).
    el = (
        ET.Element(root)
        if root == "Error"
        else ET.Element(root, xmlns="http://s3.amazonaws.com/doc/2006-03-01/")
    )
    for name, value in children:
        if isinstance(value, ET.Element):
            el.append(value)
        else:
            ET.SubElement(el, name).text = str(value)
    return b'<?xml version="1.0" encoding="UTF-8"?>' + ET.tostring(el)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _http_date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: boto3 reuses its pooled connections
    # Headers and body go out in two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK of the headers, tens of milliseconds of latency the model never drew.
    disable_nagle_algorithm = True
    model: Model  # set on the subclass the server is made with

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- plumbing --
    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if "aws-chunked" in (self.headers.get("Content-Encoding") or "") or (
            self.headers.get("x-amz-content-sha256", "").startswith("STREAMING-")
        ):
            return _dechunk(raw)
        return raw

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        headers = dict(headers or {})
        headers.setdefault("Content-Length", str(len(body)))  # a HEAD names the object's length
        headers["x-amz-request-id"] = uuid.uuid4().hex[:16]
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _error(self, err: S3Error) -> None:
        body = (
            b"" if self.command == "HEAD" else _xml("Error", [("Code", err.code), ("Message", err.message)])
        )
        self._send(err.status, body, {"Content-Type": "application/xml"})

    def _route(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        path = unquote(url.path)
        if path.startswith("/_model/"):
            self._admin(path, self._body())
            return
        bucket, _, key = path.lstrip("/").partition("/")
        body = self._body() if self.command in ("PUT", "POST") else b""
        try:
            self._s3(bucket, key, query, body)
        except S3Error as err:
            self._error(err)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _route

    def _admin(self, path: str, body: bytes) -> None:
        model = self.model
        if path == "/_model/stats":
            self._send(200, json.dumps(model.stats()).encode(), {"Content-Type": "application/json"})
            return
        if path == "/_model/objects":  # bucket -> key -> [size, SHA-256 of its bytes]
            with model.lock:
                dump = {
                    b: {k: [o.size, o.digest.hex()] for k, o in objs.items()}
                    for b, objs in model.buckets.items()
                }
            self._send(200, json.dumps(dump).encode(), {"Content-Type": "application/json"})
            return
        if path == "/_model/clear" and self.command == "POST":  # empty the buckets named in the body
            with model.lock:
                for name in json.loads(body or b"[]"):
                    model.buckets[name] = {}
                    model._sorted[name] = None
            self._send(200, b"{}", {"Content-Type": "application/json"})
            return
        if path == "/_model/config" and self.command == "POST":
            changes = json.loads(body or b"{}")
            if changes.pop("reset", False):
                model.reset()
            with model.lock:
                for name, value in changes.items():
                    if not hasattr(model.config, name):
                        raise ValueError(f"unknown model parameter {name}")
                    setattr(model.config, name, type(getattr(model.config, name))(value))
                model.limits.clear()
            self._send(200, json.dumps(model.config.summary()).encode(), {"Content-Type": "application/json"})
            return
        self._send(404, b"unknown admin path")

    def _throttle(self, kind: str, bucket: str, keys: list[str], size: int = 0) -> None:
        """Admit (or refuse with SlowDown after its delay), then wait the request's latency."""
        if not self.model.admit(kind, bucket, keys):
            time.sleep(self.model.config.slowdown_ms / 1000)
            raise S3Error(503, "SlowDown", "Please reduce your request rate.")
        time.sleep(self.model.latency_s(kind, f"{bucket}/{keys[0] if keys else ''}", size))

    # -- the S3 API --
    def _s3(self, bucket: str, key: str, query: dict[str, str], body: bytes) -> None:
        if not key:
            self._bucket_op(bucket, query, body)
        else:
            self._object_op(bucket, key, query, body)

    def _bucket_op(self, bucket: str, query: dict[str, str], body: bytes) -> None:
        model, cmd = self.model, self.command
        if cmd == "PUT":
            with model.lock:
                model.buckets.setdefault(bucket, {})
            self._send(200, headers={"Location": f"/{bucket}"})
        elif cmd == "HEAD":
            model.bucket(bucket)
            self._send(200, headers={"x-amz-bucket-region": "us-east-1"})
        elif cmd == "GET" and query.get("list-type") == "2":
            self._list(bucket, query)
        elif cmd == "GET" and "location" in query:  # GetBucketLocation: us-east-1 answers no constraint
            model.bucket(bucket)
            self._send(200, _xml("LocationConstraint", []))
        elif cmd == "POST" and "delete" in query:
            self._delete_many(bucket, body)
        else:
            raise S3Error(501, "NotImplemented", f"{cmd} on a bucket with {sorted(query)}")

    def _object_op(self, bucket: str, key: str, query: dict[str, str], body: bytes) -> None:
        model, cmd, h = self.model, self.command, self.headers
        if cmd == "PUT" and "uploadId" in query:
            self._upload_part_copy(bucket, key, query)
        elif cmd == "PUT" and h.get("x-amz-copy-source"):
            self._copy(bucket, key)
        elif cmd == "PUT":
            self._put(bucket, key, body)
        elif cmd in ("GET", "HEAD"):
            self._get(bucket, key)
        elif cmd == "DELETE" and "uploadId" in query:
            self._throttle("MULTIPART", bucket, [key])
            model.uploads.pop(query["uploadId"], None)
            self._send(204)
        elif cmd == "DELETE":
            self._throttle("DELETE", bucket, [key])
            model.delete(bucket, key)
            self._send(204)
        elif cmd == "POST" and "uploads" in query:
            self._throttle("MULTIPART", bucket, [key])
            upload_id = uuid.uuid4().hex
            algorithm = h.get("x-amz-checksum-algorithm")
            model.uploads[upload_id] = {"parts": {}, "algorithm": algorithm, "meta": _user_meta(h)}
            self._send(
                200,
                _xml(
                    "InitiateMultipartUploadResult",
                    [("Bucket", bucket), ("Key", key), ("UploadId", upload_id)],
                ),
            )
        elif cmd == "POST" and "uploadId" in query:
            self._complete(bucket, key, query["uploadId"])
        else:
            raise S3Error(501, "NotImplemented", f"{cmd} on an object with {sorted(query)}")

    def _list(self, bucket: str, query: dict[str, str]) -> None:
        prefix = query.get("prefix", "")
        self._throttle("LIST", bucket, [prefix + "x"] if prefix else ["x"])
        keys = self.model.keys(bucket)
        after = query.get("continuation-token") or query.get("start-after") or ""
        at = bisect.bisect_right(keys, after) if after else bisect.bisect_left(keys, prefix)
        limit = min(1000, int(query.get("max-keys") or 1000))
        page: list[str] = []
        while at < len(keys) and len(page) < limit and keys[at].startswith(prefix):
            page.append(keys[at])
            at += 1
        more = at < len(keys) and keys[at].startswith(prefix)
        objects = self.model.buckets[bucket]
        children: list[tuple[str, Any]] = [
            ("Name", bucket),
            ("Prefix", prefix),
            ("KeyCount", len(page)),
            ("MaxKeys", limit),
        ]
        for k in page:
            obj = objects.get(k)
            if obj is None:
                continue
            c = ET.Element("Contents")
            for name, value in (
                ("Key", k),
                ("LastModified", _iso(obj.modified)),
                ("ETag", f'"{obj.md5}"'),
                ("Size", obj.size),
                ("StorageClass", "STANDARD"),
            ):
                ET.SubElement(c, name).text = str(value)
            if obj.checksum_algorithm:
                ET.SubElement(c, "ChecksumAlgorithm").text = obj.checksum_algorithm
                ET.SubElement(c, "ChecksumType").text = "FULL_OBJECT"
            children.append(("Contents", c))
        children.append(("IsTruncated", "true" if more else "false"))
        if more:
            children.append(("NextContinuationToken", page[-1]))
        self._send(200, _xml("ListBucketResult", children), {"Content-Type": "application/xml"})

    def _put(self, bucket: str, key: str, body: bytes) -> None:
        h = self.headers
        self._throttle("PUT", bucket, [key], len(body))
        if h.get("If-None-Match") == "*":
            try:
                self.model.get(bucket, key)
            except S3Error:
                pass
            else:
                raise S3Error(412, "PreconditionFailed", "the key exists (If-None-Match: *)")
        algorithm = None
        given: str | None = None
        for candidate in CHECKSUM_ALGORITHMS:
            value = h.get(f"x-amz-checksum-{candidate.lower()}")
            if value:
                algorithm, given = candidate, value
        obj = Obj(
            size=len(body),
            digest=hashlib.sha256(body).digest(),
            md5=hashlib.md5(body).hexdigest(),
            data=body if keeps_bytes(key) else None,
            checksum_algorithm=algorithm or "CRC64NVME",  # S3's default for a new object
            metadata=_user_meta(h),
        )
        if algorithm in ("SHA256", "CRC32") and given is not None:
            exact = Obj(obj.size, obj.digest, obj.md5, body, algorithm).checksum(algorithm)
            if exact != given:
                raise S3Error(400, "BadDigest", f"the {algorithm} you specified did not match the body")
        self.model.put(bucket, key, obj)
        headers = {"ETag": f'"{obj.md5}"'}
        for name, value in obj.exact_checksums().items():
            headers[f"x-amz-checksum-{name.lower()}"] = value
        self._send(200, headers=headers)

    def _source(self) -> tuple[str, str, Obj]:
        raw = unquote(self.headers["x-amz-copy-source"]).lstrip("/")
        sb, _, sk = raw.partition("?")[0].partition("/")
        obj = self.model.get(sb, sk)
        wanted = self.headers.get("x-amz-copy-source-if-match")
        if wanted and wanted.strip('"') != obj.md5:
            raise S3Error(412, "PreconditionFailed", "x-amz-copy-source-if-match does not match the source")
        return sb, sk, obj

    def _copy(self, bucket: str, key: str) -> None:
        h = self.headers
        _, _, src = self._source()
        self._throttle("COPY", bucket, [key], src.size)
        _, _, src = self._source()  # as it is once the copy ran
        asked = h.get("x-amz-checksum-algorithm")
        algorithm = asked.upper() if asked else src.checksum_algorithm
        meta = _user_meta(h) if h.get("x-amz-metadata-directive") == "REPLACE" else dict(src.metadata)
        obj = Obj(src.size, src.digest, src.md5, src.data, algorithm, meta)
        self.model.put(bucket, key, obj)
        children: list[tuple[str, Any]] = [("ETag", f'"{obj.md5}"'), ("LastModified", _iso(obj.modified))]
        if algorithm:
            children += [(f"Checksum{algorithm}", obj.checksum(algorithm)), ("ChecksumType", "FULL_OBJECT")]
        self._send(200, _xml("CopyObjectResult", children), {"Content-Type": "application/xml"})

    def _upload_part_copy(self, bucket: str, key: str, query: dict[str, str]) -> None:
        upload = self.model.uploads.get(query["uploadId"])
        if upload is None:
            raise S3Error(404, "NoSuchUpload", "the upload does not exist")
        _, _, src = self._source()
        start, end = 0, src.size - 1
        rng = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("x-amz-copy-source-range", ""))
        if rng:
            start, end = int(rng[1]), min(int(rng[2]), src.size - 1)
        self._throttle("UPLOAD_PART_COPY", bucket, [key], end - start + 1)
        etag = hashlib.md5(f"{src.md5}:{start}:{end}".encode()).hexdigest()
        upload["parts"][int(query["partNumber"])] = (src, start, end, etag)
        self._send(200, _xml("CopyPartResult", [("ETag", f'"{etag}"'), ("LastModified", _iso(time.time()))]))

    def _complete(self, bucket: str, key: str, upload_id: str) -> None:
        self._throttle("MULTIPART", bucket, [key])
        upload = self.model.uploads.pop(upload_id, None)
        if upload is None:
            raise S3Error(404, "NoSuchUpload", "the upload does not exist")
        parts = [upload["parts"][n] for n in sorted(upload["parts"])]
        whole = (
            len({p[0].digest for p in parts}) == 1
            and parts[0][1] == 0
            and parts[-1][2] == parts[0][0].size - 1
        )
        contiguous = all(a[2] + 1 == b[1] for a, b in itertools.pairwise(parts))
        if whole and contiguous:  # the parts make the source object again: same bytes
            src = parts[0][0]
            digest, data = src.digest, src.data
        else:
            digest, data = hashlib.sha256("|".join(p[3] for p in parts).encode()).digest(), None
        size = sum(p[2] - p[1] + 1 for p in parts)
        md5 = hashlib.md5(b"".join(bytes.fromhex(p[3]) for p in parts)).hexdigest() + f"-{len(parts)}"
        obj = Obj(size, digest, md5, data, upload["algorithm"], upload["meta"])
        self.model.put(bucket, key, obj)
        children: list[tuple[str, Any]] = [("Bucket", bucket), ("Key", key), ("ETag", f'"{md5}"')]
        if obj.checksum_algorithm:
            children += [
                (f"Checksum{obj.checksum_algorithm}", obj.checksum(obj.checksum_algorithm)),
                ("ChecksumType", "FULL_OBJECT"),
            ]
        self._send(200, _xml("CompleteMultipartUploadResult", children), {"Content-Type": "application/xml"})

    def _get(self, bucket: str, key: str) -> None:
        kind = "HEAD" if self.command == "HEAD" else "GET"
        obj = self.model.get(bucket, key)
        rng = self.headers.get("Range")
        start, end = 0, obj.size - 1
        if rng:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng)
            if m and m[1] == "":
                start = max(0, obj.size - int(m[2]))
            elif m:
                start, end = int(m[1]), min(int(m[2]) if m[2] else obj.size - 1, obj.size - 1)
        length = max(0, end - start + 1)
        self._throttle(kind, bucket, [key], 0 if kind == "HEAD" else length)
        headers = {
            "Content-Length": str(length),
            "ETag": f'"{obj.md5}"',
            "Last-Modified": _http_date(obj.modified),
            "Content-Type": "binary/octet-stream",
            "Accept-Ranges": "bytes",
        }
        headers.update({f"x-amz-meta-{k}": v for k, v in obj.metadata.items()})
        checksum_mode = (self.headers.get("x-amz-checksum-mode") or "").upper() == "ENABLED"
        if checksum_mode and kind == "HEAD" and obj.checksum_algorithm:
            headers[f"x-amz-checksum-{obj.checksum_algorithm.lower()}"] = obj.checksum(obj.checksum_algorithm)
            headers["x-amz-checksum-type"] = "FULL_OBJECT"
        elif checksum_mode and not rng:
            for name, value in obj.exact_checksums().items():
                headers[f"x-amz-checksum-{name.lower()}"] = value
        if rng:
            headers["Content-Range"] = f"bytes {start}-{end}/{obj.size}"
        body = (
            b"" if kind == "HEAD" else (obj.data[start : end + 1] if obj.data is not None else bytes(length))
        )
        self._send(206 if rng else 200, body, headers)

    def _delete_many(self, bucket: str, body: bytes) -> None:
        ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
        root = ET.fromstring(body)
        keys = [el.text or "" for el in root.iter() if el.tag in (f"{ns}Key", "Key")]
        self._throttle("DELETE", bucket, keys)
        for key in keys:
            self.model.delete(bucket, key)
        quiet = any(
            (el.text or "").lower() == "true" for el in root.iter() if el.tag in (f"{ns}Quiet", "Quiet")
        )
        children: list[tuple[str, Any]] = []
        if not quiet:
            for key in keys:
                d = ET.Element("Deleted")
                ET.SubElement(d, "Key").text = key
                children.append(("Deleted", d))
        self._send(200, _xml("DeleteResult", children), {"Content-Type": "application/xml"})


def _user_meta(headers: Any) -> dict[str, str]:
    return {
        k[len("x-amz-meta-") :].lower(): v for k, v in headers.items() if k.lower().startswith("x-amz-meta-")
    }


def _dechunk(raw: bytes) -> bytes:
    """An aws-chunked body: hex size[;extensions] CRLF data CRLF ... 0 CRLF trailers CRLF."""
    out, at = bytearray(), 0
    while True:
        eol = raw.index(b"\r\n", at)
        size = int(raw[at:eol].split(b";")[0], 16)
        at = eol + 2
        if size == 0:
            return bytes(out)
        out += raw[at : at + size]
        at += size + 2


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


def serve(config: ModelConfig, port: int = 0) -> tuple[ModelServer, Model]:
    """Start the model on 127.0.0.1 in this process's threads (the command runs it in its own)."""
    model = Model(config)
    handler = type("BoundHandler", (Handler,), {"model": model})
    server = ModelServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, name="s3-model", daemon=True).start()
    return server, model


class ModelProcess:
    """The model in a process of its own (`start_model`), and its admin requests."""

    def __init__(self, proc: subprocess.Popen[str], endpoint: str, config: dict[str, Any]) -> None:
        self.proc, self.endpoint, self.config = proc, endpoint, config

    def _admin(self, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        with urllib.request.urlopen(f"{self.endpoint}/_model/{path}", data=data, timeout=60) as answer:
            return json.loads(answer.read())

    def configure(self, **changes: Any) -> dict[str, Any]:
        """Change parameters (names of ModelConfig; `reset=True` clears the counts)."""
        self.config = self._admin("config", changes)
        return self.config

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
    config = ModelConfig(
        seed=a.seed,
        per_prefix_writes_per_s=a.writes_per_s,
        per_prefix_reads_per_s=a.reads_per_s,
        burst_s=a.burst_s,
        slowdown_ms=a.slowdown_ms,
        latency_median_ms=a.latency_median_ms,
        latency_p99_ms=a.latency_p99_ms,
        latency=not a.no_latency,
        bandwidth_mib_s=a.bandwidth_mib_s,
        large_object_mib=a.large_object_mib,
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
