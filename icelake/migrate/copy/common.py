"""What every copy of one object shares, server-side (`objects.py`) or streamed through the engine
(`streamed.py`): its settings, what it proved, and the source checked to be the object planned."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from icelake.aws.fileio import ObjectInfo, S3FileIO
from icelake.errors import CopyVerificationError

GiB = 1024**3
MiB = 1024**2


@dataclass(frozen=True)
class CopySettings:
    multipart_threshold: int = 5 * GiB  # the CopyObject limit
    part_size: int = 512 * MiB
    part_workers: int = 8
    # A copy streamed through the engine (a target that takes no CopyObject: S3 Tables' storage,
    # `copy/streamed.py`): a file up to one part is one GET and one PutObject, a larger one ranged
    # GETs into UploadParts. At most `stream_parts_in_memory` parts of a file are held at once (one
    # read while the one before it uploads), so a copy thread holds 2 x 32 MiB whatever the size.
    stream_part_size: int = 32 * MiB
    stream_parts_in_memory: int = 2
    # The target is a table's storage that holds only what icelake wrote into it for this table: a
    # table the run created (S3 Tables), whose storage takes no listing. A full plan then asks
    # nothing there (a first run would otherwise HEAD every file: a million HEADs, ~45 minutes of
    # one core's botocore), and a copy that finds its key taken after all (a retried step) settles
    # it by its 412 (`streamed._settle`). Whoever knows the table is new sets it (the Plan step).
    fresh_target: bool = False


DEFAULT_CHECKSUM = "CRC64NVME"  # S3's default for new objects: what a copy of an unchecksummed source gets
CRC_ALGORITHMS = ("CRC64NVME", "CRC32C", "CRC32")  # the ones S3 can combine into a full-object checksum


class Copied(NamedTuple):
    """What one copy proved: whether its bytes were verified end to end, and the copy's ETag and
    full-object checksum as S3 answered them (what the copy record keeps, `check/record.py`)."""

    verified: bool
    etag: str | None = None
    checksum: tuple[str, str] | None = None


def etag_verifies(etag: str | None, *, target_kms: bool = False) -> bool:
    """Whether a copy of an object with this (listed) ETag can be verified by ETags alone: the
    ETag of an object PUT in one part without a KMS key is the MD5 of its bytes ('-N' marks a
    multipart upload's), and so is the ETag S3 gives a copy it does not encrypt with a KMS key.
    (An SSE-KMS or SSE-C source looks the same in a listing; its copy then costs a HEAD after all.)"""
    return not target_kms and etag is not None and len(etag) == 32 and "-" not in etag


def with_checksum(src_io: S3FileIO, src: str, planned: ObjectInfo) -> ObjectInfo:
    """The source's full-object checksum (one HEAD), checked to be the object that was planned."""
    now = src_io.stat(src)
    if now is None or now.size != planned.size or (planned.etag and now.etag != planned.etag):
        raise changed(src, planned, "gone" if now is None else f"{now.size} bytes")
    return now


def changed(src: str, planned: ObjectInfo, now: str) -> CopyVerificationError:
    return CopyVerificationError(
        f"{src} changed or disappeared after planning ({planned.size} bytes planned, {now} now); "
        "the source was written while it was migrated. The table is rolled back; run it again"
    )


def not_the_source(src: str, dst: str, algorithm: str, copied: str, expected: str) -> CopyVerificationError:
    return CopyVerificationError(
        f"the copy of {src} to {dst} is not the source's bytes: {algorithm} {copied} != {expected} "
        "recorded for the source; the source object changed or was damaged in transit. The table "
        "is rolled back; run it again (a changed source is picked up by the next run)"
    )
