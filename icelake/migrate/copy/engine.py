"""Run a migration: plan, copy unchanged files, rewrite files that hold paths, metadata.json last.

Write order makes every intermediate state safe: delete files and data first, then manifests,
manifest lists and finally the metadata.json files (current one last). Delete files go before the
bulk copy because they are read whole, so a damaged page is found before most bytes move (their
footers were already checked by the plan). Until that last write
the target has no metadata pointing at anything missing, so a run killed anywhere is resumed by
running it again (identical files are recognised and skipped).

The phases are written once (`_execute`) over a `Runner` that maps one step over many items:
threads of this process (`ThreadRunner`, used by `migrate_table`) or Spark executors
(`icelake.migrate.copy.distributed.SparkRunner`, used by the Glue job). A file job (`FileJobs`) does one
file and returns an `Outcome`; counts are summed from the outcomes where the work was started.
Manifest lists and metadata.json files are always written by the process that planned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Literal, Protocol, TypeVar

from icelake.aws.fileio import FileIO, FileIOSpec, ObjectInfo, remove_stale_temp_files, sha256_b64
from icelake.errors import TargetConflictError, UnsafeTargetError
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import DATA, DeleteRewrite, ManifestRef
from icelake.migrate.avro.patch import ListHeads, PlannedManifest
from icelake.migrate.check.record import COPY, Proof, RecordBuilder, checksum_text
from icelake.migrate.collisions import target_lock
from icelake.migrate.copy import requests
from icelake.migrate.copy.cpu_pool import (
    LISTS_PER_JOB,
    CpuPools,
    phase_pool,
    rewrite_manifest_job,
    rewrite_manifest_lists,
)
from icelake.migrate.copy.objects import CopySettings, copy_file_proved
from icelake.migrate.copy.streamed import write_object
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.migrate.delete_files import rewrite_delete_file
from icelake.migrate.models import MigrationResult, PrefixMapping
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.copies import CopyTask
from icelake.migrate.plan.model import DeleteFileTask, TablePlan
from icelake.migrate.plan.reads import fetch_metadata
from icelake.migrate.plan.target import refuse_other_table
from icelake.migrate.plan_scan import fetched_ahead, map_unordered
from icelake.migrate.progress import ProgressSink
from icelake.migrate.settings import DEFAULT_SETTINGS, EngineSettings
from icelake.uris import PrefixMap, is_local, parent

T = TypeVar("T")
R = TypeVar("R")


# Where the estimates and the Plan step have always found them.
migration_requests = requests.migration_requests
rewritten_files = requests.rewritten_files

IOLike = FileIO | FileIOSpec  # a FileIO here, or how to open one in another process


def open_io(io: IOLike) -> FileIO:
    return io if isinstance(io, FileIO) else io.open()


@dataclass(frozen=True)
class Outcome:
    """What one step did to one target file."""

    target: str
    status: Literal["copied", "written", "skipped", "conflict"]
    size: int  # bytes copied, or bytes of the rewritten file (whether written or not)
    verified: bool = False  # a copy whose bytes S3 checksummed equal to the source's
    proof: Proof | None = None  # what the copy record keeps of it (`check/record.py`)


# A manifest to rewrite, and where the plan found its paths when it is a data manifest it read.
ManifestTask = tuple[ManifestRef, PlannedManifest | None]


@dataclass(frozen=True)
class FileJobs:
    """One file of each phase. Picklable (for Spark executors) when `src` and `dst` are specs.

    `cpu` is where Avro encoding of manifests runs when not in the calling thread: worker
    processes of a local run. It is never shipped: executors rewrite in their own process.
    """

    src: IOLike
    dst: IOLike
    prefix_map: PrefixMap
    overwrite: bool = False
    settings: CopySettings = field(default_factory=CopySettings)
    cpu: Executor | None = None

    def guard(self, uri: str) -> None:
        if self.prefix_map.under_any_source(uri):
            raise UnsafeTargetError(f"refusing to write {uri}: it is under a source prefix")

    def put(self, uri: str, data: bytes, source: str = "", kind: str = "metadata") -> Outcome:
        """Write rewritten bytes unless the target already holds exactly them. `source`: the file
        they were rewritten from, and `kind` what it is, for the copy record (S3 checks the SHA-256
        the write sends on arrival, and keeps it)."""
        self.guard(uri)
        dst_io = open_io(self.dst)
        existing = dst_io.stat(uri)
        proof = Proof(uri, kind, len(data), None, f"SHA256:{sha256_b64(data)}", source)
        if existing is not None:
            if _same_bytes(dst_io, uri, existing, data):
                return Outcome(uri, "skipped", len(data), proof=proof)
            if not self.overwrite or is_table_storage(uri):  # S3 Tables' storage: never overwritten
                return Outcome(uri, "conflict", len(data))
        if not write_object(dst_io, uri, data):  # on S3 Tables' storage, written since the HEAD
            return self.put(uri, data, source, kind)
        return Outcome(uri, "written", len(data), proof=proof)

    def copy(self, task: CopyTask) -> Outcome:
        """An unchanged file, server-side where possible."""
        self.guard(task.target)
        info = task.info
        copied = copy_file_proved(
            open_io(self.src), task.source, info, open_io(self.dst), task.target, self.settings
        )
        proof = Proof(
            task.target,
            COPY,
            info.size,
            copied.etag,
            checksum_text(copied.checksum),
            task.source,
            info.size,
            info.etag,
            checksum_text(info.checksum),
        )
        return Outcome(task.target, "copied", info.size, copied.verified, proof)

    def rewrite_delete(self, task: DeleteFileTask) -> tuple[Outcome, DeleteRewrite]:
        """A delete file that names data files; what changed goes back into its manifest entries."""
        raw = open_io(self.src).read(task.source)
        data, result = rewrite_delete_file(task.source, raw, task.file_format, self.prefix_map.require)
        return self.put(task.target, data, task.source, "delete file"), result

    def rewrite_manifest(self, delete_rewrites: dict[str, DeleteRewrite], task: ManifestTask) -> Outcome:
        ref, planned = task
        raw = open_io(self.src).read(ref.path)
        # Only delete manifests need what rewriting the delete files changed.
        deletes = delete_rewrites if ref.content != DATA else {}
        args = (ref.path, raw, self.prefix_map, deletes, planned)
        data = (
            rewrite_manifest_job(*args)
            if self.cpu is None
            else self.cpu.submit(rewrite_manifest_job, *args).result()
        )
        kind = "data manifest" if ref.content == DATA else "delete manifest"
        return self.put(self.prefix_map.require(ref.path), data, ref.path, kind)

    def rewrite_manifest_lists(self, heads: ListHeads, uris: Sequence[str]) -> list[Outcome]:
        """A batch of manifest lists (LISTS_PER_JOB), rewritten in one job of `cpu` when given."""
        src_io = open_io(self.src)
        lists = [(uri, src_io.read(uri)) for uri in uris]
        rewritten = rewrite_manifest_lists(lists, self.prefix_map, heads, self.cpu)
        return [
            self.put(self.prefix_map.require(uri), data, uri, "manifest list")
            for uri, data in zip(uris, rewritten, strict=True)
        ]


class Runner(Protocol):
    """Maps one step over items. Exceptions of a step propagate."""

    def map(self, phase: str, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """The results, in item order."""
        ...

    def each(self, phase: str, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        """The results as they come, in no order, with a bounded number of items and results in
        memory at once whatever the number of items (a million copies)."""
        ...

    def cpu_pool(self, jobs: int) -> AbstractContextManager[Executor | None]:
        """Where `jobs` CPU-bound manifest rewrites run when not inside the step's own thread."""
        ...


