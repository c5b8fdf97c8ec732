"""What the metadata reaches: the metadata chain (logged versions that still exist), the
manifest lists, the manifests they name, every data and delete file those name, and what older
logged versions alone reach (`older_history`, for `history: all` and the orphans)."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import (
    ManifestRef,
    new_manifest_refs,
)
from icelake.migrate.avro.patch import PlannedManifest, refs_walker
from icelake.migrate.history import History, LoggedPaths, OlderHistory
from icelake.migrate.plan.entries import (
    Parsed,
    add_entries,
    manifest_files,
    manifest_files_job,
    recorded,
)
from icelake.migrate.plan.reads import (
    PlanContext,
    fetch_metadata,
    read_required,
)
from icelake.migrate.plan.target import with_found_prefixes
from icelake.migrate.plan_scan import fetched_ahead
from icelake.migrate.progress import ProgressSink
from icelake.uris import PrefixMap, canonical, parent


def metadata_chain(
    ctx: PlanContext, source_metadata: str, meta: mj.Metadata, refs: set[str]
) -> tuple[list[str], LoggedPaths]:
    """The metadata files to carry over: the logged ones that still exist, then the current one;
    and the manifest lists and statistics files those logged versions name. The log lives in the
    metadata directory, so one listing answers for all of it. A long log's files (a thousand of up
    to a thousand snapshots each) are parsed in worker processes."""
    logged = mj.metadata_log(meta)
    src_io = ctx.src_io
    logged_exist = ctx.reads.stat(src_io, logged, [parent(source_metadata)], ctx.workers)
    metadata_files = [p for p in logged if logged_exist[p] is not None] + [source_metadata]
    refs.add(source_metadata)
    logged_uris = metadata_files[:-1]
    cpu = ctx.cpus.for_jobs(len(logged_uris))
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


def read_manifest_lists(
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
    for uri, data in fetched_ahead(lists, functools.partial(read_required, src_io)):
        for path, length, content in new_manifest_refs(walker, uri, data):
            if path not in manifests:  # a ref made for the first naming only
                manifests[path] = ManifestRef(path, length, content)
        progress.advance(phase)
    return manifests


def older_history(
    ctx: PlanContext,
    logged: LoggedPaths,
    lists: list[str],
    manifests: dict[str, ManifestRef],
    files: dict[str, int],
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
    older.files.update(dict.fromkeys(stats, recorded(-1, live=False)))
    src_io, reads, workers = ctx.src_io, ctx.reads, ctx.workers
    present = reads.stat(src_io, candidates, roots, workers) if candidates else {}
    older.lists = [p for p in candidates if present[p] is not None]
    if not older.lists:
        return older
    older.metadata_bytes = sum(info.size for p in older.lists if (info := present[p]) is not None)
    named = read_manifest_lists(src_io, older.lists, ctx.progress, "scan older manifest lists")
    new = [ref for path, ref in named.items() if path not in manifests]
    there = reads.stat(src_io, [ref.path for ref in new], roots, workers) if new else {}
    for ref in new:
        if (info := there[ref.path]) is None:
            older.absent_manifests[ref.path] = ref.length
        else:
            older.manifests[ref.path] = ref
            older.metadata_bytes += info.size
    found, deletes, older.planned = read_manifests(
        ctx, older.manifests, older.references, "scan older manifests"
    )
    # Not required at the source: an older version may have lost them (a partial cleanup).
    older.files.update((p, recorded & ~1) for p, recorded in found.items() if p not in files)
    older.delete_formats = {p: fmt for p, fmt in deletes.items() if p in older.files}
    return older


def read_manifests(
    ctx: PlanContext,
    manifests: dict[str, ManifestRef],
    refs: set[str],
    phase: str = "scan manifests",
    equality: set[str] | None = None,
    *,
    only_added: bool = False,
) -> tuple[dict[str, int], dict[str, str], dict[str, PlannedManifest]]:
    """Every data and delete file: canonical path -> `recorded(size, live)`, the position
    delete files' formats, and the data manifests as read (`PlannedManifest`). Live files must
    exist; deleted-entry ones may be gone. Manifests are fetched ahead on threads, parsed there or
    in worker processes (`processes`, for many manifests: parsing is CPU-bound) and taken here in
    order (`live` depends on the order). `only_added`: the files entries ADDED (an incremental
    plan's new manifests, `entries.add_entries`)."""
    files: dict[str, int] = {}
    delete_formats: dict[str, str] = {}
    planned: dict[str, PlannedManifest] = {}
    src_io, reads, progress = ctx.src_io, ctx.reads, ctx.progress
    progress.start(phase, len(manifests))
    cpu = ctx.cpus.for_jobs(len(manifests))

    def fetch(uri: str) -> bytes | Parsed | None:
        if cpu is None:  # parsed by the consumer: parsing on these threads would contend for the GIL
            return read_required(src_io, uri)
        return src_io.parse_in(cpu, uri, manifest_files_job, reads.entries)

    for uri, fetched in fetched_ahead(list(manifests), fetch):
        if isinstance(fetched, tuple):
            parsed, read = fetched
        else:
            # Read here, or a manifest the job could not take: parsed here, where its error is
            # raised as icelake explains it.
            data = read_required(src_io, uri) if fetched is None else fetched
            parsed, read = manifest_files(reads.entries, uri, data)
        add_entries(parsed, files, delete_formats, refs, equality, only_added=only_added)
        if read is not None:
            planned[uri] = read
        progress.advance(phase)
    return files, delete_formats, planned


@dataclass
class Reach:
    """What the metadata reaches, as the later steps take it (paths canonical)."""

    metadata_files: list[str]  # logged ones that exist, oldest first, then the current one
    lists: list[str]  # manifest lists (with `history: all`, the older versions' too)
    manifests: dict[str, ManifestRef]
    files: dict[str, int]  # every data, delete and statistics file -> `recorded(size, live)`
    delete_formats: dict[str, str]  # position delete files -> their format
    equality: set[str]  # equality delete files, which the tally counts apart
    planned: dict[str, PlannedManifest]  # data manifests as read, for their rewrite
    older: OlderHistory  # what only older logged versions reach
    prefix_counts: Counter[str]  # referenced paths per mapping (by its source prefix)
    # The map the paths were counted by: the one given, or a table bucket's grown by the prefixes
    # found outside every mapping (`with_found_prefixes`), which the plan then maps by.
    prefix_map: PrefixMap

    def copy_paths(self, src_info: dict[str, ObjectInfo | None]) -> list[str]:
        """The files copied unchanged (not rewritten: no delete file) that the source has, in the
        manifests' order."""
        deletes = self.delete_formats
        return [p for p in self.files if p not in deletes and src_info[p] is not None]


def reach(
    ctx: PlanContext, source_metadata: str, meta: mj.Metadata, prefix_map: PrefixMap, history: History
) -> Reach:
    """Everything the table's metadata reaches, read once; refuses a referenced path no mapping
    moves (`prefix_counts`), or, into a table bucket, maps it (`with_found_prefixes`)."""
    # Every path the table references, for the prefix check: the metadata-level ones (metadata
    # files, manifest lists, manifests, a delete's referenced data file) here, the files' own as
    # the keys of `files` (a million-file table's paths are held once, not once more in a set).
    refs: set[str] = set()
    metadata_files, logged = metadata_chain(ctx, source_metadata, meta, refs)
    lists = mj.manifest_lists(meta)
    manifests = read_manifest_lists(ctx.src_io, lists, ctx.progress)
    for uri in mj.inline_manifests(meta):
        manifests.setdefault(uri, ManifestRef(uri, -1, 0))
    refs.update(manifests)
    equality: set[str] = set()
    files, delete_formats, planned = read_manifests(ctx, manifests, refs, equality=equality)
    for path, size in mj.statistics_files(meta):
        files.setdefault(canonical(path), recorded(size if size is not None else -1, live=True))
    roots = [m.source for m in prefix_map.mappings]
    older = older_history(ctx, logged, lists, manifests, files, roots)
    if history == "all":  # carried over: mapped, checked and copied as the live files are
        lists = [*lists, *older.lists]
        manifests.update(older.manifests)
        refs.update(older.manifests, older.references)
        files.update(older.files)
        delete_formats.update(older.delete_formats)
        planned.update(older.planned)
    refs = {canonical(p) for p in refs}.difference(files)
    mapped, counts = with_found_prefixes([files.keys(), refs], prefix_map, path_directories(meta))
    return Reach(
        metadata_files, lists, manifests, files, delete_formats, equality, planned, older, counts, mapped
    )


def path_directories(meta: mj.Metadata) -> set[str]:
    """The paths the table's metadata names as directories: its location, `write.*.path`."""
    properties = meta.get("properties", {})
    return {meta["location"], *(v for k in mj.PATH_PROPERTIES if (v := properties.get(k)))}
