"""A copy streamed through the engine, for a target that takes no server-side copy: a table
bucket's storage (S3 Tables, `table_storage.py`).

A file of up to one part (`CopySettings.stream_part_size`) is one GetObject into one PutObject; a
larger one is ranged GETs, in order, into the UploadParts of a multipart upload, with at most
`stream_parts_in_memory` parts held at once: a 50 GiB file costs a copy thread what a 40 MiB one
does, never the file.

Never an overwrite: the PutObject and the CompleteMultipartUpload carry `If-None-Match: *`, which
S3 refuses (412) when the key is there already. The object there is then asked about (HEAD) and
taken as this copy only when it holds the bytes read (the same size, and ETag or checksum): every
key there was journaled before any write, in a table icelake owns, so it is an earlier attempt's
copy; anything else is refused by name, and nothing is written.

Only the headers AWS lists for table storage are sent (`table_storage.TABLE_STORAGE_PARAMETERS`):
no user metadata (so no source-ETag mark, as a server-side copy carries), no multipart checksum
type or object size, no CRC64NVME header.

Verified end to end, as a server-side copy is:
- every GET names the planned ETag (If-Match): the bytes read are the object planned, or S3
  refuses (412) and the table is rolled back as for any source changed since its plan;
- the bytes read are checked against the source's full-object checksum when this process can
  compute its algorithm (SHA-256, SHA-1 and CRC32 always; CRC32C and CRC64NVME with awscrt), else
  against its MD5 ETag, before anything is completed;
- what S3 stored is what was sent: a PutObject carries the MD5 (Content-MD5) and a checksum of
  its bytes (the source's own when table storage takes its algorithm, which then verifies the copy
  by S3 alone; else their CRC32), and its ETag is their MD5 (SSE-S3, as table storage always is);
  each UploadPart carries its CRC32, and the upload's ETag is the MD5 of the parts' MD5s.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import zlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError, FlexibleChecksumError

from icelake.aws.fileio import (
    FileIO,
    ObjectInfo,
    S3FileIO,
    full_checksum,
    sha256_b64,
    split_s3,
)
from icelake.errors import CopyVerificationError, UnsafeTargetError
from icelake.migrate.copy.common import (
    Copied,
    CopySettings,
    changed,
    etag_verifies,
    not_the_source,
    with_checksum,
)
from icelake.migrate.copy.table_storage import TAKEN_CHECKSUMS, is_table_storage

MAX_PARTS = 10_000  # S3's limit on a multipart upload
PART_CHECKSUM = "CRC32"  # the parts' algorithm: computed here without awscrt, combined by S3 (FULL_OBJECT)


def streamed_requests(size: int, settings: CopySettings, *, checksum_known: bool = False) -> dict[str, int]:
    """The S3 requests `stream_copy` sends for one file (by kind, as billed): a GET and a PUT up to
    one part; above, a HEAD for the source's checksum unless the plan has it, a ranged GET and an
    UploadPart per part, CreateMultipartUpload and CompleteMultipartUpload. A key found there (412)
    adds a HEAD. Estimates read it through `objects.copy_requests(streamed=True)`."""
    if size <= settings.stream_part_size:
        return {"get": 1, "put": 1}
    parts = -(-size // part_size(size, settings))
    return {"head": 0 if checksum_known else 1, "get": parts, "put": parts + 2}


def part_size(size: int, settings: CopySettings) -> int:
    return max(settings.stream_part_size, -(-size // MAX_PARTS))


def stream_copy(
    src_io: S3FileIO, src: str, src_info: ObjectInfo, dst_io: S3FileIO, dst: str, settings: CopySettings
) -> Copied:
    """Copy `src` (as planned: `src_info`) to `dst` through this process, never overwriting."""
    if src_info.size <= settings.stream_part_size:
        return _put_whole(src_io, src, src_info, dst_io, dst)
    return _put_parts(src_io, src, src_info, (dst_io, dst), settings)


def put_new(dst_io: S3FileIO, uri: str, data: bytes) -> bool:
    """PutObject only if nothing is at `uri` (If-None-Match), with the SHA-256 S3 checks on arrival
    and keeps; False when something is there (412)."""
    bucket, key = split_s3(uri)
    try:
        dst_io.client_for(bucket).put_object(
            Bucket=bucket,
            Key=key,
            Body=data,
            IfNoneMatch="*",
            ChecksumAlgorithm="SHA256",
            ChecksumSHA256=sha256_b64(data),
        )
    except ClientError as exc:
        if _refused(exc):
            return False
        raise
    return True


def write_object(dst_io: FileIO, uri: str, data: bytes) -> bool:
    """Write rewritten bytes at `uri`: on a table bucket's storage only where nothing is (False
    when something is: it is never overwritten), elsewhere as `FileIO.write` does."""
    if isinstance(dst_io, S3FileIO) and is_table_storage(uri):
        return put_new(dst_io, uri, data)
    dst_io.write(uri, data)
    return True


class _Running:
    """A full-object checksum in one of S3's algorithms, computed over the bytes as they come,
    written as S3 writes it (base64 of the big-endian value)."""

    def __init__(self, algorithm: str, update: Callable[[bytes], None], value: Callable[[], bytes]) -> None:
        self.algorithm = algorithm
        self.update = update
        self._value = value

    def value(self) -> str:
        return base64.b64encode(self._value()).decode()

    @classmethod
    def of(cls, algorithm: str) -> _Running | None:
        """A running checksum of `algorithm`, or None where this process cannot compute it."""
        if algorithm in ("SHA256", "SHA1"):
            digest = hashlib.new(algorithm.lower())
            return cls(algorithm, digest.update, digest.digest)
        crc = _crc_function(algorithm)
        if crc is None:
            return None
        fn, width = crc
        state = [0]

        def update(data: bytes) -> None:
            state[0] = fn(data, state[0])

        return cls(algorithm, update, lambda: state[0].to_bytes(width, "big"))


def _crc_function(algorithm: str) -> tuple[Callable[[bytes, int], int], int] | None:
    if algorithm == "CRC32":
        return zlib.crc32, 4
    try:  # awscrt: botocore's optional native checksums (S3's CRC32C and CRC64NVME)
        from awscrt import checksums
    except ImportError:
        return None
    if algorithm == "CRC32C":
        return checksums.crc32c, 4
    if algorithm == "CRC64NVME":
        return checksums.crc64nvme, 8
    return None


class _Read:
    """What is known of the bytes read from the source, in order: their CRC32 (what a PutObject
    sends when table storage does not take the source's algorithm), each part's MD5 (what S3's
    ETag of the copy is made of), their whole MD5 when the source's ETag is one, and the source's
    own checksum when computable here."""

    def __init__(self, src_info: ObjectInfo, source: tuple[str, str] | None) -> None:
        self.source = source
        self.source_sum = _Running.of(source[0]) if source else None
        self.whole_md5 = hashlib.md5(usedforsecurity=False) if etag_verifies(src_info.etag) else None
        self.crc32 = 0
        self.part_md5s: list[bytes] = []

    def update(self, data: bytes) -> None:
        self.crc32 = zlib.crc32(data, self.crc32)
        self.part_md5s.append(hashlib.md5(data, usedforsecurity=False).digest())
        if self.whole_md5 is not None:
            self.whole_md5.update(data)
        if self.source_sum is not None:
            self.source_sum.update(data)

    def crc32_b64(self) -> str:
        return base64.b64encode(self.crc32.to_bytes(4, "big")).decode()

    def etag(self) -> str:
        """The ETag S3 gives the copy when it stored exactly these bytes in these parts (SSE-S3)."""
        if len(self.part_md5s) == 1:
            return self.part_md5s[0].hex()
        whole = hashlib.md5(b"".join(self.part_md5s), usedforsecurity=False).hexdigest()
        return f"{whole}-{len(self.part_md5s)}"

    def proves(self, src: str, dst: str, src_info: ObjectInfo) -> bool:
        """True when the bytes read are the source's by its checksum (or its MD5 ETag); raises when
        its checksum says they are not; False when nothing here can tell."""
        if self.source is not None and self.source_sum is not None:
            algorithm, expected = self.source
            if (got := self.source_sum.value()) != expected:
                raise not_the_source(src, dst, algorithm, got, expected)
            return True
        # An SSE-KMS source's ETag looks like an MD5 and is not one: a difference proves nothing.
        return self.whole_md5 is not None and self.whole_md5.hexdigest() == src_info.etag


def _put_whole(src_io: S3FileIO, src: str, src_info: ObjectInfo, dst_io: S3FileIO, dst: str) -> Copied:
    got = _get(src_io, src, src_info)
    try:  # botocore checks the bytes against the checksum the GET answered, where it can compute it
        data: bytes = got["Body"].read()  # at most one part
    except FlexibleChecksumError as exc:
        raise CopyVerificationError(
            f"the bytes read from {src} do not have the checksum S3 keeps for it ({exc}): the object is "
            "damaged at the source or was damaged in transit. The table is rolled back; run it again"
        ) from exc
    if len(data) != src_info.size:
        raise changed(src, src_info, f"{len(data)} bytes")
    source = src_info.checksum or full_checksum(got)  # the GET says it (ChecksumMode): no HEAD
    read = _Read(src_info, source)
    read.update(data)
    proved = read.proves(src, dst, src_info)
    # S3 checks the bytes it receives against the checksum sent, and keeps it: the source's when
    # table storage takes its algorithm, else the CRC32 of the bytes read.
    given = source if source and source[0] in TAKEN_CHECKSUMS else ("CRC32", read.crc32_b64())
    bucket, key = split_s3(dst)
    try:
        out = dst_io.client_for(bucket).put_object(
            Bucket=bucket,
            Key=key,
            Body=data,
            IfNoneMatch="*",
            ContentMD5=base64.b64encode(read.part_md5s[0]).decode(),
            ChecksumAlgorithm=given[0],
            **{f"Checksum{given[0]}": given[1]},
        )
    except ClientError as exc:
        if _refused(exc):
            return _settle(dst_io, src, src_info, dst, read)
        if _code(exc) in ("BadDigest", "InvalidDigest"):
            raise CopyVerificationError(
                f"S3 refused the copy of {src} to {dst}: the bytes it received do not have the {given[0]} "
                "checksum of the bytes read (damaged in transit). The table is rolled back; run it again"
            ) from exc
        raise
    etag = _stored_etag(out, read, dst)
    answered = out.get(f"Checksum{given[0]}")
    if answered and answered != given[1]:
        raise not_the_source(src, dst, given[0], answered, given[1])
    checked_by_s3 = given == source  # S3 checked the source's own checksum against the bytes
    return Copied(proved or checked_by_s3, etag, given)


def _put_parts(
    src_io: S3FileIO, src: str, src_info: ObjectInfo, target: tuple[S3FileIO, str], settings: CopySettings
) -> Copied:
    dst_io, dst = target
    if src_info.checksum is None:
        src_info = with_checksum(src_io, src, src_info)  # ranged GETs carry no full-object checksum
    bucket, key = split_s3(dst)
    client = dst_io.client_for(bucket)
    created = client.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=PART_CHECKSUM)
    # The upload's own arguments, the same in each UploadPart, the Complete and the Abort.
    upload = {"Bucket": bucket, "Key": key, "UploadId": created["UploadId"]}
    read = _Read(src_info, src_info.checksum)
    try:
        parts = _upload_parts(src_io, src, src_info, (client, upload), read, settings)
        proved = read.proves(src, dst, src_info)  # before completing: a wrong copy is never made
        out = client.complete_multipart_upload(
            **upload,
            MultipartUpload={"Parts": parts},  # each part's CRC32, which S3 checked on arrival
            IfNoneMatch="*",
        )
    except BaseException as exc:
        _abort(client, upload)
        if isinstance(exc, ClientError) and _refused(exc):
            return _settle(dst_io, src, src_info, dst, read)
        raise
    # The upload's checksum is composite (its parts'), no full-object one: its ETag is the proof.
    return Copied(proved, _stored_etag(out, read, dst))


def _upload_parts(
    src_io: S3FileIO,
    src: str,
    src_info: ObjectInfo,
    upload: tuple[Any, dict[str, str]],
    read: _Read,
    settings: CopySettings,
) -> list[dict[str, Any]]:
    """Each part read in order (the running checksums need the bytes in order) and uploaded on a
    thread of its own, with at most `stream_parts_in_memory` parts held at once."""
    client, upload_args = upload
    size, step = src_info.size, part_size(src_info.size, settings)
    in_memory = max(1, settings.stream_parts_in_memory)

    def send(number: int, data: bytes) -> dict[str, Any]:
        out = client.upload_part(**upload_args, PartNumber=number, Body=data, ChecksumAlgorithm=PART_CHECKSUM)
        part = {"PartNumber": number, "ETag": out["ETag"]}
        if out.get("ChecksumCRC32"):
            part["ChecksumCRC32"] = out["ChecksumCRC32"]
        return part

    parts: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=max(1, in_memory - 1)) as pool:
        pending: deque[Future[dict[str, Any]]] = deque()
        for number, start in enumerate(range(0, size, step), start=1):
            while len(pending) > in_memory - 1:  # the part read next is one of `in_memory`
                parts.append(pending.popleft().result())
            end = min(start + step, size) - 1
            data = _get(src_io, src, src_info, (start, end))["Body"].read()
            if len(data) != end - start + 1:
                raise changed(src, src_info, f"{len(data)} bytes in bytes {start}-{end}")
            read.update(data)
            pending.append(pool.submit(send, number, data))
            del data
        parts.extend(f.result() for f in pending)
    return parts


def _get(src_io: S3FileIO, src: str, planned: ObjectInfo, byte_range: tuple[int, int] | None = None) -> Any:
    """GetObject of the object planned (If-Match its ETag): the whole with its full-object
    checksum (ChecksumMode), or `byte_range` (first, last byte)."""
    bucket, key = split_s3(src)
    args: dict[str, str] = {"IfMatch": f'"{planned.etag}"'} if planned.etag else {}
    if byte_range is None:
        args["ChecksumMode"] = "ENABLED"
    else:
        args["Range"] = f"bytes={byte_range[0]}-{byte_range[1]}"
    try:
        return src_io.client_for(bucket).get_object(Bucket=bucket, Key=key, **args)
    except ClientError as exc:
        if _refused(exc):
            raise changed(src, planned, "an object with another ETag") from exc
        raise


def _settle(dst_io: S3FileIO, src: str, src_info: ObjectInfo, dst: str, read: _Read) -> Copied:
    """S3 refused to write `dst` (If-None-Match: something is there): done when what is there is
    icelake's copy of this source with the bytes read, else refused by name."""
    there = dst_io.stat(dst)
    if there is None:
        raise CopyVerificationError(
            f"S3 refused to write {dst} because an object was there, and none is now; run the table again"
        )
    # The key was journaled before any write (every key there is), in a table icelake owns: an
    # object with the bytes read (its ETag, or its checksum) is this copy, made by an earlier attempt.
    same = there.size == src_info.size and (
        there.etag == read.etag()
        or there.checksum == ("CRC32", read.crc32_b64())
        or (read.source is not None and there.checksum == read.source)
    )
    if same:
        return Copied(read.proves(src, dst, src_info), there.etag, there.checksum)
    raise UnsafeTargetError(
        f"{dst} is already on the table's storage and is not the copy of {src} (its size, ETag and "
        "checksum are not those of the bytes read); S3 Tables' storage is never overwritten or deleted "
        "by icelake. Nothing was written over it: if another writer owns the table, migrate into a "
        "table of another name"
    )


def _stored_etag(out: dict[str, Any], read: _Read, dst: str) -> str:
    """The copy's ETag, checked to be the MD5 S3 computes over what was sent (SSE-S3)."""
    etag = str(out.get("ETag", "")).strip('"')
    if out.get("ServerSideEncryption", "AES256") == "AES256" and etag != read.etag():
        raise CopyVerificationError(
            f"S3 stored {dst} with ETag {etag}, not {read.etag()}, the MD5 of the bytes sent: the copy "
            "was damaged on its way. The table is rolled back; run it again"
        )
    return etag


def _abort(client: Any, upload: dict[str, str]) -> None:
    # An upload already gone (completed, or aborted) leaves nothing to abort.
    with contextlib.suppress(ClientError):
        client.abort_multipart_upload(**upload)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _refused(exc: ClientError) -> bool:
    """A precondition S3 refused: If-None-Match (something is there) or If-Match (changed)."""
    return _code(exc) in ("PreconditionFailed", "412")
