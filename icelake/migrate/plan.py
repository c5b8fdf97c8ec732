"""Walk a source table from one metadata file and decide what the target needs.

Reads every metadata file, manifest list and manifest once; finds every prefix referenced and
checks that each one is mapped; checks that every live file exists at the source and what is
already at the target. Writes nothing.
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

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
from icelake.migrate.avro_files import POSITION_DELETES, ManifestRef, manifest_refs
from icelake.migrate.collisions import refuse_duplicate_targets, refuse_overlapping_targets
from icelake.migrate.copy import is_same_copy
from icelake.migrate.delete_files import check_delete_file
from icelake.migrate.inventory import stat_by_listing
from icelake.migrate.plan_scan import entry_fields, entry_fields_fastavro, map_in_chunks
from icelake.migrate.progress import ProgressSink
from icelake.uris import PrefixMap, canonical, is_local, is_under, local_path, parent

DELETED = 2  # manifest entry status


@dataclass(frozen=True)
class CopyTask:
    source: str
    target: str
    info: ObjectInfo


@dataclass(frozen=True)
class DeleteFileTask:
    source: str
    target: str
    file_format: str


@dataclass
class TablePlan:
    source_metadata: str
    target_metadata: str
    meta: mj.Metadata
    meta_gzipped: bool
    prefix_map: PrefixMap
    metadata_files: list[str]  # logged ones that exist, oldest first, then the current one
    manifest_lists: list[str]
    manifests: dict[str, ManifestRef]
    delete_files: list[DeleteFileTask]
    copies: list[CopyTask]  # files missing at the target (or replaced with --overwrite)
    skipped_copies: int
    bytes_planned: int
    files_planned: int
    prefix_counts: Counter[str] = field(default_factory=Counter)

    def map_path(self, uri: str) -> str:
        return self.prefix_map.require(uri)


def read_metadata(io: FileIO, uri: str) -> tuple[mj.Metadata, bool]:
    try:
        raw = io.read(uri)
    except Exception as exc:
        # Only absence means "not a metadata file"; denied, throttled or unreachable reads keep
        # their own cause, which the CLI explains.
        if is_absent(exc):
            raise NotAMetadataFileError(uri, "it does not exist") from exc
        raise
    return mj.parse_metadata(uri, raw)


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
    fast: bool = True,
) -> TablePlan:
    """`fast=False` is the reference path (every manifest entry decoded by fastavro, one pool task
    per object checked); both give the same plan, which tests assert."""
    read_entries = entry_fields if fast else entry_fields_fastavro
    stat = functools.partial(stat_all, each=not fast)
    meta, gz = read_metadata(src_io, source_metadata)
    # The table location always maps to the target location; --map adds the other prefixes.
    prefix_map = PrefixMap([*maps, (meta["location"], target_location)])
    _refuse_targets_under_sources(prefix_map)
    refuse_overlapping_targets(prefix_map)
    _refuse_files_in_the_way(prefix_map)

    paths = Counter[str]()  # every referenced path -> how often; for the prefix check

    def see(path_list: Iterable[str]) -> None:
        paths.update(path_list)

    # 1. The metadata chain: logged files that still exist are carried over.
    logged = mj.metadata_log(meta)
    if fast:  # the log lives in the metadata directory: one listing answers for all of it
        logged_exist = stat_by_listing(src_io, logged, [parent(source_metadata)], workers)
    else:
        logged_exist = stat(src_io, logged, workers)
    metadata_files = [p for p in logged if logged_exist[p] is not None] + [source_metadata]
    see([source_metadata])
    for uri in metadata_files[:-1]:
        see(mj.referenced_paths(read_metadata(src_io, uri)[0]))
    see(mj.referenced_paths(meta))

    # 2. Manifest lists of the live snapshots, and the manifests they name (each once).
    lists = mj.manifest_lists(meta)
    manifests: dict[str, ManifestRef] = {}
    progress.start("scan manifest lists", len(lists))
    for uri in lists:
        for ref in manifest_refs(uri, _read_required(src_io, uri)):
            manifests.setdefault(ref.path, ref)
        progress.advance("scan manifest lists")
    for uri in mj.inline_manifests(meta):
        manifests.setdefault(uri, ManifestRef(uri, -1, 0))
    see(list(manifests))

    # 3. Every data and delete file; live ones must exist, deleted-entry ones may be gone.
    files: dict[str, tuple[int, bool]] = {}  # path -> (size recorded, live)
    delete_formats: dict[str, str] = {}
    progress.start("scan manifests", len(manifests))
    for uri in manifests:
        for status, content, path, file_size, reference, file_format in read_entries(
            uri, _read_required(src_io, uri)
        ):
            live = status != DELETED or files.get(path, (0, False))[1]
            files[path] = (file_size, live)
            if reference:
                see([reference])
            if content == POSITION_DELETES:
                delete_formats[path] = file_format  # type: ignore[assignment]
        progress.advance("scan manifests")
    see(list(files))
    stats = mj.statistics_files(meta)
    for path, size in stats:
        files.setdefault(path, (size if size is not None else -1, True))

    directories = {
        meta["location"],
        *(v for k in mj.PATH_PROPERTIES if (v := meta.get("properties", {}).get(k))),
    }
    unmapped = _unmapped_prefixes(paths, prefix_map, directories)
    if unmapped:
        raise UnmappedPrefixesError(unmapped)
    refuse_duplicate_targets(paths, prefix_map)

    target_metadata = prefix_map.map(source_metadata)
    assert target_metadata is not None
    refuse_other_table(dst_io, parent(target_metadata), mj.table_uuid(meta))

    # 4. Source existence and target state of every file that is copied or rewritten.
    src_roots = [m.source for m in prefix_map.mappings]
    if fast:  # listings, HEAD only for what they cannot settle
        src_info = stat_by_listing(src_io, files, src_roots, workers, progress, "check source files")
    else:
        src_info = stat(src_io, list(files), workers, progress, "check source files")
    missing = sorted(p for p, (_s, live) in files.items() if live and src_info[p] is None)
    wrong_size = sorted(
        f"{p} (metadata says {files[p][0]} bytes, found {info.size})"
        for p, info in src_info.items()
        if info is not None and files[p][0] >= 0 and info.size != files[p][0]
    )
    if missing or wrong_size:
        raise MissingSourceFilesError(missing, wrong_size)
    # Delete files are parsed, not just copied: a damaged footer is refused before any write.
    footers = [(p, fmt, info.size) for p, fmt in delete_formats.items() if (info := src_info[p])]
    map_in_chunks(lambda f: check_delete_file(src_io, *f), footers, workers)

    copy_paths = [p for p in files if p not in delete_formats and src_info[p] is not None]
    targets = {p: prefix_map.map(p) or "" for p in copy_paths}
    if fast:  # a present target is asked in full: its metadata names the copy's source
        dst_roots = [m.target for m in prefix_map.mappings]
        dst_info = stat_by_listing(
            dst_io, targets.values(), dst_roots, workers, progress, "check target files", full=True
        )
    else:
        dst_info = stat(dst_io, list(targets.values()), workers, progress, "check target files")
    copies: list[CopyTask] = []
    conflicts: list[str] = []
    skipped = 0

    def decide(p: str) -> str:
        s, t = src_info[p], dst_info[targets[p]]
        assert s is not None
        if t is None:
            return "copy"
        return "skip" if is_same_copy(src_io, p, s, dst_io, targets[p], t) else "conflict"

    if fast:
        decided = map_in_chunks(decide, copy_paths, workers)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            decided = list(pool.map(decide, copy_paths))
    decisions = dict(zip(copy_paths, decided, strict=True))
    for p, decision in decisions.items():
        info = src_info[p]
        assert info is not None
        if decision == "skip":
            skipped += 1
        elif decision == "copy" or overwrite:
            copies.append(CopyTask(p, targets[p], info))
        else:
            conflicts.append(targets[p])
    if conflicts:
        raise TargetConflictError(sorted(conflicts))

    prefix_counts = Counter[str]()
    for p in paths:
        m = prefix_map.match(p)
        if m is not None:
            prefix_counts[m.source] += 1
    present = [i for i in src_info.values() if i is not None]
    return TablePlan(
        source_metadata=source_metadata,
        target_metadata=target_metadata,
        meta=meta,
        meta_gzipped=gz,
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
        bytes_planned=sum(i.size for i in present),
        files_planned=len(present) + len(metadata_files) + len(lists) + len(manifests),
        prefix_counts=prefix_counts,
    )


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


def stat_all(
    io: FileIO,
    uris: list[str],
    workers: int,
    progress: ProgressSink | None = None,
    phase: str = "",
    *,
    each: bool = False,
) -> dict[str, ObjectInfo | None]:
    """`io.stat` of every uri on `workers` threads, a run of uris per pool task (`each`: one
    task per uri, the reference path)."""
    if progress:
        progress.start(phase, len(uris))

    def one(uri: str) -> ObjectInfo | None:
        info = io.stat(uri)
        if progress:
            progress.advance(phase)
        return info

    if not each:
        return dict(zip(uris, map_in_chunks(one, uris, workers), strict=True))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(uris, pool.map(one, uris), strict=True))


def _unmapped_prefixes(paths: Counter[str], prefix_map: PrefixMap, directories: set[str]) -> dict[str, int]:
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
