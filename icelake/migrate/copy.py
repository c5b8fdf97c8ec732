"""Copy one file unchanged from the source to the target, and tell whether a copy is already there.

S3 to S3 is always server-side (CopyObject, or UploadPartCopy in parallel parts above the
threshold): bytes never flow through this process. The request is signed by the target
credentials, so the target role needs read access to the source objects (granted by the source
access stack) and the new object is owned by, and encrypted for, the target account.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from icelake.aws.fileio import (
    SOURCE_ETAG_KEY,
    TEMP_PREFIX,
    FileIO,
    LocalFileIO,
    ObjectInfo,
    S3FileIO,
    split_s3,
)
from icelake.errors import IcelakeError
from icelake.uris import local_path

GiB = 1024**3
MiB = 1024**2


@dataclass(frozen=True)
class CopySettings:
    multipart_threshold: int = 5 * GiB  # the CopyObject limit
    part_size: int = 512 * MiB
    part_workers: int = 8


class CopyVerificationError(IcelakeError):
    pass


def copy_file(
    src_io: FileIO, src: str, src_info: ObjectInfo, dst_io: FileIO, dst: str, settings: CopySettings
) -> None:
    if isinstance(src_io, S3FileIO) and isinstance(dst_io, S3FileIO):
        if src_info.size > settings.multipart_threshold:
            _s3_multipart_copy(src, src_info, dst_io, dst, settings)
        else:
            _s3_copy(src, src_info, dst_io, dst)
    elif isinstance(src_io, LocalFileIO) and isinstance(dst_io, LocalFileIO):
        _local_copy(src, src_info, dst)
    else:
        # Mixed local/S3 (seeding a bucket from a laptop, or the reverse): small scale, via memory.
        dst_io.write(dst, src_io.read(src))


def is_same_copy(
    src_io: FileIO, src: str, src_info: ObjectInfo, dst_io: FileIO, dst: str, dst_info: ObjectInfo
) -> bool:
    """Whether `dst` already holds exactly the bytes of `src` (never guesses: unknown means no)."""
    if src_info.size != dst_info.size:
        return False
    if dst_info.source_etag and src_info.etag:
        return dst_info.source_etag == src_info.etag
    if _full_checksum(src_info) and _full_checksum(dst_info):
        return src_info.sha256 == dst_info.sha256
    if isinstance(src_io, LocalFileIO) and isinstance(dst_io, LocalFileIO):
        return filecmp.cmp(local_path(src), local_path(dst), shallow=False)
    return src_io.read(src) == dst_io.read(dst)


def _full_checksum(info: ObjectInfo) -> bool:
    return bool(info.sha256) and "-" not in (info.sha256 or "")


def _local_copy(src: str, src_info: ObjectInfo, dst: str) -> None:
    target = local_path(dst)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=os.path.dirname(target))
    os.close(fd)
    try:
        shutil.copyfile(local_path(src), tmp)
        shutil.copymode(local_path(src), tmp)  # the source's mode, not mkstemp's 0600
        if os.path.getsize(tmp) != src_info.size:
            raise CopyVerificationError(
                f"copy of {src} has {os.path.getsize(tmp)} bytes, expected {src_info.size}"
            )
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _s3_copy(src: str, src_info: ObjectInfo, dst_io: S3FileIO, dst: str) -> None:
    sb, sk = split_s3(src)
    db, dk = split_s3(dst)
    out = dst_io.client.copy_object(
        CopySource={"Bucket": sb, "Key": sk},
        Bucket=db,
        Key=dk,
        MetadataDirective="REPLACE",
        Metadata={SOURCE_ETAG_KEY: src_info.etag or ""},
        ChecksumAlgorithm="SHA256",
        **dst_io.encryption_args(),
    )
    result = out.get("CopyObjectResult", {})
    copied_sha = result.get("ChecksumSHA256")
    if _full_checksum(src_info) and copied_sha and copied_sha != src_info.sha256:
        raise CopyVerificationError(
            f"checksum mismatch copying {src} to {dst}: {src_info.sha256} != {copied_sha}"
        )


def _s3_multipart_copy(
    src: str, src_info: ObjectInfo, dst_io: S3FileIO, dst: str, settings: CopySettings
) -> None:
    sb, sk = split_s3(src)
    db, dk = split_s3(dst)
    client = dst_io.client
    part_size = max(settings.part_size, -(-src_info.size // 10_000))  # S3 allows 10,000 parts
    upload_id = client.create_multipart_upload(
        Bucket=db,
        Key=dk,
        Metadata={SOURCE_ETAG_KEY: src_info.etag or ""},
        ChecksumAlgorithm="SHA256",
        **dst_io.encryption_args(),
    )["UploadId"]

    def copy_part(number: int) -> dict[str, object]:
        start = (number - 1) * part_size
        end = min(start + part_size, src_info.size) - 1
        out = client.upload_part_copy(
            Bucket=db,
            Key=dk,
            UploadId=upload_id,
            PartNumber=number,
            CopySource={"Bucket": sb, "Key": sk},
            CopySourceRange=f"bytes={start}-{end}",
        )["CopyPartResult"]
        part: dict[str, object] = {"PartNumber": number, "ETag": out["ETag"]}
        if out.get("ChecksumSHA256"):
            part["ChecksumSHA256"] = out["ChecksumSHA256"]
        return part

    count = -(-src_info.size // part_size)
    try:
        with ThreadPoolExecutor(max_workers=settings.part_workers) as pool:
            parts = list(pool.map(copy_part, range(1, count + 1)))
        client.complete_multipart_upload(
            Bucket=db, Key=dk, UploadId=upload_id, MultipartUpload={"Parts": parts}
        )
    except BaseException:
        client.abort_multipart_upload(Bucket=db, Key=dk, UploadId=upload_id)
        raise
    size = client.head_object(Bucket=db, Key=dk)["ContentLength"]
    if size != src_info.size:
        raise CopyVerificationError(f"multipart copy of {src} has {size} bytes, expected {src_info.size}")
