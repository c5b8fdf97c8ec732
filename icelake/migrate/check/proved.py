"""Every file a target's metadata reaches, checked against the copy record (`verify`'s `metadata`
tier, which every tier starts with): its size, and its ETag or full-object checksum as recorded
when icelake wrote it (`check/record.py`). No data is read; manifest lists and manifests are read
to find what they reach, and a missing or unreadable one is named and its subtree left (what it
would reach cannot be known from the target alone).

Where the record holds an ETag (a copy: CopyObject answers with the copy's ETag, which any later
write of the key changes) the file under the table location is answered by a listing of the
location (1,000 keys, sizes and ETags a request) rather than a HEAD: a million data files are a
thousand LISTs in fifty ranges side by side, not a million HEADs (hours in one Lambda). The rest,
rewritten files recorded by their SHA-256 and files elsewhere, get one HEAD each
(`ChecksumMode=ENABLED`). The checks and the manifests' reads run on a `Runner`: a Lambda's
threads, or the Glue job's Spark tasks for the largest tables (`check/proof_chunks.py`).

A file not on the record (a target migrated before records were kept, or a promoted table's
commits by others) is checked by its size as the metadata records it, and counted as such.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from icelake.aws.fileio import FileIO
from icelake.heap import roomy_gc
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import DELETED, ManifestRef, manifest_refs
from icelake.migrate.check.inventory_report import InventoryReport
from icelake.migrate.check.proof_chunks import (
    ChunkResult,
    FileToProve,
    by_listing,
    check_chunk,
    chunks_of,
    judged,
    listing_pages,
)
from icelake.migrate.check.record import Record
from icelake.migrate.copy.engine import Runner, ThreadRunner
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.migrate.plan_scan import entry_fields, map_ahead
from icelake.migrate.progress import NoProgress
from icelake.uris import canonical, is_under

T = TypeVar("T")
HEAD_THREADS = 16  # a Lambda's chunks and reads in flight: each waits on S3, none uses the CPU
# A manifest as the check needs it: (content, file_path, recorded size) of each live entry, or
# the reader's complaint
ManifestFiles = list[tuple[int, str, int]] | str


@dataclass(frozen=True)
class Damage:
    """One file the target does not hold as written: what it is and what differs."""

    path: str
    what: str  # "data file", "manifest", ...
    problem: str  # "missing at the target", "CRC64NVME x, y recorded", "cannot be read: ..."
    snapshots: tuple[int, ...] = ()  # the snapshots that need it

    def __str__(self) -> str:
        return f"{self.what} {self.path}: {self.problem}"


@dataclass
class ProofCheck:
    files: int = 0  # referenced files checked
    heads: int = 0  # of those, by a HEAD each (the rest by the location's listing)
    ranges: int = 0  # the listings of ranges of the location's keys
    unrecorded: int = 0  # of those, not on the record: checked by size only
    damaged: list[Damage] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # not a file's damage (a path under the source)
    seconds: float = 0.0
    note: str = ""  # how the copies were checked, when not by a listing now (an S3 Inventory report)

    @property
    def problems(self) -> list[str]:
        return [*self.other, *(str(d) for d in self.damaged)]


@dataclass
class _Walk:
    """What the walk found: each file's kind and recorded size, and which snapshots reach it."""

    record: Record
    check: ProofCheck
    runner: Runner
    open_io: Callable[[], FileIO]
    here: Runner  # this process's threads, for the work too small for `runner`
    reached_by: dict[str, set[int]] = field(default_factory=dict)  # lists and manifests
    # A data or delete file's manifest (others that name it too in `more_owners`): a million files
    # hold a string each here, not a set of snapshots.
    owner: dict[str, str] = field(default_factory=dict)
    more_owners: dict[str, list[str]] = field(default_factory=dict)
    location: str = ""  # canonical table location, once read from the metadata
    inventory: InventoryReport | None = None  # answers for the copies in place of a listing

    def heads(self, files: Iterable[tuple[str, int | None, str]], spread: bool = False) -> set[str]:
        """Check each file (by the location's listing, or the inventory report, where the record
        allows, else a HEAD), in chunks on this process's threads, or, `spread`, on the runner;
        returns the damaged paths."""
        items = [FileToProve(p, r, w, self.record.get(p)) for p, r, w in dict.fromkeys(files)]
        results: list[ChunkResult] = []
        # S3 Tables' storage takes no listing: each file there is HEADed
        location = "" if is_table_storage(self.location) else self.location
        if self.inventory is not None:  # what the report holds is answered here; the rest HEADed
            known = self.inventory.objects
            answered = [f for f in items if by_listing(f, location) and canonical(f.path) in known]
            results.append(judged(answered, {f.path: known[canonical(f.path)] for f in answered}, 0))
            items_left = {f.path for f in answered}
            items, location = [f for f in items if f.path not in items_left], ""
            self.check.files += len(answered)
        chunks = chunks_of(items, location)
        runner = self.runner if spread else self.here
        results += runner.map("verify files", partial(check_chunk, self.open_io), chunks)
        bad: set[str] = set()
        for result in results:
            self.check.heads += result.heads
            self.check.unrecorded += result.unrecorded
            self.check.damaged += [Damage(*d) for d in result.damaged]
            bad.update(path for path, _w, _p in result.damaged)
        self.check.files += len(items)
        self.check.ranges += sum(1 for c in chunks if c.location is not None)
        return bad

    def read(self, path: str, what: str, parse: Callable[[str, bytes], list[T]]) -> list[T]:
        """A manifest list's parse; none (and named) when it cannot be read."""
        try:
            return parse(path, self.open_io().read(path))
        except Exception as exc:  # overwritten with something else: damaged, whatever the complaint
            self.unreadable(path, what, exc)
            return []

    def unreadable(self, path: str, what: str, exc: Exception | str) -> None:
        complaint = " ".join(str(exc).split())[:200]
        self.check.damaged.append(Damage(path, what, f"cannot be read: {complaint}"))

    def reach(self, path: str, snapshots: Iterable[int]) -> None:
        self.reached_by.setdefault(path, set()).update(snapshots)

    def owned(self, path: str, manifest: str) -> None:
        first = self.owner.setdefault(path, manifest)
        if first != manifest:
            self.more_owners.setdefault(path, []).append(manifest)

    def snapshots(self, path: str) -> tuple[int, ...]:
        """The snapshots that need `path`: those whose lists reach it, or reach a manifest naming it."""
        found = set(self.reached_by.get(path, ()))
        for manifest in (self.owner.get(path), *self.more_owners.get(path, ())):
            found.update(self.reached_by.get(manifest or "", ()))
        return tuple(sorted(found))


