"""A table bucket's storage (S3 Tables): what its objects take, known from the bucket's name.

Each S3 Tables table keeps its files in a bucket of its own, its warehouse location, named
`<id>--table-s3` (a suffix no other bucket may end in: S3's naming rules reserve it). That storage
answers only PutObject, GetObject, HeadObject, CreateMultipartUpload, UploadPart,
CompleteMultipartUpload, AbortMultipartUpload and ListParts (AWS's "Supported Amazon S3
object-level API operations for S3 Tables"): no CopyObject or UploadPartCopy, so every copy
passes through the engine (`copy/streamed.py`); no ListObjects, so what is there is known from
the journal and the ledger or asked with a HEAD; no DeleteObject, so nothing is ever deleted
there (the bucket's unreferenced-file removal takes what no snapshot reaches). Its objects are
always SSE-S3, STANDARD and bucket-owner-full-control: nothing to ask for.

The name decides, not the request: every layer (the plan's checks on a Lambda, the copies on a
Spark executor, the prune after Validate) sees the target's URI and needs nothing passed down.
(S3FileIO sends such a bucket's requests to its own client's region: a table's storage answers
no GetBucketLocation, and it is in its table bucket's region, the target's.)
"""

from __future__ import annotations

from icelake.aws.fileio.s3 import TABLE_STORAGE_SUFFIX
from icelake.uris import canonical

__all__ = [
    "NO_DELETE",
    "PENDING_PREFIX",
    "TABLE_STORAGE_OPERATIONS",
    "TABLE_STORAGE_PARAMETERS",
    "TABLE_STORAGE_SUFFIX",
    "TAKEN_CHECKSUMS",
    "is_table_storage",
    "without_table_storage",
]

# The S3 operations a table bucket's storage answers; anything else is refused there.
TABLE_STORAGE_OPERATIONS = frozenset(
    {
        "PutObject",
        "GetObject",
        "HeadObject",
        "CreateMultipartUpload",
        "UploadPart",
        "CompleteMultipartUpload",
        "AbortMultipartUpload",
        "ListParts",
    }
)

# What each of those operations takes there, as botocore's parameter names: the headers AWS's page
# lists for it (read 2026-12-07). Not among them: user metadata (x-amz-meta-*), a multipart
# upload's checksum type or object size, the CRC64NVME checksum header. So a copy there sends
# none of them (`streamed.py`), and the tests hold every request to this list.
_CHECKSUMS = {"ChecksumCRC32", "ChecksumCRC32C", "ChecksumSHA1", "ChecksumSHA256"}
_CONTENT = {
    "CacheControl",
    "ContentDisposition",
    "ContentEncoding",
    "ContentLanguage",
    "ContentType",
    "Expires",
}
_FIXED = {"ACL", "StorageClass", "ServerSideEncryption"}  # each has one value there, its default
_READ = {
    "IfMatch",
    "IfNoneMatch",
    "IfModifiedSince",
    "IfUnmodifiedSince",
    "ChecksumMode",
    "ExpectedBucketOwner",
}
TABLE_STORAGE_PARAMETERS: dict[str, frozenset[str]] = {
    "PutObject": frozenset(
        {"Body", "ContentLength", "ContentMD5", "ChecksumAlgorithm", "IfMatch", "IfNoneMatch"}
        | _CHECKSUMS
        | _CONTENT
        | _FIXED
        | {"ExpectedBucketOwner"}
    ),
    "CreateMultipartUpload": frozenset({"ChecksumAlgorithm", "ExpectedBucketOwner"} | _CONTENT | _FIXED),
    "UploadPart": frozenset(
        {
            "Body",
            "ContentLength",
            "ContentMD5",
            "ChecksumAlgorithm",
            "UploadId",
            "PartNumber",
            "ExpectedBucketOwner",
        }
        | _CHECKSUMS
    ),
    "CompleteMultipartUpload": frozenset(
        {"UploadId", "MultipartUpload", "IfMatch", "IfNoneMatch", "ExpectedBucketOwner"} | _CHECKSUMS
    ),
    "AbortMultipartUpload": frozenset({"UploadId", "ExpectedBucketOwner"}),
    "ListParts": frozenset({"UploadId", "ExpectedBucketOwner", "MaxParts", "PartNumberMarker"}),
    "GetObject": frozenset(_READ | {"Range"}),
    "HeadObject": frozenset(_READ | {"Range"}),
}
# The checksums a PutObject there takes (its x-amz-checksum-* headers): a source's checksum in
# another algorithm (CRC64NVME) is not sent; the copy's own CRC32 is, and the bytes are checked here.
TAKEN_CHECKSUMS = ("CRC32", "CRC32C", "SHA1", "SHA256")

# Why nothing is deleted on such a target: what a prune, a rollback or a cleanup says instead.
NO_DELETE = (
    "S3 Tables storage takes no DeleteObject: files no snapshot reaches are left to the table "
    "bucket's unreferenced-file removal (by default: unreferenced after 3 days, deleted 10 days later)"
)


# An S3 Tables table's location before Plan has read its warehouse location (the request's
# PENDING_SCHEME, icelake/request/names.py): an assessment plans and prices the copy into it.
PENDING_PREFIX = "s3tables://"


def is_table_storage(uri: str) -> bool:
    """Whether `uri` (an s3:// URI, or any other) lies in a table bucket's storage, or names an
    S3 Tables table whose storage is not known yet (`PENDING_PREFIX`)."""
    if uri.startswith(PENDING_PREFIX):
        return True
    c = canonical(uri)
    if not c.startswith("s3://"):
        return False
    bucket = c[len("s3://") :].partition("/")[0]
    return bucket.endswith(TABLE_STORAGE_SUFFIX)


def without_table_storage(roots: list[str]) -> list[str]:
    """The prefixes of `roots` a listing may read: none in a table bucket's storage, whose keys are
    asked about one by one (HEAD) instead."""
    return [r for r in roots if not is_table_storage(r)]
