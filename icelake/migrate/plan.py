"""Walk a source table from one metadata file and decide what the target needs.

Reads every metadata file, manifest list and manifest once; finds every prefix referenced and
checks that each one is mapped; checks that every live file exists at the source and what is
already at the target. Writes nothing.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import posixpath
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, overload

from icelake.aws.fileio import FileIO, ObjectInfo, is_absent
from icelake.errors import (
    MissingSourceFilesError,
    NotAMetadataFileError,
    TargetConflictError,
    TargetHoldsOtherTableError,
    UnmappedPrefixesError,
    UnsafeTargetError,
)
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro_entries import EntryFields
from icelake.migrate.avro_files import (
    DELETED,
    EQUALITY_DELETES,
    POSITION_DELETES,
    ManifestRef,
    new_manifest_refs,
)
from icelake.migrate.avro_patch import PlannedManifest, refs_walker
from icelake.migrate.collisions import refuse_duplicate_targets, refuse_overlapping_targets
from icelake.migrate.copy import is_same_copy
from icelake.migrate.copy_schedule import hot_share, spread_by_prefix
from icelake.migrate.cpu_pool import CpuPools
from icelake.migrate.delete_files import check_delete_file
from icelake.migrate.history import History, LoggedPaths, OlderHistory
from icelake.migrate.inventory import stat_by_listing, whole_listing
from icelake.migrate.models import Orphans
from icelake.migrate.plan_scan import fetched_ahead, map_in_chunks, planned_entries
from icelake.migrate.progress import ProgressSink
from icelake.uris import Mapping, PrefixMap, canonical, is_local, is_under, local_path, parent

T = TypeVar("T")
R = TypeVar("R")

# A local source check walks its files in worker processes (`CpuPools.for_jobs`) from this many
# files per job: 16,000 files and more, a walk of a tenth of a second and more.
LOCAL_FILES_PER_JOB = 1000


@dataclass(frozen=True, slots=True)  # slots: one per file copied, a million for a large table
class CopyTask:
    source: str  # canonical
    info: ObjectInfo
    mapping: Mapping  # the prefix mapping that moves it

    @property
    def target(self) -> str:
        """Made when asked, not held: a million target paths would be 150 MB of the plan."""
        return self.mapping.target + self.source[len(self.mapping.source) :]


class Copies(Sequence[CopyTask]):
    """The files to copy, each made into a `CopyTask` when asked, from the source check's answers
    (path -> what the object is). Not held as tasks: a million of them and their list are 64 MB,
    and they would all exist beside those answers at the end of the plan, its peak."""

    __slots__ = ("_infos", "_paths", "_prefix_map")

    def __init__(self, paths: list[str], infos: dict[str, ObjectInfo | None], prefix_map: PrefixMap) -> None:
        self._paths = paths
        self._infos = infos
        self._prefix_map = prefix_map

    def __len__(self) -> int:
        return len(self._paths)

    @overload
    def __getitem__(self, index: int) -> CopyTask: ...

    @overload
    def __getitem__(self, index: slice) -> list[CopyTask]: ...

    def __getitem__(self, index: int | slice) -> CopyTask | list[CopyTask]:
        if isinstance(index, slice):
            return [self._task(p) for p in self._paths[index]]
        return self._task(self._paths[index])

    def __iter__(self) -> Iterator[CopyTask]:
        return map(self._task, self._paths)

    def spread_by_prefix(self) -> Copies:
        """The same copies in the order that keeps every prefix busy for the whole copy
        (`copy_schedule.spread_by_prefix`: the order S3's per-prefix limits want)."""
        return Copies(spread_by_prefix(self._paths), self._infos, self._prefix_map)

    def prefix_spread(self) -> tuple[int, float]:
        """(how many prefixes the copies read from, the busiest one's share of them)."""
        return hot_share(self._paths)

    def pairs(self) -> Iterator[tuple[str, str]]:
        """(source, target) of every copy, without making its task (a file list, a journal)."""
        mappings = self._prefix_map.mappings
        if len(mappings) != 1:
            return map(self._pair, self._paths)
        # One mapping (the common case): a path inside it is mapped without a match call each.
        inside, target, cut = mappings[0].source + "/", mappings[0].target, len(mappings[0].source)
        return ((p, target + p[cut:]) if p.startswith(inside) else self._pair(p) for p in self._paths)

    def _pair(self, path: str) -> tuple[str, str]:
        mapping = self._prefix_map.match_canonical(path)
        assert mapping is not None
        return path, mapping.target + path[len(mapping.source) :]

    def __eq__(self, other: object) -> bool:  # as a list of the same tasks compares
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, like a list

    def _task(self, path: str) -> CopyTask:
        info, mapping = self._infos[path], self._prefix_map.match_canonical(path)
        assert info is not None and mapping is not None
        return CopyTask(path, info, mapping)


@dataclass(frozen=True)
class DeleteFileTask:
    source: str  # canonical
    target: str
    file_format: str


@dataclass(frozen=True)
class FileTally:
    """Every file the retained snapshots reference (what a migration carries over), by kind, with
    the bytes the source holds: what an assessment reports of a table."""

    data_files: int = 0
    data_bytes: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    deletion_vectors: int = 0  # Puffin files of deletion vectors (v3)
    delete_bytes: int = 0
    statistics_files: int = 0
    statistics_bytes: int = 0
    orc_delete_files: int = 0  # position deletes in ORC, which icelake cannot rewrite


@dataclass
class TablePlan:
    source_metadata: str
    target_metadata: str
    meta: mj.Metadata
    prefix_map: PrefixMap
    metadata_files: list[str]  # logged ones that exist, oldest first, then the current one
    manifest_lists: list[str]
    manifests: dict[str, ManifestRef]
    delete_files: list[DeleteFileTask]
    copies: Copies  # files missing at the target (or replaced with --overwrite)
    skipped_copies: int
    bytes_planned: int
    files_planned: int
    prefix_counts: Counter[str] = field(default_factory=Counter)
    # Data manifests as the plan read them: their rewrite splices paths where the plan found them.
    planned_manifests: dict[str, PlannedManifest] = field(default_factory=dict)
    history: History = "live"
    # Files only older logged versions reach, present at the source (history.py): copied under
    # `all`, reported either way.
    orphans: Orphans = field(default_factory=Orphans)
    # Manifests that carried lists name and the source no longer has (their lists keep the
    # recorded length: the target's version dangles where the source's does).
    absent_manifests: dict[str, int] = field(default_factory=dict)
    # What the table's files are, counted when the plan is asked to (`build_plan(tally=True)`).
    tally: FileTally | None = None

    def map_path(self, uri: str) -> str:
        return self.prefix_map.require(uri)


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
    read, `full` asks present objects for everything a HEAD says, `cpu` are worker processes a
    CPU-bound listing may run in, `canonical_uris` says every uri is canonical (see
    inventory.stat_by_listing)."""

    def __call__(
        self,
        io: FileIO,
        uris: Iterable[str],
        roots: Iterable[str],
        workers: int,
        progress: ProgressSink | None = None,
        phase: str = "",
        *,
        full: bool = False,
        cpu: Executor | None = None,
        canonical_uris: bool = False,
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


def table_prefix_map(meta: mj.Metadata, maps: Iterable[tuple[str, str]], target_location: str) -> PrefixMap:
    """The prefixes to move, checked: the table location always maps to the target location, and
    `maps` adds the other prefixes."""
    prefix_map = PrefixMap([*maps, (meta["location"], target_location)])
    _refuse_targets_under_sources(prefix_map)
    refuse_overlapping_targets(prefix_map)
    _refuse_files_in_the_way(prefix_map)
    return prefix_map


def build_plan(
    source_metadata: str,
    target_location: str,
    maps: Iterable[tuple[str, str]],
    src_io: FileIO,
    dst_io: FileIO,
    *,
    overwrite: bool,
    workers: int,
    progress: ProgressSink,
    reads: PlanReads = FAST_READS,
    source: tuple[mj.Metadata, bool] | None = None,
    processes: int = 1,
    cpus: CpuPools | None = None,
    history: History = "live",
    tally: bool = False,
) -> TablePlan:
    """`source`: the source metadata already read with `read_metadata` (not read again).
    `processes`: worker processes that parse manifests when the table has many (1: threads only).
    `cpus`: the migration's worker processes, to use instead (left running for the rewrites).
    `history`: what the target keeps (icelake.migrate.history): `live`, what the current metadata
    reaches, or `all`, also what older logged versions reach and the source still has."""
    meta, _gz = source or read_metadata(src_io, source_metadata)
    prefix_map = table_prefix_map(meta, maps, target_location)

    # Every path the table references, for the prefix check: the metadata-level ones (metadata
    # files, manifest lists, manifests, a delete's referenced data file) here, the files' own as
    # the keys of `files` (a million-file table's paths are held once, not once more in a set).
    refs: set[str] = set()
    with contextlib.ExitStack() as stack:  # the plan's own worker processes end with the source check
        if cpus is None:
            cpus = stack.enter_context(CpuPools(processes))
        metadata_files, logged = _metadata_chain(src_io, source_metadata, meta, refs, reads, workers, cpus)
        lists = mj.manifest_lists(meta)
        manifests = _manifests(src_io, lists, progress)
        for uri in mj.inline_manifests(meta):
            manifests.setdefault(uri, ManifestRef(uri, -1, 0))
        refs.update(manifests)
        equality: set[str] = set()  # equality delete files, which the tally counts apart
        files, delete_formats, planned = _files(
            src_io, manifests, refs, reads, progress, cpus, equality=equality
        )
        for path, size in mj.statistics_files(meta):
            files.setdefault(canonical(path), _recorded(size if size is not None else -1, live=True))
        roots = [m.source for m in prefix_map.mappings]
        older = _older_history(src_io, logged, lists, manifests, files, reads, workers, progress, cpus, roots)
        if history == "all":  # carried over: mapped, checked and copied as the live files are
            lists = [*lists, *older.lists]
            manifests.update(older.manifests)
            refs.update(older.manifests, older.references)
            files.update(older.files)
            delete_formats.update(older.delete_formats)
            planned.update(older.planned)
        refs = {canonical(p) for p in refs}.difference(files)

        directories = {
            meta["location"],
            *(v for k in mj.PATH_PROPERTIES if (v := meta.get("properties", {}).get(k))),
        }
        prefix_counts = _prefix_counts([files.keys(), refs], prefix_map, directories)
        del refs

        target_metadata = prefix_map.map(source_metadata)
        assert target_metadata is not None
        refuse_other_table(dst_io, parent(target_metadata), mj.table_uuid(meta))

        # A local walk of many files is CPU (a stat each): in ranges, in the worker processes.
        cpu = None if src_io.listing_waits else cpus.for_jobs(len(files) // LOCAL_FILES_PER_JOB)
        src_info = _check_sources(src_io, files, delete_formats, prefix_map, reads, workers, progress, cpu)
        counted = _tally(files, delete_formats, equality, meta, src_info) if tally else None
        if history == "all":
            orphans = older.orphans(src_info)
        else:  # only counted: their files are asked about here, not with the live ones
            asked = (
                reads.stat(src_io, older.files, roots, workers, canonical_uris=True) if older.files else {}
            )
            orphans = older.orphans(asked)
    # The copies in the manifests' order, which the source check's answers keep.
    copy_paths = [p for p in files if p not in delete_formats and src_info[p] is not None]
    del files  # before the copies are made: the two at once would be the plan's peak
    copies, skipped = _decide_copies(
        src_io, dst_io, copy_paths, src_info, prefix_map, reads, workers, progress, overwrite=overwrite
    )
    present, bytes_planned = 0, 0
    for info in src_info.values():
        if info is not None:
            present += 1
            bytes_planned += info.size
    return TablePlan(
        source_metadata=source_metadata,
        target_metadata=target_metadata,
        meta=meta,
        prefix_map=prefix_map,
        metadata_files=metadata_files,
        manifest_lists=lists,
        manifests=manifests,
        delete_files=[
            DeleteFileTask(p, prefix_map.map(p) or "", fmt)
            for p, fmt in delete_formats.items()
            if src_info[p]
        ],
        copies=copies,
        skipped_copies=skipped,
        bytes_planned=bytes_planned,
        files_planned=present + len(metadata_files) + len(lists) + len(manifests),
        prefix_counts=prefix_counts,
        planned_manifests=planned,
        history=history,
        orphans=orphans,
        absent_manifests=older.absent_manifests if history == "all" else {},
        tally=counted,
    )


def _tally(
    files: dict[str, int],
    delete_formats: dict[str, str],
    equality: set[str],
    meta: mj.Metadata,
    src_info: dict[str, ObjectInfo | None],
) -> FileTally:
    """The files by kind; a file's bytes are what the source holds (its recorded size if absent)."""
    statistics = {canonical(path) for path, _ in mj.statistics_files(meta)}
    counts: Counter[str] = Counter()
    for path, recorded in files.items():
        info = src_info.get(path)
        size = info.size if info is not None else max(_size(recorded), 0)
        if path in statistics:
            kind = "statistics"
        elif path in equality:
            kind = "equality"
        elif (fmt := delete_formats.get(path)) is not None:
            kind = "dv" if fmt.upper() == "PUFFIN" else "position"
            counts["orc"] += fmt.upper() == "ORC"
        else:
            kind = "data"
        counts[kind] += 1
        counts[kind + "_bytes"] += size
    return FileTally(
        data_files=counts["data"],
        data_bytes=counts["data_bytes"],
        position_delete_files=counts["position"],
        equality_delete_files=counts["equality"],
        deletion_vectors=counts["dv"],
        delete_bytes=counts["position_bytes"] + counts["equality_bytes"] + counts["dv_bytes"],
        statistics_files=counts["statistics"],
        statistics_bytes=counts["statistics_bytes"],
        orc_delete_files=counts["orc"],
    )


def _metadata_chain(
    src_io: FileIO,
    source_metadata: str,
    meta: mj.Metadata,
    refs: set[str],
    reads: PlanReads,
    workers: int,
    cpus: CpuPools,
) -> tuple[list[str], LoggedPaths]:
    """The metadata files to carry over: the logged ones that still exist, then the current one;
    and the manifest lists and statistics files those logged versions name. The log lives in the
    metadata directory, so one listing answers for all of it. A long log's files (a thousand of up
    to a thousand snapshots each) are parsed in worker processes."""
    logged = mj.metadata_log(meta)
    logged_exist = reads.stat(src_io, logged, [parent(source_metadata)], workers)
    metadata_files = [p for p in logged if logged_exist[p] is not None] + [source_metadata]
    refs.add(source_metadata)
    logged_uris = metadata_files[:-1]
    cpu = cpus.for_jobs(len(logged_uris))
    older = LoggedPaths()

    def referenced(uri: str) -> mj.VersionPaths:
        if found := src_io.parse_in(cpu, uri, mj.version_paths_job):
            return found
        # A file the job could not take is read and parsed here: its error is raised as icelake
        # explains it.
        return mj.version_paths(mj.parse_metadata(uri, fetch_metadata(src_io, uri))[0])

    for uri, (found, lists_at, stats_at) in fetched_ahead(logged_uris, referenced):
        refs.update(found)  # hashes the strings once: the two updates below reuse them
        if lists_at < 0:  # v1 inline manifests among the lists: the lists read from the parse
            older.lists.update(mj.manifest_lists(mj.parse_metadata(uri, fetch_metadata(src_io, uri))[0]))
        else:
            older.lists.update(found[lists_at:stats_at])
        older.stats.update(found[stats_at:])
    refs.update(mj.referenced_paths(meta))
    return metadata_files, older


def _manifests(
    src_io: FileIO, lists: list[str], progress: ProgressSink, phase: str = "scan manifest lists"
) -> dict[str, ManifestRef]:
    """The manifests the manifest lists name (each once, in the order first named). Each
    snapshot's list names all its manifests, a thousand snapshots' lists half a million records;
    but a list is the manifests its snapshot added followed by its parent's list (Iceberg's
    appends), and the walker reads only the records a list does not share with the one before it
    (`new_manifest_refs`), which were all named already."""
    manifests: dict[str, ManifestRef] = {}
    progress.start(phase, len(lists))
    walker = refs_walker()
    for uri, data in fetched_ahead(lists, functools.partial(_read_required, src_io)):
        for path, length, content in new_manifest_refs(walker, uri, data):
            if path not in manifests:  # a ref made for the first naming only
                manifests[path] = ManifestRef(path, length, content)
        progress.advance(phase)
    return manifests


def _older_history(
    src_io: FileIO,
    logged: LoggedPaths,
    lists: list[str],
    manifests: dict[str, ManifestRef],
    files: dict[str, int],
    reads: PlanReads,
    workers: int,
    progress: ProgressSink,
    cpus: CpuPools,
    roots: list[str],
) -> OlderHistory:
    """What the logged (older) versions reach that the current metadata does not, and the source
    still has. A history whose logged versions name no manifest list or statistics file the current
    metadata does not (no snapshot expired since) costs two set differences here. Otherwise: one
    source check of those lists and files (a listing of the metadata directory), a read of the
    lists the source still has, a check of the manifests only they name, and a read of those
    present; their files are asked about by the caller."""
    older = OlderHistory()
    candidates = sorted(logged.lists.difference(lists))
    stats = sorted({canonical(p) for p in logged.stats}.difference(files))
    if not candidates and not stats:
        return older
    older.files.update(dict.fromkeys(stats, _recorded(-1, live=False)))
    present = reads.stat(src_io, candidates, roots, workers) if candidates else {}
    older.lists = [p for p in candidates if present[p] is not None]
    if not older.lists:
        return older
    older.metadata_bytes = sum(info.size for p in older.lists if (info := present[p]) is not None)
    named = _manifests(src_io, older.lists, progress, "scan older manifest lists")
    new = [ref for path, ref in named.items() if path not in manifests]
    there = reads.stat(src_io, [ref.path for ref in new], roots, workers) if new else {}
    for ref in new:
        if (info := there[ref.path]) is None:
            older.absent_manifests[ref.path] = ref.length
        else:
            older.manifests[ref.path] = ref
            older.metadata_bytes += info.size
    found, deletes, older.planned = _files(
        src_io, older.manifests, older.references, reads, progress, cpus, "scan older manifests"
    )
    # Not required at the source: an older version may have lost them (a partial cleanup).
    older.files.update((p, recorded & ~1) for p, recorded in found.items() if p not in files)
    older.delete_formats = {p: fmt for p, fmt in deletes.items() if p in older.files}
    return older


def _files(
    src_io: FileIO,
    manifests: dict[str, ManifestRef],
    refs: set[str],
    reads: PlanReads,
    progress: ProgressSink,
    cpus: CpuPools,
    phase: str = "scan manifests",
    equality: set[str] | None = None,
) -> tuple[dict[str, int], dict[str, str], dict[str, PlannedManifest]]:
    """Every data and delete file: canonical path -> `_recorded(size, live)`, the position
    delete files' formats, and the data manifests as read (`PlannedManifest`). Live files must
    exist; deleted-entry ones may be gone. Manifests are fetched ahead on threads, parsed there or
    in worker processes (`processes`, for many manifests: parsing is CPU-bound) and taken here in
    order (`live` depends on the order)."""
    files: dict[str, int] = {}
    delete_formats: dict[str, str] = {}
    planned: dict[str, PlannedManifest] = {}
    progress.start(phase, len(manifests))
    cpu = cpus.for_jobs(len(manifests))

    def fetch(uri: str) -> bytes | Parsed | None:
        if cpu is None:  # parsed by the consumer: parsing on these threads would contend for the GIL
            return _read_required(src_io, uri)
        return src_io.parse_in(cpu, uri, manifest_files_job, reads.entries)

    for uri, fetched in fetched_ahead(list(manifests), fetch):
        if isinstance(fetched, tuple):
            parsed, read = fetched
        else:
            # Read here, or a manifest the job could not take: parsed here, where its error is
            # raised as icelake explains it.
            data = _read_required(src_io, uri) if fetched is None else fetched
            parsed, read = manifest_files(reads.entries, uri, data)
        _add_entries(parsed, files, delete_formats, refs, equality)
        if read is not None:
            planned[uri] = read
        progress.advance(phase)
    return files, delete_formats, planned


@dataclass(frozen=True)
class ManifestFiles:
    """The files a manifest's entries name, as planning takes them: in columns, which cross
    processes several times cheaper than a tuple per entry (a million entries for a big table)."""

    paths: list[str]  # canonical (listings, maps and lookups then take them as they are)
    sizes: array[int]  # file_size_in_bytes
    statuses: array[int]
    # (entry index, content, referenced_data_file, file_format) of the entries that are more than
    # a data file: delete files, and those naming a referenced data file
    others: list[tuple[int, int, str | None, str | None]]


Parsed = tuple[ManifestFiles, PlannedManifest | None]


def manifest_files(entries: Entries, uri: str, data: bytes) -> Parsed:
    """`entries` of one manifest as `ManifestFiles`. Made where the manifest is parsed, in a worker
    process for a table of many: a million canonical paths made there, not in the planning
    process, whose work is the phase's length."""
    parsed, read = entries(uri, data)
    others = [
        (i, content, ref, fmt)
        for i, (_, content, _, _, ref, fmt) in enumerate(parsed)
        if content or ref or fmt
    ]
    files = ManifestFiles(
        [canonical(path) for _, _, path, _, _, _ in parsed],
        array("q", [size for _, _, _, size, _, _ in parsed]),
        array("q", [status for status, _, _, _, _, _ in parsed]),
        others,
    )
    return files, read


def manifest_files_job(uri: str, data: bytes, entries: Entries) -> Parsed | None:
    """`manifest_files` in a worker process (`FileIO.parse_in`), or None when it cannot be made:
    errors do not cross processes intact, so the caller parses the manifest again and raises."""
    try:
        return manifest_files(entries, uri, data)
    except Exception:
        return None


# A file's recorded size and whether a live entry names it, as one int (`size * 2 + live`; the
# size -1 when unknown): a million files' (size, live) tuples would cost 64 MB more.
def _recorded(size: int, *, live: bool) -> int:
    return size * 2 + live


def _size(recorded: int) -> int:
    return recorded >> 1


def _live(recorded: int) -> bool:
    return bool(recorded & 1)


def _add_entries(
    parsed: ManifestFiles,
    files: dict[str, int],
    delete_formats: dict[str, str],
    refs: set[str],
    equality: set[str] | None = None,  # given: equality delete files are added to it
) -> None:
    paths = parsed.paths
    # `_recorded(size, live=...)`, inlined: a million entries. A live entry's file is live.
    if DELETED not in parsed.statuses:  # every entry live (the common case): set at once
        files.update(zip(paths, [size * 2 + 1 for size in parsed.sizes], strict=True))
    else:  # a deleted entry leaves its file as live as an earlier entry made it
        for path, size, status in zip(paths, parsed.sizes, parsed.statuses, strict=True):
            files[path] = size * 2 + (status != DELETED or files.get(path, 0) & 1)
    for i, content, reference, file_format in parsed.others:
        if reference:
            refs.add(reference)
        if content == POSITION_DELETES:
            delete_formats[paths[i]] = file_format  # type: ignore[assignment]
        elif content == EQUALITY_DELETES and equality is not None:
            equality.add(paths[i])


def _check_sources(
    src_io: FileIO,
    files: dict[str, int],
    delete_formats: dict[str, str],
    prefix_map: PrefixMap,
    reads: PlanReads,
    workers: int,
    progress: ProgressSink,
    cpu: Executor | None,
) -> dict[str, ObjectInfo | None]:
    """What exists at the source; refuses missing live files, sizes unlike the metadata's, and
    damaged delete files (parsed, not just copied: a bad footer is refused before any write)."""
    src_roots = [m.source for m in prefix_map.mappings]
    phase = "check source files"
    # The files' paths are canonical (`manifest_files`, `_files`).
    src_info = reads.stat(src_io, files, src_roots, workers, progress, phase, cpu=cpu, canonical_uris=True)
    missing: list[str] = []
    wrong_size: list[str] = []
    for p, recorded in files.items():  # one pass over a million: both lists are empty when all is well
        info = src_info[p]
        if info is None:
            if _live(recorded):
                missing.append(p)
        elif (size := _size(recorded)) >= 0 and info.size != size:
            wrong_size.append(f"{p} (metadata says {size} bytes, found {info.size})")
    if missing or wrong_size:
        raise MissingSourceFilesError(sorted(missing), sorted(wrong_size))
    footers = [(p, fmt, info.size) for p, fmt in delete_formats.items() if (info := src_info[p])]
    reads.map(lambda f: check_delete_file(src_io, *f), footers, workers)
    return src_info


def _decide_copies(
    src_io: FileIO,
    dst_io: FileIO,
    paths: list[str],
    src_info: dict[str, ObjectInfo | None],
    prefix_map: PrefixMap,
    reads: PlanReads,
    workers: int,
    progress: ProgressSink,
    *,
    overwrite: bool,
) -> tuple[Copies, int]:
    """(copies, how many are already there) of the files at `paths`, present at the source. A
    present target is asked in full: its metadata names the copy's source. Anything else at a
    target key is a conflict, unless `overwrite`."""
    tasks = Copies(paths, src_info, prefix_map)
    dst_info = _target_info(dst_io, tasks, prefix_map, reads, workers, progress)
    # An absent target is a copy; only the targets that are there are compared (a read or two each).
    there = [t for t in tasks if dst_info.get(t.target) is not None] if dst_info else []
    if not there:  # a first migration: every file is a copy, and no second list of them is made
        return tasks, 0

    def same(task: CopyTask) -> bool:
        t = dst_info[task.target]
        assert t is not None
        return is_same_copy(src_io, task.source, task.info, dst_io, task.target, t)

    same_copy = dict(zip((t.source for t in there), reads.map(same, there, workers), strict=True))
    conflicts = sorted(t.target for t in there if not same_copy[t.source])
    if conflicts and not overwrite:
        raise TargetConflictError(conflicts)
    left = [p for p in paths if not same_copy.get(p, False)]
    return Copies(left, src_info, prefix_map), sum(same_copy.values())


def _target_info(
    dst_io: FileIO,
    tasks: Copies,
    prefix_map: PrefixMap,
    reads: PlanReads,
    workers: int,
    progress: ProgressSink,
) -> dict[str, ObjectInfo | None]:
    """target -> what is there, for the targets that are there or may be (absent ones may be left
    out). One page of each target prefix is read first: a prefix that ends within it (the empty
    target of a first migration) has named every key under it, so only the targets that page
    names are asked about; the targets under bigger prefixes are all asked (`reads.stat`)."""
    pages = {m.target: whole_listing(dst_io, m.target) for m in prefix_map.mappings}
    known = {m: {canonical(uri) for uri, _info in page} for m, page in pages.items() if page is not None}
    if len(known) == len(pages) and not any(known.values()):
        asked = []  # every target prefix is empty: nothing to ask, and no target path to make
    else:
        asked = [
            t.target
            for t in tasks
            if (names := known.get(t.mapping.target)) is None or canonical(t.target) in names
        ]
    phase = "check target files"
    if not asked:  # the pages settled every target: the phase is still shown, and done at once
        progress.start(phase, len(tasks))
        progress.advance(phase, len(tasks))
        return {}
    dst_roots = [m.target for m in prefix_map.mappings]
    return reads.stat(dst_io, asked, dst_roots, workers, progress, phase, full=True)


def _refuse_targets_under_sources(prefix_map: PrefixMap) -> None:
    for m in prefix_map.mappings:
        target = canonical(m.target)
        for other in prefix_map.mappings:
            if is_under(target, other.source) or is_under(other.source, target):
                raise UnsafeTargetError(
                    f"target {m.target} overlaps the source prefix {other.source}; the source is never "
                    "written: choose a target location outside every source prefix"
                )


def _refuse_files_in_the_way(prefix_map: PrefixMap) -> None:
    """A local target that is, or lies under, a regular file cannot be created: say so now,
    not when the first write fails deep inside it."""
    for m in prefix_map.mappings:
        if not is_local(m.target):
            continue
        path = local_path(m.target)
        while path and not os.path.exists(path):
            path = os.path.dirname(path)
        if path and not os.path.isdir(path):
            raise UnsafeTargetError(
                f"the target {m.target} cannot be created: {path} is a file, not a directory; "
                "choose a target location that is a directory or does not exist yet"
            )


def _read_required(io: FileIO, uri: str) -> bytes:
    try:
        return io.read(uri)
    except Exception as exc:
        if io.stat(uri) is None:
            raise MissingSourceFilesError([uri]) from exc
        raise


def _prefix_counts(
    groups: Sequence[Collection[str]], prefix_map: PrefixMap, directories: set[str]
) -> Counter[str]:
    """How many referenced paths each mapping moves (by its source prefix), matching each path
    once (`groups`, of canonical paths, share none); refuses unmapped paths, named by the prefixes
    they share, and two source paths that would land on one target key."""
    counts = Counter[str]()
    # `prefix_map.match_canonical` of each path, a mapping at a time (the longest first): a pass of
    # C-level string tests per mapping instead of a Python call per path (a million for a big table).
    unmapped: Collection[str] = list(itertools.chain.from_iterable(groups))
    for m in prefix_map.mappings:
        inside = m.source + "/"
        rest = [p for p in unmapped if not (p.startswith(inside) or p == m.source)]
        if len(rest) < len(unmapped):
            counts[m.source] = len(unmapped) - len(rest)
        unmapped = rest
    if unmapped:
        raise UnmappedPrefixesError(_unmapped_prefixes(unmapped, prefix_map, directories))
    if len(prefix_map.mappings) > 1:  # one prefix replacement never maps two paths onto one key
        refuse_duplicate_targets(itertools.chain.from_iterable(groups), prefix_map)
    return counts


def _unmapped_prefixes(paths: Iterable[str], prefix_map: PrefixMap, directories: set[str]) -> dict[str, int]:
    """Unmapped paths grouped by the longest prefix they share per bucket (or file system).

    `directories` are paths that name a directory (the table location, `write.*.path` values):
    their own path is the prefix, where a file's prefix is its parent directory."""
    groups: dict[str, list[str]] = {}
    for p in paths:
        if prefix_map.match(p) is None:
            c = canonical(p)
            scheme, rest = c.split("://", 1)
            authority = rest.split("/", 1)[0]
            groups.setdefault(f"{scheme}://{authority}", []).append(c)
    dirs_canonical = {canonical(d) for d in directories}
    out: dict[str, int] = {}
    for root, members in groups.items():
        dirs = [m if m in dirs_canonical or m == root else posixpath.dirname(m) for m in members]
        common = posixpath.commonpath([d.split("://", 1)[1] for d in dirs])
        out[f"{root.split('://', 1)[0]}://{common}"] = len(members)
    return out


def _is_metadata_name(name: str) -> bool:
    return name.endswith((".metadata.json", ".metadata.json.gz"))


def refuse_other_table(dst_io: FileIO, metadata_dir: str, source_uuid: str | None) -> None:
    """A target metadata directory may only hold this same table (a previous run of ours)."""
    try:
        existing = sorted(u for u, _ in dst_io.list(metadata_dir) if _is_metadata_name(u))
    except Exception:
        existing = []
    for uri in existing[-1:]:
        try:
            found = mj.table_uuid(read_metadata(dst_io, uri)[0])
        except NotAMetadataFileError:
            continue
        if found and source_uuid and found != source_uuid:
            raise TargetHoldsOtherTableError(metadata_dir, found, source_uuid)
