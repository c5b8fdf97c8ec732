"""An incremental plan: from the last synced version (`since.SyncBase`), only what the source
committed since. Metadata files, manifest lists and manifests are immutable and their paths
unique, so a sync needs:

- the metadata versions logged since the last sync (and the current one);
- the manifest lists of the snapshots committed since;
- the manifests those lists name that the target's lists of the last sync do not (the target's
  rewritten manifests of older ones are reused, with the lengths its lists record);
- the files those manifests' entries ADDED (an EXISTING entry of a rewritten or merged manifest,
  or a DELETED one, names a file an earlier sync carried), every position delete file they name
  (a rewritten delete manifest needs what rewriting each changed: an old one is rewritten to the
  same bytes, which the target already holds, and skipped), and new statistics files.

What exists is asked around the new keys only (`inventory_near.stat_near`): their directories
listed from the first of them while that pays, else a HEAD each."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from icelake.errors import NoBase
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import ManifestRef, manifest_refs
from icelake.migrate.avro.patch import PlannedManifest
from icelake.migrate.inventory_near import stat_near
from icelake.migrate.plan.entries import recorded
from icelake.migrate.plan.reach import path_directories, read_manifest_lists, read_manifests
from icelake.migrate.plan.reads import PlanContext, read_metadata
from icelake.migrate.plan.since import SyncBase
from icelake.migrate.plan.target import with_found_prefixes
from icelake.uris import PrefixMap, canonical


@dataclass
class Increment:
    """What the source committed since the last sync, as the later steps take it."""

    metadata_files: list[str]  # the versions logged since that the source has, then the current one
    kept_logs: frozenset[str]  # every logged version the target keeps, old and new
    lists: list[str]  # the new snapshots' manifest lists
    manifests: dict[str, ManifestRef]  # the manifests they name that the target does not hold
    reused_lengths: dict[str, int]  # manifests the target holds already -> their length there
    files: dict[str, int]  # added data, delete and statistics files -> `recorded(size, live)`
    delete_formats: dict[str, str]
    equality: set[str]
    planned: dict[str, PlannedManifest]
    prefix_counts: Counter[str]
    prefix_map: PrefixMap  # as `Reach.prefix_map`


def increment(
    ctx: PlanContext,
    base: SyncBase,
    source_metadata: str,
    meta: mj.Metadata,
    prefix_map: PrefixMap,
    history: str,
) -> Increment:
    """What the source committed since `base`, read once; `NoBase` when it cannot be planned so."""
    metadata_files, kept = _new_versions(ctx, base, source_metadata, meta, prefix_map)
    synced_ids = base.snapshot_ids
    new = [s for s in meta.get("snapshots", []) if s["snapshot-id"] not in synced_ids]
    if any("manifest-list" not in s for s in new):
        raise NoBase("a new snapshot has inline manifests (format v1), which only a full plan reads")
    lists = [s["manifest-list"] for s in new]
    if history == "all":
        lists += _expired_since(ctx, metadata_files[:-1], synced_ids | {s["snapshot-id"] for s in new})
    named = read_manifest_lists(ctx.src_io, lists, ctx.progress)
    held = _held_lengths(ctx, base, new)
    manifests: dict[str, ManifestRef] = {}
    reused: dict[str, int] = {}
    for path, ref in named.items():
        target = prefix_map.map(path)
        length = held.get(canonical(target)) if target is not None else None
        if length is None:
            manifests[path] = ref
        else:
            reused[path] = length
    refs: set[str] = {*metadata_files, *lists, *manifests}
    equality: set[str] = set()
    files, deletes, planned = read_manifests(ctx, manifests, refs, equality=equality, only_added=True)
    synced_stats = {canonical(p) for p, _ in mj.statistics_files(base.target_meta)}
    for path, size in mj.statistics_files(meta):
        target = prefix_map.map(path)
        if target is None or canonical(target) not in synced_stats:
            files.setdefault(canonical(path), recorded(size if size is not None else -1, live=True))
    refs = {canonical(p) for p in refs}.difference(files)
    mapped, counts = with_found_prefixes([files.keys(), refs], prefix_map, path_directories(meta))
    return Increment(
        metadata_files, kept, lists, manifests, reused, files, deletes, equality, planned, counts, mapped
    )


def _new_versions(
    ctx: PlanContext, base: SyncBase, source_metadata: str, meta: mj.Metadata, prefix_map: PrefixMap
) -> tuple[list[str], frozenset[str]]:
    """(the versions logged since the last sync that the source has, then the current one; every
    logged version the target keeps). The target's version of the last sync logs what it kept."""
    synced_logs = {canonical(p) for p in mj.metadata_log(base.target_meta)}
    synced_base = canonical(base.source_metadata)
    old: list[str] = []
    candidates: list[str] = []
    for uri in mj.metadata_log(meta):
        target = prefix_map.map(uri)
        if canonical(uri) == synced_base or (target is not None and canonical(target) in synced_logs):
            old.append(uri)
        else:
            candidates.append(uri)
    there = stat_near(ctx.src_io, candidates, [], ctx.workers) if candidates else {}
    new = [uri for uri in candidates if there[uri] is not None]
    return [*new, source_metadata], frozenset([*old, *new, source_metadata])


def _expired_since(ctx: PlanContext, logged: list[str], known: set[int]) -> list[str]:
    """With `history: all`: the lists of snapshots committed and expired since the last sync,
    which only the versions logged since name, and which the source still has."""
    lists: list[str] = []
    for uri in logged:
        version, _gz = read_metadata(ctx.src_io, uri)
        lists += [
            s["manifest-list"]
            for s in version.get("snapshots", [])
            if s["snapshot-id"] not in known and "manifest-list" in s
        ]
    lists = list(dict.fromkeys(lists))
    there = stat_near(ctx.src_io, lists, [], ctx.workers) if lists else {}
    return [uri for uri in lists if there[uri] is not None]


def _held_lengths(ctx: PlanContext, base: SyncBase, new: list[mj.Metadata]) -> dict[str, int]:
    """Target manifest path -> length, of every manifest the target's lists of the new snapshots'
    synced parents name: the current one's (read by `sync_base`), and a branch head's when a new
    snapshot was committed on another branch."""
    held = {canonical(p): n for p, n in base.target_list.items()}
    synced = {s["snapshot-id"]: s for s in base.target_meta.get("snapshots", [])}
    current = base.target_meta.get("current-snapshot-id")
    parents: set[int] = {p for s in new if (p := s.get("parent-snapshot-id")) is not None}
    for parent_id in sorted(parents.intersection(synced) - {current}):
        uri = synced[parent_id].get("manifest-list")
        if uri is None:
            continue
        data = ctx.dst_io.read(uri)
        held.update((canonical(r.path), r.length) for r in manifest_refs(uri, data))
    return held


def near_reads(ctx: PlanContext) -> PlanContext:
    """`ctx` asking what exists around the keys themselves (`inventory_near.stat_near`): a listing
    of the table's prefixes would cost what the table holds, not what changed."""
    return replace(ctx, reads=replace(ctx.reads, stat=stat_near))
