"""What every FileIO is: the interface the migration core talks to (`FileIO`), what a listing or
a HEAD says of an object (`ObjectInfo`), and the few things both kinds share: the SHA-256 as S3
keeps it, and telling an absent object from a failed read. S3 and local files implement it in
`s3` and `local` beside this module."""

from __future__ import annotations

import base64
import hashlib
import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from typing import Any, NamedTuple, TypeVar

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


def is_absent(exc: BaseException) -> bool:
    """Whether a read failed because the object is not there (and nothing else: a denied,
    throttled or unreachable read is not an absence)."""
    if isinstance(exc, FileNotFoundError):
        return True
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    return code in ("404", "NoSuchKey", "NotFound")