class ThreadRunner:
    """Threads of this process; manifests are encoded in worker processes when there are many."""

    def __init__(
        self, workers: int, progress: ProgressSink, processes: int = 1, cpus: CpuPools | None = None
    ) -> None:
        self.workers = workers
        self.progress = progress
        self.processes = processes
        self.cpus = cpus  # the migration's worker processes, when it shares them between steps

    def map(self, phase: str, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        self.progress.start(phase, len(items))

        def one(item: T) -> R:
            out = fn(item)
            self.progress.advance(phase)
            return out

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(one, items))

    def map_batches(
        self, phase: str, fn: Callable[[Sequence[T]], list[R]], items: Sequence[T], size: int
    ) -> list[R]:
        """`fn` over runs of `size` items (in order), the progress counted in items."""
        self.progress.start(phase, len(items))

        def one(start: int) -> list[R]:
            out = fn(items[start : start + size])
            self.progress.advance(phase, len(out))
            return out

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return [r for batch in pool.map(one, range(0, len(items), size)) for r in batch]

    def each(self, phase: str, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        self.progress.start(phase, len(items))
        for out in map_unordered(fn, items, self.workers):
            self.progress.advance(phase)
            yield out

    def cpu_pool(self, jobs: int) -> AbstractContextManager[Executor | None]:
        return phase_pool(self.cpus, self.processes, jobs)


def migrate_table(
    source_metadata: str,
    target_location: str,
    maps: Iterable[tuple[str, str]] = (),
    *,
    src_io: FileIO,
    dst_io: FileIO,
    settings: EngineSettings = DEFAULT_SETTINGS,
) -> MigrationResult:
    """Make `target_location` hold the same table as `source_metadata`, with every path mapped,
    on this process's threads and worker processes; `settings` say how (`EngineSettings`: threads,
    processes, history, overwrite, dry run, ...)."""
    return run_migration(source_metadata, target_location, maps, src=src_io, dst=dst_io, settings=settings)


def run_migration(
    source_metadata: str,
    target_location: str,
    maps: Iterable[tuple[str, str]],
    *,
    src: IOLike,
    dst: IOLike,
    settings: EngineSettings = DEFAULT_SETTINGS,
    runner: Runner | None = None,
    on_planned: Callable[[TablePlan], None] | None = None,
) -> MigrationResult:
    """`migrate_table` with the copies and rewrites spread by `runner` (default: this process's
    threads and worker processes); planning, manifest lists and metadata.json files stay in this
    process (on `settings.workers` threads). `on_planned` sees the plan before anything is written
    (the workflow's Glue job journals what the copy creates). One pool of worker processes
    (`settings.migration_processes()`), started when a phase first has work enough for it, serves
    the plan and the rewrites."""
    started = time.monotonic()
    processes = settings.migration_processes()
    with CpuPools(processes) as cpus:
        driver = ThreadRunner(settings.workers, settings.progress, processes, cpus)
        plan = build_plan(
            source_metadata, target_location, maps, open_io(src), open_io(dst), settings=settings, cpus=cpus
        )
        outcomes: list[Outcome] = []
        copied = CopyTotals(record=settings.record)
        if not settings.dry_run:
            if on_planned is not None:
                on_planned(plan)
            jobs = FileJobs(src, dst, plan.prefix_map, settings.overwrite, settings.copy)
            outcomes = _write(
                plan, jobs, runner or driver, driver, copied, target_location, settings.lock_target
            )
            copied.record_all(outcomes)
    return _result(plan, settings.dry_run, outcomes, copied, time.monotonic() - started)


def _write(
    plan: TablePlan,
    jobs: FileJobs,
    runner: Runner,
    driver: ThreadRunner,
    copied: CopyTotals,
    target_location: str,
    lock: bool,
) -> list[Outcome]:
    """Carry out the plan: the rewritten files' outcomes; the copies are added up into `copied`."""
    dst_io = open_io(jobs.dst)
    # Planning only read; from here on the target is written, so hold it, and check again
    # under the lock that no other table landed there since the plan looked.
    # Not on S3 Tables' storage, which takes no delete (a lock could not be let go): its table is
    # the catalog's own, created for it, and its commits are guarded by their version token.
    locked = lock and not is_table_storage(target_location)
    with target_lock(dst_io, target_location, plan.source_metadata) if locked else nullcontext():
        refuse_other_table(dst_io, parent(plan.target_metadata), mj.table_uuid(plan.meta))
        for root in _written_local_roots(plan):  # a killed run's half-written temp files
            remove_stale_temp_files(root)
        return _execute(plan, jobs, runner, driver, copied)


def _written_local_roots(plan: TablePlan) -> list[str]:
    """Where a killed run may have left temp files that this one must clear: under every local
    target prefix; for an incremental sync, only the directories it writes into (a walk of the
    whole target would cost what the table holds)."""
    roots = [m.target for m in plan.prefix_map.mappings if is_local(m.target)]
    if plan.sync != "incremental" or not roots:
        return roots
    written = {parent(target) for _source, target in plan.copies.pairs()}
    written.update(parent(task.target) for task in plan.delete_files)
    return sorted({*written, parent(plan.target_metadata)})


def _result(
    plan: TablePlan, dry_run: bool, outcomes: list[Outcome], copied: CopyTotals, elapsed: float
) -> MigrationResult:
    if dry_run:  # what a run would copy
        files_copied, bytes_copied = len(plan.copies), sum(c.info.size for c in plan.copies)
    else:
        files_copied, bytes_copied = copied.files, copied.bytes
    files_verified = copied.verified + sum(o.verified for o in outcomes)
    meta = plan.meta
    return MigrationResult(
        source_metadata_location=plan.source_metadata,
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
        files_copied=files_copied,
        files_verified=files_verified,
        bytes_copied=bytes_copied,
        files_rewritten=sum(o.status == "written" for o in outcomes),
        files_skipped=plan.skipped_copies + sum(o.status == "skipped" for o in outcomes),
        elapsed_seconds=round(elapsed, 3),
        history=plan.history,
        orphans=plan.orphans,
        sync=plan.sync,
        sync_reason=plan.sync_reason,
    )


@dataclass
class CopyTotals:
    """What the copies did, added up as they finish: a million copies' outcomes are not kept."""

    files: int = 0
    bytes: int = 0
    verified: int = 0
    record: RecordBuilder | None = None  # where each written object's proof goes, if kept

    def add_all(self, outcomes: Iterable[Outcome]) -> None:
        for outcome in outcomes:
            assert outcome.status == "copied"  # a copy either is made or raises
            self.files += 1
            self.bytes += outcome.size
            self.verified += outcome.verified
            self.record_all((outcome,))

    def record_all(self, outcomes: Iterable[Outcome]) -> None:
        if self.record is not None:
            for outcome in outcomes:
                if outcome.proof is not None:
                    self.record.add(outcome.proof)


def _execute(
    plan: TablePlan, jobs: FileJobs, runner: Runner, driver: ThreadRunner, copied: CopyTotals
) -> list[Outcome]:
    """The rewritten files' outcomes; the copies are added up into `copied`."""
    # 1. Delete files that name data files: rewritten, and what changed is remembered. First,
    # because they are parsed whole: a damaged one stops the run before the bulk copy.
    deletes = runner.map("rewrite delete files", jobs.rewrite_delete, plan.delete_files)
    outcomes = [o for o, _ in deletes]
    delete_rewrites = {t.source: r for t, (_, r) in zip(plan.delete_files, deletes, strict=True)}

    # 2. Unchanged files, server-side where possible, every prefix busy from start to end.
    copied.add_all(runner.each("copy files", jobs.copy, plan.copies.spread_by_prefix()))

    # 3. Manifests, then (here) the manifest lists that record their new lengths.
    refs = list(plan.manifests.values())
    with runner.cpu_pool(len(refs)) as cpu:
        rewrite = partial(replace(jobs, cpu=cpu).rewrite_manifest, delete_rewrites)
        tasks = [(ref, plan.planned_manifests.get(ref.path)) for ref in refs]
        manifests = runner.map("rewrite manifests", rewrite, tasks)
    outcomes += manifests
    # A manifest the source no longer has keeps its recorded length in the lists carried over
    # (history all): the target's older version dangles there as the source's does.
    # An incremental plan's lists also name manifests the target holds already (`reused_lengths`).
    new_lengths = plan.absent_manifests | plan.reused_lengths
    new_lengths.update((ref.path, o.size) for ref, o in zip(refs, manifests, strict=True))
    logged = plan.metadata_files[:-1]
    # The lists and the logged metadata.json files are parsed in one pool of worker processes.
    with driver.cpu_pool(max(len(plan.manifest_lists), len(logged))) as cpu:
        lists = partial(
            replace(jobs, cpu=cpu).rewrite_manifest_lists, ListHeads(plan.prefix_map.require, new_lengths)
        )
        outcomes += driver.map_batches("rewrite manifest lists", lists, plan.manifest_lists, LISTS_PER_JOB)
        _refuse_conflicts(outcomes)

        # 4. metadata.json files, oldest first, the current one last: it makes the table visible.
        kept_logs = plan.kept_logs if plan.kept_logs is not None else frozenset(plan.metadata_files)
        progress = driver.progress
        progress.start("rewrite metadata.json", len(plan.metadata_files))
        for uri, data in rewritten_metadata_files(logged, open_io(jobs.src), plan.prefix_map, kept_logs, cpu):
            outcomes.append(jobs.put(plan.map_path(uri), data, uri))
            progress.advance("rewrite metadata.json")
    # Rewritten from its bytes, as the logged ones are (the plan kept only their parse).
    raw = fetch_metadata(open_io(jobs.src), plan.source_metadata)
    current = mj.rewrite_metadata_bytes(plan.source_metadata, raw, plan.map_path, kept_logs.__contains__)
    outcomes.append(jobs.put(plan.target_metadata, current, plan.source_metadata))
    progress.advance("rewrite metadata.json")
    _refuse_conflicts(outcomes)
    return outcomes


def rewritten_metadata_files(
    uris: Sequence[str], src_io: FileIO, prefix_map: PrefixMap, kept: frozenset[str], cpu: Executor | None
) -> Iterator[tuple[str, bytes]]:
    """(uri, its rewritten bytes) for each logged metadata.json, in order, read ahead on threads
    and rewritten in `cpu`'s worker processes when given: a table of a thousand snapshots has a
    thousand metadata files of up to a thousand snapshots each, and parsing JSON holds the GIL."""

    def rewrite(uri: str) -> bytes:
        data = src_io.parse_in(cpu, uri, mj.rewrite_file_job, prefix_map, kept)
        if data is None:  # redone here, where what is wrong is raised as icelake explains it
            data = mj.rewrite_metadata_bytes(
                uri, fetch_metadata(src_io, uri), prefix_map.require, kept.__contains__
            )
        return data

    return fetched_ahead(uris, rewrite)


def _refuse_conflicts(outcomes: list[Outcome]) -> None:
    conflicts = [o.target for o in outcomes if o.status == "conflict"]
    if conflicts:
        raise TargetConflictError(sorted(conflicts))


def _same_bytes(io: FileIO, uri: str, info: ObjectInfo, data: bytes) -> bool:
    if info.size != len(data):
        return False
    if info.sha256 and "-" not in info.sha256:
        return info.sha256 == sha256_b64(data)
    return io.read(uri) == data
