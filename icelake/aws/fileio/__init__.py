"""A small FileIO: the same calls on s3:// objects and on a local file system.

The migration core only talks to this interface, so it runs unchanged against S3 (in AWS or in
moto) and against a directory on a laptop. The interface and what it says of an object are in
`base`, the two file systems in `local` and `s3`, and which one a URI gets (in this process or
in another) in `spec`; every public name is importable from here.
"""

from icelake.aws.fileio.base import FileIO, ObjectInfo, is_absent, sha256_b64
from icelake.aws.fileio.local import (
    TEMP_PREFIX,
    ListedRange,
    LocalFileIO,
    remove_stale_temp_files,
    scan_range,
)
from icelake.aws.fileio.s3 import (
    CHECKSUM_ALGORITHMS,
    DELETE_BATCH,
    SOURCE_ETAG_KEY,
    S3FileIO,
    bucket_region,
    full_checksum,
    split_s3,
)
from icelake.aws.fileio.spec import FileIOSpec, io_for

__all__ = [
    "CHECKSUM_ALGORITHMS",
    "DELETE_BATCH",
    "SOURCE_ETAG_KEY",
    "TEMP_PREFIX",
    "FileIO",
    "FileIOSpec",
    "ListedRange",
    "LocalFileIO",
    "ObjectInfo",
    "S3FileIO",
    "bucket_region",
    "full_checksum",
    "io_for",
    "is_absent",
    "remove_stale_temp_files",
    "scan_range",
    "sha256_b64",
    "split_s3",
]
