"""The S3 model's HTTP server (benchmarks/s3_model.py runs it): the S3 REST calls a copy run uses,
path-style, each admitted or refused by the model's throttling (benchmarks/s3_throttle.py) before
it is answered, and the admin requests under /_model/."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import re
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree as ET
from xml.sax.saxutils import escape

from benchmarks.s3_throttle import CHECKSUM_ALGORITHMS, Model, ModelConfig, Obj, S3Error, keeps_bytes

_S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>'


def _xml(root: str, children: list[tuple[str, Any]]) -> bytes:
    # S3's error documents have no namespace (botocore finds no Code in one that has).
    el = ET.Element(root) if root == "Error" else ET.Element(root, xmlns=_S3_NS)
    for name, value in children:
        if isinstance(value, ET.Element):
            el.append(value)
        else:
            ET.SubElement(el, name).text = str(value)
    return _DECLARATION.encode() + ET.tostring(el)


def _contents(key: str, obj: Obj) -> str:
    """A listing's entry of one object."""
    checksum = (
        f"<ChecksumAlgorithm>{obj.checksum_algorithm}</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType>"
        if obj.checksum_algorithm
        else ""
    )
    return (
        f"<Contents><Key>{escape(key)}</Key><LastModified>{_iso(obj.modified)}</LastModified>"
        f'<ETag>"{obj.md5}"</ETag><Size>{obj.size}</Size><StorageClass>STANDARD</StorageClass>{checksum}</Contents>'
    )


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
        # Written as text, not an ElementTree: the model shares the machine's cores with the client
        # it answers, and a page of 1,000 keys built as elements cost it about 47 ms of CPU, as much
        # as botocore's parse of the page; S3's own work on a page is in its latency, not the client's
        # cores.
        body = [
            f'{_DECLARATION}<ListBucketResult xmlns="{_S3_NS}">'
            f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>"
            f"<KeyCount>{len(page)}</KeyCount><MaxKeys>{limit}</MaxKeys>"
        ]
        body += [_contents(k, obj) for k in page if (obj := objects.get(k)) is not None]
        body.append(f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>")
        if more:
            body.append(f"<NextContinuationToken>{escape(page[-1])}</NextContinuationToken>")
        body.append("</ListBucketResult>")
        self._send(200, "".join(body).encode(), {"Content-Type": "application/xml"})

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
