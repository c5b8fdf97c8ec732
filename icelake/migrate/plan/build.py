"""Walk a source table from one metadata file and decide what the target needs.

Reads every metadata file, manifest list and manifest once; finds every prefix referenced and
checks that each one is mapped; checks that every live file exists at the source and what is
already at the target. Writes nothing. `build_plan` is the sequence of the plan's steps, each in
its own module (see the package's docstring).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TypedDict

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.errors import NoBase
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import ManifestRef
from icelake.migrate.avro.patch import PlannedManifest
from icelake.migrate.copy.cpu_pool import CpuPools
from icelake.migrate.plan.copies import decide_copies
from icelake.migrate.plan.incremental import Increment, increment, near_reads
from icelake.migrate.plan.model import DeleteFileTask, TablePlan
from icelake.migrate.plan.reach import Reach, reach
from icelake.migrate.plan.reads import PlanContext, read_metadata
from icelake.migrate.plan.since import SyncBase, sync_base
from icelake.migrate.plan.source import at_source, check_sources, count_files
from icelake.migrate.plan.target import refuse_other_table, table_prefix_map
from icelake.migrate.settings import DEFAULT_SETTINGS, EngineSettings
from icelake.uris import PrefixMap, parent


def build_plan(
    source_metadata: str,
    target_location: str,
    maps: Iterable[tuple[str, str]],
    src_io: FileIO,
    dst_io: FileIO,
    *,
    settings: EngineSettings = DEFAULT_SETTINGS,
    source: tuple[mj.Metadata, bool] | None = None,
    cpus: CpuPools | None = None,
) -> TablePlan:
    """`source`: the source metadata already read with `read_metadata` (not read again).
    `settings`: `workers` threads, `processes` that parse manifests when the table has many (a plan
    alone: threads only unless told), `history` (icelake.migrate.history: `live`, what the current
    metadata reaches, or `all`, also what older logged versions reach and the source still has),
    `overwrite`, `reads`, `tally`. `cpus`: the migration's worker processes, to use instead of
    starting the plan's own (left running for the rewrites)."""
    meta, _gz = source or read_metadata(src_io, source_metadata)
    prefix_map = table_prefix_map(meta, maps, target_location)
    target_metadata = prefix_map.map(source_metadata)
    assert target_metadata is not None
    with contextlib.ExitStack() as stack:  # the plan's own worker processes end with the source check
        if cpus is None:
            cpus = stack.enter_context(CpuPools(settings.plan_processes()))
        ctx = PlanContext(src_io, dst_io, settings.reads, settings.workers, settings.progress, cpus)
        try:
            base = sync_base(settings.since, source_metadata, meta, prefix_map, dst_io, src_io)
            return incremental_plan(ctx, base, source_metadata, meta, prefix_map, settings)
        except NoBase as why:
            full_reason = str(why)
        reached = reach(ctx, source_metadata, meta, prefix_map, settings.history)
        prefix_map = reached.prefix_map  # a table bucket's grown by the prefixes found outside it
        refuse_other_table(dst_io, parent(target_metadata), mj.table_uuid(meta))
        found = at_source(ctx, reached, meta, prefix_map, settings)
    # The copies in the manifests' order, which the source check's answers keep.
    copy_paths = reached.copy_paths(found.info)
    reached.files = {}  # before the copies are made: the two at once would be the plan's peak
    fresh = settings.copy.fresh_target
    copies, skipped = decide_copies(
        ctx, copy_paths, found.info, prefix_map, overwrite=settings.overwrite, fresh=fresh
    )
    return TablePlan(
        source_metadata=source_metadata,
        target_metadata=target_metadata,
        meta=meta,
        prefix_map=prefix_map,
        delete_files=_delete_files(reached, found.info, prefix_map.map),
        copies=copies,
        skipped_copies=skipped,
        history=settings.history,
        orphans=found.orphans,
        absent_manifests=reached.older.absent_manifests if settings.history == "all" else {},
        tally=found.tally,
        sync_reason=full_reason,
        **_walked(reached, found.info),
    )


def incremental_plan(
    ctx: PlanContext,
    base: SyncBase,
    source_metadata: str,
    meta: mj.Metadata,
    prefix_map: PrefixMap,
    settings: EngineSettings,
) -> TablePlan:
    """The plan of what the source committed since `base` (`plan.incremental`); `NoBase` when it
    cannot be planned so."""
    inc = increment(ctx, base, source_metadata, meta, prefix_map, settings.history)
    prefix_map = inc.prefix_map  # a table bucket's grown by the prefixes found outside it
    asked = near_reads(ctx)
    info = check_sources(asked, inc.files, inc.delete_formats, prefix_map, None)
    copy_paths = [p for p in inc.files if p not in inc.delete_formats and info[p] is not None]
    copies, skipped = decide_copies(
        asked, copy_paths, info, prefix_map, overwrite=settings.overwrite, first_page=False
    )
    tally = count_files(inc.files, inc.delete_formats, inc.equality, meta, info) if settings.tally else None
    return TablePlan(
        source_metadata=source_metadata,
        target_metadata=prefix_map.require(source_metadata),
        meta=meta,
        prefix_map=prefix_map,
        delete_files=[
            DeleteFileTask(p, prefix_map.map(p) or "", f) for p, f in inc.delete_formats.items() if info[p]
        ],
        copies=copies,
        skipped_copies=skipped,
        history=settings.history,
        tally=tally,
        sync="incremental",
        sync_reason=f"the target holds the last sync, {base.source_metadata}, and the source continues it",
        kept_logs=inc.kept_logs,
        reused_lengths=inc.reused_lengths,
        **_walked(inc, info),
    )


def _delete_files(
    reached: Reach, src_info: dict[str, ObjectInfo | None], map_path: Callable[[str], str | None]
) -> list[DeleteFileTask]:
    """The position delete files the source has, each with its target and format."""
    return [
        DeleteFileTask(p, map_path(p) or "", fmt) for p, fmt in reached.delete_formats.items() if src_info[p]
    ]


class _Walked(TypedDict):
    metadata_files: list[str]
    manifest_lists: list[str]
    manifests: dict[str, ManifestRef]
    prefix_counts: Counter[str]
    planned_manifests: dict[str, PlannedManifest]
    files_planned: int
    bytes_planned: int


def _walked(walk: Reach | Increment, info: dict[str, ObjectInfo | None]) -> _Walked:
    """What a plan takes from the metadata it walked, the whole table's or a sync's: the metadata
    files, lists and manifests, the files by prefix, the manifests as planned, and its totals:
    files_planned (every file present at the source and every metadata file) and bytes_planned."""
    present, bytes_planned = 0, 0
    for found in info.values():
        if found is not None:
            present += 1
            bytes_planned += found.size
    metadata = len(walk.metadata_files) + len(walk.lists) + len(walk.manifests)
    return {
        "metadata_files": walk.metadata_files,
        "manifest_lists": walk.lists,
        "manifests": walk.manifests,
        "prefix_counts": walk.prefix_counts,
        "planned_manifests": walk.planned,
        "files_planned": present + metadata,
        "bytes_planned": bytes_planned,
    }