@roomy_gc()  # the record and the manifests' entries are held while a million keys are parsed
def proved_files(
    io: FileIO,
    metadata: str,
    record: Record,
    source_prefixes: Iterable[str] = (),
    *,
    runner: Runner | None = None,
    open_io: Callable[[], FileIO] | None = None,
    inventory: InventoryReport | None = None,
) -> ProofCheck:
    """Every file `metadata` reaches (itself included) compared with `record`. `runner` runs the
    manifests' reads and the data and delete files' chunks (on Spark: two jobs; the metadata
    files' HEADs, and everything by default, on `HEAD_THREADS` threads of this process), each
    opening its FileIO with `open_io` (default: `io`; on Spark, a `FileIOSpec`'s open);
    `inventory`, an S3 Inventory report of the target, answers for the copies it lists."""
    started = time.monotonic()
    here = ThreadRunner(HEAD_THREADS, NoProgress())
    walk = _Walk(record, ProofCheck(), runner or here, open_io or (lambda: io), here, inventory=inventory)
    walk.check.note = inventory.age_note() if inventory is not None else ""
    if walk.heads([(metadata, None, "metadata file")]):
        return _done(walk, started)
    meta, _gz = mj.parse_metadata(metadata, io.read(metadata))
    walk.check.other += _under_sources(meta, source_prefixes)
    walk.location = canonical(meta["location"])
    manifests = _lists(walk, meta)
    bad = walk.heads((p, length, "manifest") for p, length in manifests.items())
    readable = [p for p in manifests if p not in bad]
    files: dict[str, tuple[int | None, str]] = {}
    read = walk.runner.map("read manifests", partial(manifest_files, walk.open_io), readable)
    for path, entries in zip(readable, read, strict=True):
        if isinstance(entries, str):
            walk.unreadable(path, "manifest", entries)
            continue
        for content, file_path, size in entries:
            files[file_path] = (size, "delete file" if content else "data file")
            walk.owned(file_path, path)
    walk.heads(((p, size, what) for p, (size, what) in files.items()), spread=True)
    return _done(walk, started)


