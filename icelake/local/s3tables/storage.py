"""A table bucket's storage as AWS serves it: the S3 API on the warehouse location's bucket (its
name ends in `--table-s3`, a suffix AWS keeps for it) accepts only PutObject, GetObject,
HeadObject, CreateMultipartUpload, UploadPart, CompleteMultipartUpload, AbortMultipartUpload and
ListParts (AWS's page "Supported Amazon S3 object-level API operations for S3 Tables").

moto 5.2.5 refuses ListObjects(V2) and DeleteObject there and serves everything else. This module
refuses every other object operation and every bucket-level one (CopyObject, UploadPartCopy,
DeleteObjects, ListMultipartUploads, ListObjectVersions, object tagging and ACLs, HeadBucket...) with
HTTP 405 `MethodNotAllowed`, the code moto already answers for ListObjects and DeleteObject. AWS's
page names the supported operations but not the error for the others; 405 MethodNotAllowed is S3's
answer for an operation the resource does not support, and unlike AccessDenied it cannot be taken
for a missing IAM permission. Callers must not rely on the code: they must not call these at all.

Objects there are always SSE-S3 (AES256), STANDARD and bucket-owner-full-control: AWS says these
cannot be changed. Here every object is stored SSE-S3 and answers so; a PutObject or
CreateMultipartUpload naming another encryption, storage class or canned ACL is refused
(InvalidArgument), so that code passing here never depends on a setting AWS would not apply.

`If-None-Match: *` (PutObject, CompleteMultipartUpload) never overwrites: moto checks for the key
and then writes; that check and write are made atomic here, for any bucket.

`recorded()` counts the operations sent to table storage, served or refused, so a test can show a
whole run used only what AWS serves there."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from icelake.migrate.copy.table_storage import TABLE_STORAGE_OPERATIONS, TABLE_STORAGE_SUFFIX

# AWS's page, as the product reads it too (icelake/migrate/copy/table_storage.py): one list.
SUFFIX = TABLE_STORAGE_SUFFIX
SUPPORTED = TABLE_STORAGE_OPERATIONS
FIXED = {  # request header -> the only value table storage takes
    "x-amz-server-side-encryption": "AES256",
    "x-amz-storage-class": "STANDARD",
    "x-amz-acl": "bucket-owner-full-control",
}
_SUBRESOURCES = {  # (method, subresource of a key) -> operation
    ("GET", "tagging"): "GetObjectTagging",
    ("GET", "acl"): "GetObjectAcl",
    ("GET", "attributes"): "GetObjectAttributes",
    ("GET", "retention"): "GetObjectRetention",
    ("GET", "legal-hold"): "GetObjectLegalHold",
    ("GET", "torrent"): "GetObjectTorrent",
    ("PUT", "tagging"): "PutObjectTagging",
    ("PUT", "acl"): "PutObjectAcl",
    ("PUT", "retention"): "PutObjectRetention",
    ("PUT", "legal-hold"): "PutObjectLegalHold",
    ("POST", "restore"): "RestoreObject",
    ("POST", "select"): "SelectObjectContent",
    ("DELETE", "tagging"): "DeleteObjectTagging",
}
_PLAIN = {"GET": "GetObject", "HEAD": "HeadObject", "PUT": "PutObject", "DELETE": "DeleteObject"}
_BUCKET_LEVEL = {  # (method, subresource of a bucket) -> operation, for the refusal's message
    ("GET", "uploads"): "ListMultipartUploads",
    ("GET", "versions"): "ListObjectVersions",
    ("GET", "location"): "GetBucketLocation",
    ("POST", "delete"): "DeleteObjects",
    ("HEAD", ""): "HeadBucket",
}
# A listing's own parameters: a GET of the bucket with only these is ListObjects(V2)
_LISTING = frozenset({"prefix", "marker", "max-keys", "delimiter", "encoding-type", "list-type"})
_LISTING |= {"continuation-token", "start-after", "fetch-owner", "optional-object-attributes"}
_CONDITIONAL = threading.Lock()  # check-then-write of If-None-Match: * made atomic
_RECORDING: list[Counter[str]] = []  # the open `recorded()` blocks
_RECORD_LOCK = threading.Lock()


@contextmanager
def recorded() -> Iterator[Counter[str]]:
    """Every object operation sent to a table's storage while open, served or refused (a refused
    one counted as "<operation> (refused)"): a test can show a run used only what AWS serves
    there, even where the caller swallowed a refusal."""
    calls: Counter[str] = Counter()
    with _RECORD_LOCK:
        _RECORDING.append(calls)
    try:
        yield calls
    finally:
        with _RECORD_LOCK:
            _RECORDING.remove(calls)


def _record(operation: str) -> None:
    with _RECORD_LOCK:
        for calls in _RECORDING:
            calls[operation] += 1


_ORIGINAL: dict[str, Callable[..., Any]] = {}


def key_operation(method: str, query: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """The S3 operation a request on a key is (its method, query string and headers)."""
    if method == "PUT" and headers.get("x-amz-copy-source"):
        return "UploadPartCopy" if "uploadId" in query else "CopyObject"
    if "uploadId" in query:
        return {
            "GET": "ListParts",
            "PUT": "UploadPart",
            "POST": "CompleteMultipartUpload",
            "DELETE": "AbortMultipartUpload",
        }.get(method, f"{method} on an upload")
    if method == "POST":
        return "CreateMultipartUpload" if "uploads" in query else _subresource(method, query, "PostObject")
    return _subresource(method, query, _PLAIN.get(method, f"{method} on an object"))


def _subresource(method: str, query: Mapping[str, Any], plain: str) -> str:
    for name in query:
        if (method, name) in _SUBRESOURCES:
            return _SUBRESOURCES[(method, name)]
    return plain


def bucket_operation(method: str, query: Mapping[str, Any]) -> str:
    """The S3 operation a request on a bucket is (for the refusal's message and the record)."""
    if method == "GET" and set(query) <= _LISTING:
        return "ListObjectsV2" if query.get("list-type") in (["2"], "2") else "ListObjects"
    for name in (*query, ""):
        if (method, name) in _BUCKET_LEVEL:
            return _BUCKET_LEVEL[(method, name)]
    return f"{method} on the bucket ({', '.join(query) or 'no subresource'})"


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], str]:
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message><RequestId>icelake-local</RequestId></Error>"
    )
    return status, {"content-type": "application/xml"}, body


