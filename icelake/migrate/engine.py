"""Run a migration: plan, copy unchanged files, rewrite files that hold paths, metadata.json last.

Write order makes every intermediate state safe: data first, then delete files, manifests,
manifest lists and finally the metadata.json files (current one last). Until that last write
the target has no metadata pointing at anything missing, so a run killed anywhere is resumed by
running it again (identical files are recognised and skipped).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from threading import Lock

from icelake.aws.fileio import FileIO, ObjectInfo, sha256_b64
from icelake.errors import TargetConflictError, UnsafeTargetError
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro_files import DATA, DeleteRewrite, rewrite_manifest_list
from icelake.migrate.copy import CopySettings, copy_file
from icelake.migrate.cpu_pool import MIN_MANIFESTS_FOR_PROCESSES, cpu_pool, rewrite_manifest_job
from icelake.migrate.delete_files import rewrite_delete_file
from icelake.migrate.models import MigrationResult, PrefixMapping
from icelake.migrate.plan import CopyTask, DeleteFileTask, TablePlan, build_plan, read_metadata
from icelake.migrate.progress import NoProgress, ProgressSink


@dataclass
class _Tally:
    copied: int = 0
    bytes_copied: int = 0
    rewritten: int = 0
    skipped: int = 0
    conflicts: list[str] = field(default_factory=list)
    lock: Lock = field(default_factory=Lock)

    def add(self, **kw: int) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)


def migrate_table(
    source_metadata: str,
    target_location: str,
    maps: Iterable[tuple[str, str]] = (),
    *,
    src_io: FileIO,
    dst_io: FileIO,
    dry_run: bool = False,
    overwrite: bool = False,
    workers: int = 16,
    processes: int | None = None,
    progress: ProgressSink | None = None,
    copy_settings: CopySettings | None = None,
) -> MigrationResult:
    """Make `target_location` hold the same table as `source_metadata`, with every path mapped."""
    started = time.monotonic()
    progress = progress or NoProgress()
    plan = build_plan(
        source_metadata,
        target_location,
        list(maps),
        src_io,
        dst_io,
        overwrite=overwrite,
        workers=workers,
        progress=progress,
    )
    tally = _Tally(skipped=plan.skipped_copies)
    if not dry_run:
        settings = copy_settings or CopySettings()
        cpus = processes if processes is not None else (os.cpu_count() or 1)
        _execute(plan, src_io, dst_io, overwrite, workers, cpus, progress, settings, tally)
    meta = plan.meta
    return MigrationResult(
        source_metadata_location=source_metadata,
        target_metadata_location=plan.target_metadata,
        table_uuid=mj.table_uuid(meta),
        format_version=meta["format-version"],
        dry_run=dry_run,
        prefix_mappings=[
            PrefixMapping(source=m.source, target=m.target, files=plan.prefix_counts.get(m.source, 0))
            for m in plan.prefix_map.mappings
        ],
        snapshots=len(meta.get("snapshots", [])),
        metadata_files=len(plan.metadata_files),
        files_planned=plan.files_planned,
        bytes_planned=plan.bytes_planned,
        files_copied=tally.copied if not dry_run else len(plan.copies),
        bytes_copied=tally.bytes_copied if not dry_run else sum(c.info.size for c in plan.copies),
        files_rewritten=tally.rewritten,
        files_skipped=tally.skipped,
        elapsed_seconds=round(time.monotonic() - started, 3),
    )


def _execute(
    plan: TablePlan,
    src_io: FileIO,
    dst_io: FileIO,
    overwrite: bool,
    workers: int,
    processes: int,
    progress: ProgressSink,
    settings: CopySettings,
    tally: _Tally,
) -> None:
    def guard(uri: str) -> None:
        if plan.prefix_map.under_any_source(uri):
            raise UnsafeTargetError(f"refusing to write {uri}: it is under a source prefix")

    def put(uri: str, data: bytes) -> None:
        """Write rewritten bytes unless the target already holds exactly them."""
        guard(uri)
        existing = dst_io.stat(uri)
        if existing is not None:
            if _same_bytes(dst_io, uri, existing, data):
                tally.add(skipped=1)
                return
            if not overwrite:
                with tally.lock:
                    tally.conflicts.append(uri)
                return
        dst_io.write(uri, data)
        tally.add(rewritten=1)

    def run(phase: str, items: list[object], fn: object) -> list[object]:
        progress.start(phase, len(items))

        def one(item: object) -> object:
            out = fn(item)  # type: ignore[operator]
            progress.advance(phase)
            return out

        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, items))

    # 1. Unchanged files, server-side where possible.
    def copy_one(task: object) -> None:
        assert isinstance(task, CopyTask)
        guard(task.target)
        copy_file(src_io, task.source, task.info, dst_io, task.target, settings)
        tally.add(copied=1, bytes_copied=task.info.size)

    run("copy files", list(plan.copies), copy_one)

    # 2. Delete files that name data files: rewritten, and what changed is remembered.
    delete_rewrites: dict[str, DeleteRewrite] = {}

    def rewrite_delete(task: object) -> None:
        assert isinstance(task, DeleteFileTask)
        data, result = rewrite_delete_file(
            task.source, src_io.read(task.source), task.file_format, plan.map_path
        )
        put(task.target, data)
        with tally.lock:
            delete_rewrites[task.source] = result

    run("rewrite delete files", list(plan.delete_files), rewrite_delete)

    # 3. Manifests, then the manifest lists that record their new lengths.
    new_lengths: dict[str, int] = {}

    use_processes = processes if len(plan.manifests) >= MIN_MANIFESTS_FOR_PROCESSES else 1
    with cpu_pool(use_processes) as pool:

        def rewrite_one_manifest(uri: object) -> None:
            assert isinstance(uri, str)
            raw = src_io.read(uri)
            # Only delete manifests need what rewriting the delete files changed.
            deletes = delete_rewrites if plan.manifests[uri].content != DATA else {}
            if pool is None:
                data = rewrite_manifest_job(uri, raw, plan.prefix_map, deletes)
            else:
                data = pool.submit(rewrite_manifest_job, uri, raw, plan.prefix_map, deletes).result()
            put(plan.map_path(uri), data)
            with tally.lock:
                new_lengths[uri] = len(data)

        run("rewrite manifests", list(plan.manifests), rewrite_one_manifest)

    def rewrite_one_list(uri: object) -> None:
        assert isinstance(uri, str)
        put(plan.map_path(uri), rewrite_manifest_list(uri, src_io.read(uri), plan.map_path, new_lengths))

    run("rewrite manifest lists", list(plan.manifest_lists), rewrite_one_list)

    if tally.conflicts:
        raise TargetConflictError(sorted(tally.conflicts))

    # 4. metadata.json files, oldest first, the current one last: it makes the table visible.
    kept_logs = set(plan.metadata_files)
    progress.start("rewrite metadata.json", len(plan.metadata_files))
    for uri in plan.metadata_files:
        meta, gz = (
            read_metadata(src_io, uri) if uri != plan.source_metadata else (plan.meta, plan.meta_gzipped)
        )
        rewritten = mj.rewrite_metadata(meta, plan.map_path, lambda p: p in kept_logs)
        put(plan.map_path(uri), mj.serialize_metadata(rewritten, gz))
        progress.advance("rewrite metadata.json")
    if tally.conflicts:
        raise TargetConflictError(sorted(tally.conflicts))


def _same_bytes(io: FileIO, uri: str, info: ObjectInfo, data: bytes) -> bool:
    if info.size != len(data):
        return False
    if info.sha256 and "-" not in info.sha256:
        return info.sha256 == sha256_b64(data)
    return io.read(uri) == data
