"""A small FileIO: the same calls on s3:// objects and on a local file system.

The migration core only talks to this interface, so it runs unchanged against S3 (in AWS or in
moto) and against a directory on a laptop.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import tempfile
import threading
from abc import ABC, abstractmethod
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, Concatenate, NamedTuple, ParamSpec, TypeVar

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from icelake.aws.clients import new_session
from icelake.aws.session import AssumedRole
from icelake.explain import about
from icelake.uris import canonical, is_local, local_path

SOURCE_ETAG_KEY = "icelake-source-etag"

R = TypeVar("R")


class ObjectInfo(NamedTuple):
    """What a listing or a HEAD says of an object. A named tuple: a plan of a million files makes
    and holds a million, and a frozen dataclass takes twice as long to make (each field is set
    through object.__setattr__)."""

    size: int
    etag: str | None = None
    sha256: str | None = None  # base64, as S3 reports it; a '-N' suffix marks a composite checksum
    source_etag: str | None = None  # ETag of the source object this one was copied from by icelake
    # (algorithm, base64 value) of a full-object checksum S3 keeps for the object, if it has one:
    # what a server-side copy is verified against end to end.
    checksum: tuple[str, str] | None = None


# Full-object checksum algorithms, in the order icelake prefers them (CRC64NVME is what S3 computes
# for every new object since 2025; the others come from writers that asked for them).
CHECKSUM_ALGORITHMS = ("CRC64NVME", "CRC32C", "CRC32", "SHA256", "SHA1")


def full_checksum(head: dict[str, Any]) -> tuple[str, str] | None:
    """The object's full-object checksum from a HeadObject (ChecksumMode=ENABLED) answer; a
    composite one (a multipart upload's checksum of part checksums, 'value-N') cannot verify a copy."""
    if head.get("ChecksumType", "FULL_OBJECT") != "FULL_OBJECT":
        return None
    for algorithm in CHECKSUM_ALGORITHMS:
        value = head.get(f"Checksum{algorithm}")
        if value and "-" not in value:
            return algorithm, value
    return None


def sha256_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


class FileIO(ABC):
    # Whether a listing's time is its requests' round trips (S3), which listings side by side
    # overlap, rather than CPU (a local walk, where threads would only queue for the GIL after
    # each stat: measured 2 to 3 times slower on a million files).
    listing_waits: bool = False

    @abstractmethod
    def stat(self, uri: str) -> ObjectInfo | None: ...

    @abstractmethod
    def read(self, uri: str) -> bytes: ...

    def read_tail(self, uri: str, nbytes: int) -> bytes:
        """The last `nbytes` bytes (all of them if the object is smaller): file footers."""
        return self.read(uri)[-nbytes:]

    def parse_in(self, cpu: Executor | None, uri: str, job: Callable[..., R], *args: Any) -> R | None:
        """`job(uri, the object's bytes, *args)` in one of `cpu`'s worker processes (in this thread
        without `cpu`), or None when the object could not be read (the caller reads it again, and
        raises what is wrong). Read here and sent there; a file system the workers can read
        themselves is read there (`LocalFileIO`): a thousand metadata.json files are half a
        gigabyte not sent through pipes."""
        try:
            data = self.read(uri)
        except Exception:
            return None
        return job(uri, data, *args) if cpu is None else cpu.submit(job, uri, data, *args).result()

    @abstractmethod
    def write(self, uri: str, data: bytes) -> None: ...

    @abstractmethod
    def create_exclusive(self, uri: str, data: bytes) -> bool:
        """Write `uri` only if nothing is there, atomically; False when something was."""

    @abstractmethod
    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        """Every object under the directory `prefix`, in S3's order (by key, as UTF-8 bytes;
        Python's str order is the same); with `start_after` (a uri), only those after it."""

    def list_range(
        self, prefix: str, start_after: str | None, until: str, cpu: Executor | None = None
    ) -> Iterable[tuple[str, ObjectInfo]]:
        """`list(prefix, start_after)` up to the key `until` (included): a listing is in key order,
        so the first object past it ends the listing. `cpu`: worker processes a listing whose time
        is CPU (not `listing_waits`) may be run in; only a local walk is."""
        return itertools.takewhile(lambda item: item[0] <= until, self.list(prefix, start_after))

    @abstractmethod
    def delete(self, uri: str) -> None: ...

    def delete_many(self, uris: Sequence[str]) -> int:
        """Delete every uri (a missing one is not an error); returns how many were asked for."""
        for uri in uris:
            self.delete(uri)
        return len(uris)


TEMP_PREFIX = ".icelake-"
_UMASK = os.umask(0o022)  # read once (os.umask can only be read by setting it), then restored
os.umask(_UMASK)


def remove_stale_temp_files(root: str) -> int:
    """Delete the temp files under a local `root` that icelake writers left when they were killed
    (their process is gone); returns how many. Files of live writers are left alone."""
    removed = 0
    for dirpath, _dirs, files in os.walk(local_path(root)):
        for name in files:
            pid = name[len(TEMP_PREFIX) :].split("-", 1)[0]
            if name.startswith(TEMP_PREFIX) and pid.isdigit() and not _alive(int(pid)):
                Path(dirpath, name).unlink(missing_ok=True)
                removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


class LocalFileIO(FileIO):
    def stat(self, uri: str) -> ObjectInfo | None:
        try:
            st = os.stat(local_path(uri))
        except FileNotFoundError:
            return None
        return ObjectInfo(size=st.st_size) if os.path.isfile(local_path(uri)) else None

    def read(self, uri: str) -> bytes:
        return Path(local_path(uri)).read_bytes()

    def read_tail(self, uri: str, nbytes: int) -> bytes:
        with open(local_path(uri), "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - nbytes))
            return fh.read()

    def write(self, uri: str, data: bytes) -> None:
        path = local_path(uri)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # Write beside the target and rename: a reader never sees half a file. The pid in the name
        # lets a later run tell a dead writer's leftovers (`remove_stale_temp_files`).
        fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=os.path.dirname(path))
        try:
            os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; a written file gets the usual mode
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def create_exclusive(self, uri: str, data: bytes) -> bool:
        path = local_path(uri)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        # A key's path as written (file:///x or /x): made canonical, a trailing '/' would be dropped.
        after = start_after.removeprefix("file://") if start_after else None
        for path, size in _scan(local_path(prefix), after):
            yield "file://" + path, ObjectInfo(size=size)

    def parse_in(self, cpu: Executor | None, uri: str, job: Callable[..., R], *args: Any) -> R | None:
        if cpu is None:
            return super().parse_in(cpu, uri, job, *args)
        return cpu.submit(_read_and_parse, job, uri, *args).result()

    def list_range(
        self, prefix: str, start_after: str | None, until: str, cpu: Executor | None = None
    ) -> Iterable[tuple[str, ObjectInfo]]:
        if cpu is None:
            return super().list_range(prefix, start_after, until, cpu)
        # A stat per file is most of a walk's time, and a thread's stat queues for the GIL behind
        # the others: a range is walked in a worker process, and only its keys and sizes come back.
        return ListedRange(*cpu.submit(scan_range, prefix, start_after, until).result())

    def delete(self, uri: str) -> None:
        Path(local_path(uri)).unlink(missing_ok=True)


def _read_and_parse(job: Callable[..., R], uri: str, *args: Any) -> R | None:
    """`LocalFileIO().parse_in` in the worker process: the file is read there."""
    try:
        data = LocalFileIO().read(uri)
    except Exception:
        return None
    return job(uri, data, *args)


@dataclass(frozen=True)
class ListedRange:
    """A range walked in a worker process: its keys, in key order, and their sizes, as they came
    back (a caller that wants only these keys can take them as they are: `inventory`)."""

    keys: list[str]
    sizes: array[int]

    def __iter__(self) -> Iterator[tuple[str, ObjectInfo]]:
        return zip(self.keys, map(ObjectInfo, self.sizes), strict=True)


def scan_range(prefix: str, start_after: str | None, until: str) -> tuple[list[str], array[int]]:
    """`LocalFileIO().list_range(...)` as (keys, sizes), which cross processes cheaply (a million
    ObjectInfos would not): a top-level function, to run in a worker process."""
    keys: list[str] = []
    sizes = array("q")
    after = start_after.removeprefix("file://") if start_after else None
    last = local_path(until)
    for path, size in _scan(local_path(prefix), after):
        if path > last:  # in key order: the first one past `until` ends the range
            break
        keys.append("file://" + path)
        sizes.append(size)
    return keys, sizes


def _scan(directory: str, after: str | None) -> Iterator[tuple[str, int]]:
    """Every file's path under `directory` with its size, in S3's order, after the path `after` if given.
    S3 orders keys as strings: a directory's files come where its name followed by '/' sorts among
    its siblings, so each directory's entries are sorted that way and walked depth first. A stack,
    not recursion: each file is yielded once, not passed up through a generator per level."""
    pending = _sorted_entries(directory, after)  # (key, size; -1 for a directory), the next one on top
    while pending:
        key, size = pending.pop()
        if size < 0:
            pending += _sorted_entries(key[:-1], after)
        else:
            yield key, size


def _sorted_entries(directory: str, after: str | None) -> list[tuple[str, int]]:
    """The files (with their sizes) and directories (their key ends in '/', their size is -1) in
    `directory` after `after`, last first. A million files cost a million stat calls and little
    more: each is asked by its name in the open directory (fstatat), not by its whole path."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # absent, not a directory, unreadable: as os.walk, nothing under it
        return []
    try:
        keyed = _keyed_entries(fd, directory, after)
    finally:
        os.close(fd)
    keyed.sort(key=itemgetter(0), reverse=True)
    return keyed


def _keyed_entries(fd: int, directory: str, after: str | None) -> list[tuple[str, int]]:
    """`_sorted_entries` of the open directory `fd`, unsorted."""
    try:
        with os.scandir(fd) as found:
            entries = list(found)
    except OSError:  # unreadable: as os.walk, nothing under it
        return []
    prefix = directory if directory.endswith("/") else directory + "/"
    keyed: list[tuple[str, int]] = []
    for e in entries:
        path = prefix + e.name
        if not e.is_dir():
            if after is None or path > after:
                keyed.append((path, e.stat().st_size))
        # As os.walk, a linked directory is not followed. A directory's files all sort between its
        # path + '/' and its path + '0' ('/' + 1): one wholly at or before `after` is not read.
        elif not e.is_symlink() and (after is None or path + "0" > after):
            keyed.append((path + "/", -1))
    return keyed


def split_s3(uri: str) -> tuple[str, str]:
    c = canonical(uri)
    if not c.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri}")
    bucket, _, key = c[len("s3://") :].partition("/")
    return bucket, key


DELETE_BATCH = 1000  # keys per DeleteObjects request

P = ParamSpec("P")


def _names_uri(fn: Callable[Concatenate[S3FileIO, str, P], R]) -> Callable[Concatenate[S3FileIO, str, P], R]:
    """An AWS failure carries the object it was about, so its one-line message can name it."""

    def call(self: S3FileIO, uri: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(self, uri, *args, **kwargs)
        except (BotoCoreError, ClientError) as exc:
            about(exc, uri)
            raise

    return call


def is_absent(exc: BaseException) -> bool:
    """Whether a read failed because the object is not there (and nothing else: a denied,
    throttled or unreachable read is not an absence)."""
    if isinstance(exc, FileNotFoundError):
        return True
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    return code in ("404", "NoSuchKey", "NotFound")


def bucket_region(client: Any, bucket: str) -> str:
    """The bucket's region (GetBucketLocation: its IAM action is granted on the bucket alone,
    where HeadBucket's is s3:ListBucket, which icelake's roles hold only for their prefixes)."""
    constraint = client.get_bucket_location(Bucket=bucket).get("LocationConstraint")
    # us-east-1 answers no constraint; the oldest eu-west-1 buckets answer "EU"
    return str({None: "us-east-1", "": "us-east-1", "EU": "eu-west-1"}.get(constraint, constraint))


class S3FileIO(FileIO):
    """S3 through boto3. `kms_key_id` encrypts every object this IO writes.

    With `regions` (a session), each bucket's requests go to a client of that session made for the
    bucket's own region (a CopyObject to the target bucket's, whatever region its source is in);
    without, everything goes through `client`."""

    listing_waits = True

    def __init__(
        self, client: Any, kms_key_id: str | None = None, *, regions: boto3.Session | None = None
    ) -> None:
        self.client = client
        self.kms_key_id = kms_key_id
        # Told (uri, storage class, whether it has a full-object checksum) of every object a
        # listing or a HEAD describes: an assessment finds GLACIER objects and unchecksummed ones
        # from the requests the plan sends anyway.
        self.observe: Callable[[str, str, bool], None] | None = None
        # Given every client made for another region (a run's request count follows them too).
        self.on_new_client: Callable[[Any], None] | None = None
        self.regions = regions
        self._by_bucket: dict[str, Any] = {}  # bucket -> the client of its region
        self._by_region: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        # Buckets whose copies' ETags cannot verify them (an SSE-KMS or SSE-C source, a target its
        # bucket encrypts with a KMS key): a copy from or to one reads the source's checksum first.
        self.head_first: set[str] = set()

    def client_for(self, bucket: str) -> Any:
        """The client that serves `bucket`: its region asked once per bucket, one client per region."""
        if self.regions is None:
            return self.client
        with self._clients_lock:
            known = self._by_bucket.get(bucket)
        if known is not None:
            return known
        region = bucket_region(self.client, bucket)
        with self._clients_lock:
            if region == self.client.meta.region_name:
                self._by_region.setdefault(region, self.client)
            elif region not in self._by_region:
                self._by_region[region] = self.regions.client("s3", region_name=region)
                if self.on_new_client is not None:
                    self.on_new_client(self._by_region[region])
            return self._by_bucket.setdefault(bucket, self._by_region[region])

    def encryption_args(self) -> dict[str, str]:
        if not self.kms_key_id:
            return {}
        return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.kms_key_id}

    @_names_uri
    def stat(self, uri: str) -> ObjectInfo | None:
        bucket, key = split_s3(uri)
        try:
            head = self.client_for(bucket).head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        except ClientError as exc:
            if is_absent(exc):
                return None
            raise
        checksum = full_checksum(head)
        if self.observe is not None:
            self.observe(uri, head.get("StorageClass") or "STANDARD", checksum is not None)
        return ObjectInfo(
            size=head["ContentLength"],
            etag=head.get("ETag", "").strip('"') or None,
            sha256=head.get("ChecksumSHA256"),
            source_etag=head.get("Metadata", {}).get(SOURCE_ETAG_KEY),
            checksum=checksum,
        )

    @_names_uri
    def read(self, uri: str) -> bytes:
        bucket, key = split_s3(uri)
        body: bytes = self.client_for(bucket).get_object(Bucket=bucket, Key=key)["Body"].read()
        return body

    @_names_uri
    def read_tail(self, uri: str, nbytes: int) -> bytes:
        bucket, key = split_s3(uri)
        body: bytes = (
            self.client_for(bucket)
            .get_object(Bucket=bucket, Key=key, Range=f"bytes=-{nbytes}")["Body"]
            .read()
        )
        return body

    @_names_uri
    def write(self, uri: str, data: bytes) -> None:
        bucket, key = split_s3(uri)
        # S3 verifies the SHA-256 on arrival and keeps it, which later makes identity checks cheap.
        self.client_for(bucket).put_object(
            Bucket=bucket,
            Key=key,
            Body=data,
            ChecksumAlgorithm="SHA256",
            ChecksumSHA256=sha256_b64(data),
            **self.encryption_args(),
        )

    @_names_uri
    def create_exclusive(self, uri: str, data: bytes) -> bool:
        bucket, key = split_s3(uri)
        try:  # S3 conditional write: If-None-Match "*" fails when the key exists
            self.client_for(bucket).put_object(
                Bucket=bucket, Key=key, Body=data, IfNoneMatch="*", **self.encryption_args()
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in (
                "PreconditionFailed",
                "ConditionalRequestConflict",
            ):
                return False
            raise
        return True

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        bucket, key = split_s3(prefix)
        key = key.rstrip("/") + "/" if key else ""
        try:
            # The key as written after the bucket: not made canonical, which drops a trailing '/'.
            after = {"StartAfter": start_after.split("://", 1)[1].partition("/")[2]} if start_after else {}
            pages = (
                self.client_for(bucket)
                .get_paginator("list_objects_v2")
                .paginate(Bucket=bucket, Prefix=key, **after)
            )
            for page in pages:
                if self.observe is not None:
                    self._observe_listed(bucket, page.get("Contents", []))
                for obj in page.get("Contents", []):
                    yield (
                        f"s3://{bucket}/{obj['Key']}",
                        ObjectInfo(size=obj["Size"], etag=obj.get("ETag", "").strip('"') or None),
                    )
        except (BotoCoreError, ClientError) as exc:
            about(exc, prefix)
            raise

    def _observe_listed(self, bucket: str, contents: Sequence[dict[str, Any]]) -> None:
        assert self.observe is not None
        for obj in contents:
            # A listing names the checksum's algorithm (and, on S3 since 2025, its type): a
            # composite one (a multipart upload's) cannot verify a copy.
            full = bool(obj.get("ChecksumAlgorithm")) and obj.get("ChecksumType") != "COMPOSITE"
            self.observe(f"s3://{bucket}/{obj['Key']}", obj.get("StorageClass") or "STANDARD", full)

    @_names_uri
    def delete(self, uri: str) -> None:
        bucket, key = split_s3(uri)
        self.client_for(bucket).delete_object(Bucket=bucket, Key=key)

    def delete_many(self, uris: Sequence[str]) -> int:
        """DeleteObjects, 1,000 keys a request (S3's maximum); any key S3 could not delete fails."""
        by_bucket: dict[str, list[str]] = {}
        for uri in uris:
            bucket, key = split_s3(uri)
            by_bucket.setdefault(bucket, []).append(key)
        for bucket, keys in by_bucket.items():
            for start in range(0, len(keys), DELETE_BATCH):
                batch = [{"Key": k} for k in keys[start : start + DELETE_BATCH]]
                answer = self.client_for(bucket).delete_objects(
                    Bucket=bucket, Delete={"Objects": batch, "Quiet": True}
                )
                errors = answer.get("Errors") or []
                if errors:
                    shown = ", ".join(f"s3://{bucket}/{e.get('Key')} ({e.get('Code')})" for e in errors[:5])
                    raise OSError(f"S3 did not delete {len(errors)} object(s): {shown}")
        return len(uris)


def io_for(uri: str, session: boto3.Session | None = None, kms_key_id: str | None = None) -> FileIO:
    """The FileIO for a URI's scheme; S3 clients honour AWS_ENDPOINT_URL (moto locally)."""
    if is_local(uri):
        return LocalFileIO()
    if canonical(uri).startswith("s3://"):
        session = session or new_session()
        return S3FileIO(session.client("s3"), kms_key_id=kms_key_id)
    raise ValueError(f"unsupported URI scheme in {uri}: use s3://, file:// or a local path")


@dataclass(frozen=True)
class FileIOSpec:
    """How to open the same FileIO in another process (a Spark executor): unlike a boto3 client,
    this pickles. `open()` builds the FileIO once per process and spec and reuses it.

    With `role`, the process that opens the spec assumes the role itself and assumes it again
    before the credentials expire, so a task that runs for hours never holds expired ones; it
    assumes it with its own credentials (in Glue, the job's role, which the roles' trust policies
    name). `credentials` (boto3.Session keyword arguments) are what the process starts from: None
    for its default credential chain; without a role, the temporary credentials of a role the
    driver assumed; with a role, the driver's own credentials, carried only when it talks to an
    endpoint override (an emulator: executors need not share the driver's environment, which is
    also why the endpoint is carried).
    """

    scheme: str  # "s3" or "file"
    credentials: dict[str, str] | None = field(default=None, repr=False, hash=False)
    kms_key_id: str | None = None
    endpoint_url: str | None = None
    region: str | None = None
    role: AssumedRole | None = None
    regional: bool = False  # each bucket's requests to its own region (S3FileIO's `regions`)

    @classmethod
    def for_uri(
        cls,
        uri: str,
        session: boto3.Session | None = None,
        kms_key_id: str | None = None,
        *,
        role: AssumedRole | None = None,
        regional: bool = False,
    ) -> FileIOSpec:
        """The spec for a URI's scheme. Pass `role` to have each process assume it, or `session`
        only when it is an assumed role's (its current credentials are shipped, and expire)."""
        if is_local(uri):
            return cls("file")
        if not canonical(uri).startswith("s3://"):
            raise ValueError(f"unsupported URI scheme in {uri}: use s3://, file:// or a local path")
        if role is not None and session is not None:
            raise ValueError("pass either an assumed role's session or a role to assume, not both")
        endpoint_url = os.environ.get("AWS_ENDPOINT_URL") or None
        credentials = None
        if session is not None:
            credentials = _session_kwargs(session)
        elif role is not None and endpoint_url:
            credentials = _session_kwargs(new_session())
        return cls(
            "s3",
            credentials=credentials,
            kms_key_id=kms_key_id,
            endpoint_url=endpoint_url,
            region=(session or new_session()).region_name,
            role=role,
            regional=regional,
        )

    def open(self) -> FileIO:
        with _OPENED_LOCK:
            io = _OPENED.get(self)
            if io is None:
                io = _OPENED[self] = self._build()
            return io

    def session(self) -> boto3.Session:
        """The boto3 session this spec's S3 FileIO signs with (the role's, when it has one)."""
        session = new_session(**(self.credentials or {}), region_name=self.region)
        return self.role.session(session, self.endpoint_url) if self.role is not None else session

    def _build(self) -> FileIO:
        if self.scheme == "file":
            return LocalFileIO()
        if self.scheme != "s3":
            raise ValueError(f"unsupported FileIO scheme {self.scheme!r}: use s3 or file")
        session = self.session()
        client = session.client("s3", endpoint_url=self.endpoint_url)
        return S3FileIO(client, kms_key_id=self.kms_key_id, regions=session if self.regional else None)


def _session_kwargs(session: boto3.Session) -> dict[str, str] | None:
    """The session's current credentials as boto3.Session keyword arguments (None if it has none)."""
    credentials = session.get_credentials()
    if credentials is None:
        return None
    frozen = credentials.get_frozen_credentials()
    kwargs = {"aws_access_key_id": frozen.access_key, "aws_secret_access_key": frozen.secret_key}
    if frozen.token:
        kwargs["aws_session_token"] = frozen.token
    return kwargs


_OPENED: dict[FileIOSpec, FileIO] = {}
_OPENED_LOCK = threading.Lock()