def refusal(operation: str) -> tuple[int, dict[str, str], str]:
    return _error(
        405,
        "MethodNotAllowed",
        f"The specified method is not allowed against this resource: {operation} is not among the "
        f"object operations a table bucket's storage accepts ({', '.join(sorted(SUPPORTED))})",
    )


def _fixed_header_refused(headers: Mapping[str, str]) -> tuple[int, dict[str, str], str] | None:
    for header, only in FIXED.items():
        given = headers.get(header) or only  # werkzeug's and requests' headers: case-insensitive
        if given != only:
            return _error(
                400,
                "InvalidArgument",
                f"{header}: {given} is not accepted on a table bucket's storage, which "
                f"stores every object with {only}",
            )
    return None


def _key_response(self: Any, request: Any, full_url: str) -> Any:
    headers = request.headers
    if self.parse_bucket_name_from_url(request, full_url).endswith(SUFFIX):
        operation = key_operation(request.method, self._get_querystring(request, full_url), headers)
        _record(operation if operation in SUPPORTED else f"{operation} (refused)")
        if operation not in SUPPORTED:
            return refusal(operation)
        if operation in ("PutObject", "CreateMultipartUpload"):
            refused = _fixed_header_refused(headers)
            if refused:
                return refused
    if request.method in ("PUT", "POST") and headers.get("If-None-Match") == "*":
        with _CONDITIONAL:
            return _ORIGINAL["_key_response"](self, request, full_url)
    return _ORIGINAL["_key_response"](self, request, full_url)


def _bucket_response(self: Any, request: Any, full_url: str) -> Any:
    bucket = self.parse_bucket_name_from_url(request, full_url)
    if bucket and bucket.endswith(SUFFIX):
        operation = bucket_operation(request.method, self._get_querystring(request, full_url))
        _record(f"{operation} (refused)")
        return refusal(operation)
    return _ORIGINAL["_bucket_response"](self, request, full_url)


_SSE_S3 = {
    "Rule": {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}, "BucketKeyEnabled": False}
}


def create_table_storage_bucket(self: Any, region_name: str) -> Any:
    """moto's table storage, encrypting every object SSE-S3 as AWS does."""
    bucket = _ORIGINAL["create_table_storage_bucket"](self, region_name)
    bucket.encryption = _SSE_S3
    return bucket


def install(replace: Callable[[Any, str, Any], None]) -> None:
    from moto.s3.models import S3Backend
    from moto.s3.responses import S3Response

    _ORIGINAL.setdefault("_key_response", S3Response.__dict__["_key_response"])
    _ORIGINAL.setdefault("_bucket_response", S3Response.__dict__["_bucket_response"])
    _ORIGINAL.setdefault("create_table_storage_bucket", S3Backend.__dict__["create_table_storage_bucket"])
    replace(S3Response, "_key_response", _key_response)
    replace(S3Response, "_bucket_response", _bucket_response)
    replace(S3Backend, "create_table_storage_bucket", create_table_storage_bucket)