def manifest_files(open_io: Callable[[], FileIO], path: str) -> ManifestFiles:
    """(content, path, size) of each live entry of the manifest at `path`, or why it cannot be read."""
    try:
        entries = entry_fields(path, open_io().read(path))
    except Exception as exc:  # overwritten with something else: damaged, whatever the complaint
        return str(exc) or type(exc).__name__
    return [
        (content, file_path, size)
        for status, content, file_path, size, _r, _f in entries
        if status != DELETED
    ]


def _under_sources(meta: mj.Metadata, source_prefixes: Iterable[str]) -> list[str]:
    sources = [canonical(p) for p in source_prefixes]
    return [
        f"table location or property {path} is under a source prefix"
        for path in (meta["location"], *(meta.get("properties", {}).get(k) for k in mj.PATH_PROPERTIES))
        if path and any(is_under(canonical(path), s) for s in sources)
    ]


def _lists(walk: _Walk, meta: mj.Metadata) -> dict[str, int | None]:
    """The logged metadata files, statistics files and manifest lists checked; the manifests the
    lists that are whole name, with their recorded lengths."""
    lists = {s["manifest-list"]: s["snapshot-id"] for s in meta.get("snapshots", []) if "manifest-list" in s}
    first: list[tuple[str, int | None, str]] = [
        (p, None, "logged metadata file") for p in mj.metadata_log(meta)
    ]
    first += [(p, size, "statistics file") for p, size in mj.statistics_files(meta)]
    first += [(p, None, "manifest list") for p in lists]
    bad = walk.heads(first)
    manifests: dict[str, int | None] = {}
    whole = [(p, s) for p, s in lists.items() if p not in bad]
    for path, _s in lists.items():
        walk.reach(path, [_s])

    def refs(item: tuple[str, int]) -> tuple[int, list[ManifestRef]]:
        return item[1], walk.read(item[0], "manifest list", manifest_refs)

    for snapshot, found in map_ahead(refs, whole, HEAD_THREADS):
        for ref in found:
            manifests[ref.path] = ref.length
            walk.reach(ref.path, [snapshot])
    for inline in mj.inline_manifests(meta):
        manifests.setdefault(inline, None)
    return manifests


def _done(walk: _Walk, started: float) -> ProofCheck:
    check = walk.check
    check.damaged = [Damage(d.path, d.what, d.problem, walk.snapshots(d.path)) for d in check.damaged]
    check.seconds = round(time.monotonic() - started, 3)
    return check


def proof_requests(headed: int, listed: int, lists: int, manifests: int) -> dict[str, int]:
    """The S3 requests `proved_files` sends: a HEAD per file the listing does not answer for
    (`headed`: the metadata file, the logged versions, the rewritten lists, manifests and delete
    files, what lies outside the table location), the pages of the ranges that answer for the
    `listed` files (when those ranges hold only them), and a GET of the metadata file, each
    manifest list and each manifest. Estimates use it: keep it in step with `proved_files`."""
    pages = listing_pages(listed)
    heads = headed if pages or not listed else headed + listed  # too few to list: a HEAD each
    return {"head": heads, "list": pages, "get": 1 + lists + manifests}
