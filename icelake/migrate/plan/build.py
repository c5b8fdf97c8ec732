"""Walk a source table from one metadata file and decide what the target needs.

Reads every metadata file, manifest list and manifest once; finds every prefix referenced and
checks that each one is mapped; checks that every live file exists at the source and what is
already at the target. Writes nothing. `build_plan` is the sequence of the plan's steps, each in
its own module (see the package's docstring).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.migrate import metadata_json as mj
from icelake.migrate.cpu_pool import CpuPools
from icelake.migrate.plan.copies import decide_copies
from icelake.migrate.plan.model import DeleteFileTask, TablePlan
from icelake.migrate.plan.reach import Reach, reach
from icelake.migrate.plan.reads import PlanContext, read_metadata
from icelake.migrate.plan.source import AtSource, at_source
from icelake.migrate.plan.target import refuse_other_table, table_prefix_map
from icelake.migrate.settings import DEFAULT_SETTINGS, EngineSettings
from icelake.uris import parent


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
        reached = reach(ctx, source_metadata, meta, prefix_map, settings.history)
        refuse_other_table(dst_io, parent(target_metadata), mj.table_uuid(meta))
        found = at_source(ctx, reached, meta, prefix_map, settings)
    # The copies in the manifests' order, which the source check's answers keep.
    copy_paths = reached.copy_paths(found.info)
    reached.files = {}  # before the copies are made: the two at once would be the plan's peak
    copies, skipped = decide_copies(ctx, copy_paths, found.info, prefix_map, overwrite=settings.overwrite)
    return TablePlan(
        source_metadata=source_metadata,
        target_metadata=target_metadata,
        meta=meta,
        prefix_map=prefix_map,
        metadata_files=reached.metadata_files,
        manifest_lists=reached.lists,
        manifests=reached.manifests,
        delete_files=_delete_files(reached, found.info, prefix_map.map),
        copies=copies,
        skipped_copies=skipped,
        prefix_counts=reached.prefix_counts,
        planned_manifests=reached.planned,
        history=settings.history,
        orphans=found.orphans,
        absent_manifests=reached.older.absent_manifests if settings.history == "all" else {},
        tally=found.tally,
        **_planned_totals(reached, found),
    )


def _delete_files(
    reached: Reach, src_info: dict[str, ObjectInfo | None], map_path: Callable[[str], str | None]
) -> list[DeleteFileTask]:
    """The position delete files the source has, each with its target and format."""
    return [
        DeleteFileTask(p, map_path(p) or "", fmt) for p, fmt in reached.delete_formats.items() if src_info[p]
    ]


def _planned_totals(reached: Reach, found: AtSource) -> dict[str, int]:
    """files_planned (every file present at the source and every metadata file) and bytes_planned."""
    present, bytes_planned = 0, 0
    for info in found.info.values():
        if info is not None:
            present += 1
            bytes_planned += info.size
    metadata = len(reached.metadata_files) + len(reached.lists) + len(reached.manifests)
    return {"files_planned": present + metadata, "bytes_planned": bytes_planned}
