"""Copy one file unchanged from the source to the target, and tell whether a copy is already there.

S3 to S3 is server-side (CopyObject, or UploadPartCopy in parallel parts above the threshold):
bytes never flow through this process. The request is signed by the target credentials, so the
target role needs read access to the source objects (granted by the source access stack) and the
new object is owned by, and encrypted for, the target account. The one exception is a target that
takes no server-side copy, a table bucket's storage (S3 Tables): its copies are streamed through
this process (`streamed.py`), never overwriting what is there.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from botocore.exceptions import ClientError

from icelake.aws.fileio import (
    SOURCE_ETAG_KEY,
    TEMP_PREFIX,
    FileIO,
    LocalFileIO,
    ObjectInfo,
    S3FileIO,
    split_s3,
)
from icelake.aws.request_count import kind_of
from icelake.errors import CopyVerificationError, UnsafeTargetError
from icelake.migrate.copy.common import (
    CRC_ALGORITHMS,
    DEFAULT_CHECKSUM,
    Copied,
    CopySettings,
    changed,
    etag_verifies,
    not_the_source,
    with_checksum,
)
from icelake.migrate.copy.streamed import put_new, stream_copy, streamed_requests
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.uris import local_path

# Imported from here by the rest of icelake (what a copy is set with and proves, as before).
__all__ = ["Copied", "CopySettings", "etag_verifies"]


# The requests one copy of a file makes, S3 to S3 below the multipart threshold, from a source
# written in one part: the CopyObject alone, verified by its own answer (`_s3_copy`). A source
# whose ETag is no MD5 (a multipart upload's), or a target encrypted with a KMS key, costs a HEAD of
# the source too (`copy_requests`). The one place this count is kept: cost estimates and the copy
# scheduler read it here.
REQUESTS_PER_COPY = {"CopyObject": 1}


def copy_requests(
    size: int,
    settings: CopySettings | None = None,
    *,
    checksum_known: bool = False,
    etag: str | None = None,
    target_kms: bool = False,
    streamed: bool = False,
) -> dict[str, int]:
    """The S3 requests `copy_file` sends for one S3-to-S3 copy: CopyObject, preceded by a HEAD for
    the source's checksum unless the plan already has it (`checksum_known`: planned from a HEAD)
    or the ETags verify the copy (`etag_verifies`); above the multipart threshold, a HEAD unless
    known, CreateMultipartUpload, an UploadPartCopy per part, CompleteMultipartUpload and a HEAD of
    the result; `streamed`: into S3 Tables' storage (`streamed.streamed_requests`). Estimates take
    their per-copy requests from here: keep it in step with `copy_file`."""
    settings = settings or CopySettings()
    if streamed:  # a target that takes no server-side copy (S3 Tables' storage)
        return streamed_requests(size, settings, checksum_known=checksum_known)
    one = {kind_of(operation): n for operation, n in REQUESTS_PER_COPY.items()}
    if size <= settings.multipart_threshold:
        by_etag = etag_verifies(etag, target_kms=target_kms)
        return {**one, "head": 0 if checksum_known or by_etag else 1}
    part_size = max(settings.part_size, -(-size // 10_000))
    return {"head": (0 if checksum_known else 1) + 1, "put": 2, "copy": -(-size // part_size)}


def copy_file(
    src_io: FileIO, src: str, src_info: ObjectInfo, dst_io: FileIO, dst: str, settings: CopySettings
) -> bool:
    """Copy one unchanged file; True when its bytes were verified end to end (S3 to S3: by the
    source's checksum, or by MD5 ETags), False when only its size was checked."""
    return copy_file_proved(src_io, src, src_info, dst_io, dst, settings).verified


def copy_file_proved(
    src_io: FileIO, src: str, src_info: ObjectInfo, dst_io: FileIO, dst: str, settings: CopySettings
) -> Copied:
    """`copy_file`, with the copy's ETag and checksum as S3 reported them."""
    if isinstance(dst_io, S3FileIO) and is_table_storage(dst):  # no CopyObject there: streamed
        if isinstance(src_io, S3FileIO):
            return stream_copy(src_io, src, src_info, dst_io, dst, settings)
        if not put_new(dst_io, dst, src_io.read(src)):  # a local source: small scale, via memory
            raise UnsafeTargetError(f"refusing to overwrite {dst}: S3 Tables' storage is never overwritten")
        return Copied(False)
    if isinstance(src_io, S3FileIO) and isinstance(dst_io, S3FileIO):
        if src_info.size > settings.multipart_threshold:
            if src_info.checksum is None:
                src_info = with_checksum(src_io, src, src_info)
            return _s3_multipart_copy(src, src_info, dst_io, dst, settings)
        if src_info.checksum is None and not _etags_may_verify(src, src_info, dst_io, dst):
            src_info = with_checksum(src_io, src, src_info)  # planned from a listing: no checksum value
        return _s3_copy(src_io, src, src_info, dst_io, dst)
    if isinstance(src_io, LocalFileIO) and isinstance(dst_io, LocalFileIO):
        _local_copy(src, src_info, dst)
    else:
        # Mixed local/S3 (seeding a bucket from a laptop, or the reverse): small scale, via memory.
        dst_io.write(dst, src_io.read(src))
    return Copied(False)


def is_same_copy(
    src_io: FileIO, src: str, src_info: ObjectInfo, dst_io: FileIO, dst: str, dst_info: ObjectInfo
) -> bool:
    """Whether `dst` already holds exactly the bytes of `src` (never guesses: unknown means no)."""
    known = known_same(src_info, dst_info)
    if known is not None:
        return known
    if isinstance(src_io, LocalFileIO) and isinstance(dst_io, LocalFileIO):
        return filecmp.cmp(local_path(src), local_path(dst), shallow=False)
    return src_io.read(src) == dst_io.read(dst)


def known_same(src_info: ObjectInfo, dst_info: ObjectInfo) -> bool | None:
    """Whether `dst` holds the bytes of `src` as far as what a listing or a HEAD says of both tells
    (sizes, icelake's source-ETag mark, checksums of one algorithm, MD5 ETags); None when only
    reading both would."""
    if src_info.size != dst_info.size:
        return False
    if dst_info.source_etag and src_info.etag:
        return dst_info.source_etag == src_info.etag
    if src_info.checksum and dst_info.checksum and src_info.checksum[0] == dst_info.checksum[0]:
        return src_info.checksum == dst_info.checksum
    if _full_checksum(src_info) and _full_checksum(dst_info):
        return src_info.sha256 == dst_info.sha256
    if etag_verifies(src_info.etag) and dst_info.etag == src_info.etag:
        return True  # both the MD5 of their bytes (a different ETag proves nothing: KMS)
    return None


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


def _etags_may_verify(src: str, src_info: ObjectInfo, dst_io: S3FileIO, dst: str) -> bool:
    if not etag_verifies(src_info.etag, target_kms=bool(dst_io.kms_key_id)):
        return False
    return split_s3(src)[0] not in dst_io.head_first and split_s3(dst)[0] not in dst_io.head_first


def _s3_copy(src_io: S3FileIO, src: str, src_info: ObjectInfo, dst_io: S3FileIO, dst: str) -> Copied:
    """CopyObject of the planned object (CopySourceIfMatch: its ETag), with S3 computing the
    copy's checksum in the source's algorithm. Verified end to end (True) when that checksum is
    the source's recorded one or, for a source planned from a listing, when the copy's ETag (an
    MD5 S3 computed over the copy) is the source's MD5 ETag. When the ETags cannot tell (the
    source's is no MD5 after all, or the target's key is KMS), the source's checksum is read
    (one HEAD) and compared instead."""
    sb, sk = split_s3(src)
    db, dk = split_s3(dst)
    algorithm = src_info.checksum[0] if src_info.checksum else DEFAULT_CHECKSUM
    if_match = _as_planned(src_info)
    try:
        out = dst_io.client_for(db).copy_object(  # sent to the target bucket's region
            CopySource={"Bucket": sb, "Key": sk},
            Bucket=db,
            Key=dk,
            MetadataDirective="REPLACE",
            Metadata={SOURCE_ETAG_KEY: src_info.etag or ""},
            ChecksumAlgorithm=algorithm,
            **if_match,
            **dst_io.encryption_args(),
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
            raise changed(src, src_info, "an object with another ETag") from exc
        raise
    result = out.get("CopyObjectResult", {})
    copied = result.get(f"Checksum{algorithm}")
    etag = result.get("ETag", "").strip('"') or None
    proof = (algorithm, copied) if copied else None
    if src_info.checksum is not None:
        return Copied(_verified(src, src_info, dst, copied), etag, proof)
    kms_target = out.get("ServerSideEncryption", "AES256") != "AES256"
    if not kms_target and etag == src_info.etag:
        return Copied(True, etag, proof)  # both MD5s of the bytes: the copy is the source's bytes
    # An SSE-KMS or SSE-C source (its ETag is no MD5, which a listing does not show), or a target
    # its bucket encrypts with a KMS key: this bucket's next copies HEAD the source first.
    dst_io.head_first.add(db if kms_target else sb)
    src_info = with_checksum(src_io, src, src_info)
    if src_info.checksum is None:
        return Copied(False, etag, proof)  # no checksum to compare: the copy is checked by size only
    if src_info.checksum[0] != algorithm:  # once per bucket (head_first): copy again in its algorithm
        return _s3_copy(src_io, src, src_info, dst_io, dst)
    return Copied(_verified(src, src_info, dst, copied), etag, proof)


def _as_planned(planned: ObjectInfo) -> dict[str, str]:
    """The condition that makes S3 copy the object the plan saw, or refuse (412)."""
    return {"CopySourceIfMatch": f'"{planned.etag}"'} if planned.etag else {}


def _verified(src: str, src_info: ObjectInfo, dst: str, copied: str | None) -> bool:
    """True when the copy's checksum is the source's; a mismatch fails the table (rolled back)."""
    if src_info.checksum is None or copied is None:
        return False  # nothing to compare: the copy is checked by size only
    algorithm, expected = src_info.checksum
    if copied != expected:
        raise not_the_source(src, dst, algorithm, copied, expected)
    return True


def _s3_multipart_copy(
    src: str, src_info: ObjectInfo, dst_io: S3FileIO, dst: str, settings: CopySettings
) -> Copied:
    """UploadPartCopy in parts. With a CRC algorithm S3 computes the whole object's checksum from
    the parts' (FULL_OBJECT), which verifies the copy like CopyObject's; SHA checksums of a
    multipart object are only composite, so such a source is checked by size."""
    sb, sk = split_s3(src)
    db, dk = split_s3(dst)
    client = dst_io.client_for(db)  # the target bucket's region
    part_size = max(settings.part_size, -(-src_info.size // 10_000))  # S3 allows 10,000 parts
    source_algorithm = src_info.checksum[0] if src_info.checksum else None
    algorithm = source_algorithm if source_algorithm in CRC_ALGORITHMS else DEFAULT_CHECKSUM
    if_match = _as_planned(src_info)
    upload_id = client.create_multipart_upload(
        Bucket=db,
        Key=dk,
        Metadata={SOURCE_ETAG_KEY: src_info.etag or ""},
        ChecksumAlgorithm=algorithm,
        ChecksumType="FULL_OBJECT",
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
            **if_match,  # every part from the one object that was planned
        )["CopyPartResult"]
        part: dict[str, object] = {"PartNumber": number, "ETag": out["ETag"]}
        if out.get(f"Checksum{algorithm}"):
            part[f"Checksum{algorithm}"] = out[f"Checksum{algorithm}"]
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
    written = dst_io.stat(dst)  # the size, and the full-object checksum S3 combined from the parts
    size = written.size if written else -1
    if size != src_info.size:
        raise CopyVerificationError(f"multipart copy of {src} has {size} bytes, expected {src_info.size}")
    copied = written.checksum if written and written.checksum else None
    verified = _verified(src, src_info, dst, copied[1] if copied and copied[0] == source_algorithm else None)
    return Copied(verified, written.etag if written else None, copied)
