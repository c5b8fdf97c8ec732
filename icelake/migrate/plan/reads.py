"""How a plan reads: a metadata file, a required file, manifest entries and what exists
(`PlanReads`: the fast reads icelake runs, or the tests' reference), and what every step of one
plan reads with (`PlanContext`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, Unpack

from icelake.aws.fileio import FileIO, ObjectInfo, is_absent
from icelake.errors import (
    MissingSourceFilesError,
    NotAMetadataFileError,
)
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.entries import EntryFields
from icelake.migrate.avro.patch import PlannedManifest
from icelake.migrate.copy.cpu_pool import CpuPools
from icelake.migrate.inventory import StatOptions, stat_by_listing
from icelake.migrate.plan_scan import map_in_chunks, planned_entries
from icelake.migrate.progress import ProgressSink

T = TypeVar("T")
R = TypeVar("R")


def read_metadata(io: FileIO, uri: str) -> tuple[mj.Metadata, bool]:
    return mj.parse_metadata(uri, fetch_metadata(io, uri))


def fetch_metadata(io: FileIO, uri: str) -> bytes:
    """A metadata file's bytes; an absent one is NotAMetadataFileError."""
    try:
        return io.read(uri)
    except Exception as exc:
        # Only absence means "not a metadata file"; denied, throttled or unreachable reads keep
        # their own cause, which the CLI explains.
        if is_absent(exc):
            raise NotAMetadataFileError(uri, "it does not exist") from exc
        raise


class Stat(Protocol):
    """uri -> what the object is (None: absent) for every uri; `roots` are prefixes a listing may
    read; the options are inventory.StatOptions."""

    def __call__(
        self,
        io: FileIO,
        uris: Iterable[str],
        roots: Iterable[str],
        workers: int,
        **options: Unpack[StatOptions],
    ) -> dict[str, ObjectInfo | None]: ...


class ThreadMap(Protocol):
    def __call__(self, fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]: ...


Entries = Callable[[str, bytes], tuple[list[EntryFields], PlannedManifest | None]]


@dataclass(frozen=True)
class PlanReads:
    """How a plan reads manifest entries, learns which objects exist and spreads work on threads.
    `FAST_READS` is what icelake runs; the tests hold the obvious, slow reference (every entry
    decoded by fastavro, one HEAD per object) and assert that both give the same plan."""

    # A manifest's entries, and where a data manifest's paths sit for its rewrite (or None)
    entries: Entries
    stat: Stat
    map: ThreadMap


FAST_READS = PlanReads(entries=planned_entries, stat=stat_by_listing, map=map_in_chunks)


def read_required(io: FileIO, uri: str) -> bytes:
    try:
        return io.read(uri)
    except Exception as exc:
        if io.stat(uri) is None:
            raise MissingSourceFilesError([uri]) from exc
        raise


@dataclass(frozen=True)
class PlanContext:
    """What every step of one plan reads with: both sides' FileIOs, how it reads, its threads,
    its progress and the worker processes CPU-bound reads may run in."""

    src_io: FileIO
    dst_io: FileIO
    reads: PlanReads
    workers: int
    progress: ProgressSink
    cpus: CpuPools
