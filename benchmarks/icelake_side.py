"""icelake's side of the benchmark: the metadata rewrite alone, and the plan, on a synthetic table.

`migrate_table` would copy the synthetic table's data files, which exist only as sparse files
(their recorded size, no bytes). So this module does, with the same public
functions `icelake.migrate.copy.engine._execute` uses, exactly the work `rewrite_table_path` does:

* rewrite every manifest (one at a time: read, map, write, remember its new length),
* rewrite every manifest list (with the new manifest lengths),
* rewrite every metadata.json in the log and the current one (oldest first, current last),
* write the list of files to copy (data files: source -> target; rewritten files: staged -> target)

into a staging directory that mirrors the target layout. Nothing but the list of manifests, their
new lengths and the current metadata is kept in memory; the file list is streamed to disk.

`measure_plan` runs icelake's real `build_plan` on the table (the planning pass a real migration
does before the rewrite), counting the requests S3 would be sent for its reads, HEADs and listings.
"""

from __future__ import annotations

import csv
import itertools
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

from icelake.aws.fileio import FileIO, ListedRange, LocalFileIO, ObjectInfo
from icelake.errors import UnsafeTargetError
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import (
    POSITION_DELETES,
    ManifestRef,
    manifest_refs,
    rewrite_manifest,
)
from icelake.migrate.avro.patch import ListHeads, PlannedManifest
from icelake.migrate.copy.cpu_pool import LISTS_PER_JOB, CpuPools, phase_pool, rewrite_manifest_lists
from icelake.migrate.copy.engine import rewritten_metadata_files
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.plan.reads import fetch_metadata
from icelake.migrate.progress import NoProgress
from icelake.migrate.settings import EngineSettings
from icelake.uris import PrefixMap, canonical, local_path, target_spelling

R = TypeVar("R")


@dataclass
class RewriteResult:
    metadata_files: int = 0
    manifest_lists: int = 0
    manifests: int = 0
    data_files: int = 0  # lines of the file list that are data files to copy
    bytes_written: int = 0
    file_list: str = ""
    target_metadata: str = ""  # the rewritten current metadata.json, as the target will name it
    staged_metadata: str = ""  # where it was written
    seconds: float = 0.0
    phase_seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# A field csv.writer (excel dialect, QUOTE_MINIMAL) quotes: one holding the delimiter, the quote
# character or a line-terminator character.
_QUOTED = re.compile(r'[,"\r\n]')
_ROWS_PER_WRITE = 10_000


def write_csv_rows(fh: TextIO, rows: Iterable[tuple[str, str]]) -> None:
    """`csv.writer(fh).writerows(rows)`, byte for byte, for rows of two strings: a run of rows none
    of whose fields needs quoting is written as `a,b\r\n` lines joined at once. The csv module
    took 8 s for the million rows of a big table's file list (about 8 us a row), a regular
    expression per field 2 s; a run is checked by counting its commas, quotes and line ends."""
    quoting = csv.writer(fh)
    rows = iter(rows)
    while run := list(itertools.islice(rows, _ROWS_PER_WRITE)):
        text = "\r\n".join(map(",".join, run)) + "\r\n"
        n = len(run)
        if text.count(",") == n and text.count("\n") == n and text.count("\r") == n and '"' not in text:
            fh.write(text)  # one comma and one line end a row: no field holds either, nor a quote
            continue
        for a, b in run:
            if _QUOTED.search(a) or _QUOTED.search(b):
                quoting.writerow((a, b))
            else:
                fh.write(f"{a},{b}\r\n")


def staging_path(target_uri: str, target_root: str, staging_dir: str) -> str:
    """Where the rewritten file for `target_uri` is staged: same relative path under `staging_dir`."""
    rel = canonical(target_uri)[len(canonical(target_root)) :]
    return str(Path(staging_dir).resolve()) + rel


def rewrite_and_list(uri: str, data: bytes, prefix_map: PrefixMap) -> tuple[bytes, list[tuple[str, str]]]:
    """The engine's manifest job, also returning the data-file paths it mapped (for the file list)."""
    mapped_paths: list[tuple[str, str]] = []
    data = rewrite_manifest(uri, data, _recording(prefix_map.require, mapped_paths), prefix_map.map, {})
    return data, mapped_paths


def rewrite_only(
    uri: str, data: bytes, prefix_map: PrefixMap, planned: PlannedManifest | None = None
) -> tuple[bytes, list[tuple[str, str]]]:
    """The engine's manifest job (the file list's data files come from the plan, and where the
    plan found a manifest's paths, as the engine's rewrite is given it)."""
    return rewrite_manifest(uri, data, prefix_map.require, prefix_map.map, {}, planned), []


def _discover(
    src_io: FileIO, source_metadata: str, meta: mj.Metadata
) -> tuple[list[str], list[str], dict[str, ManifestRef]]:
    """(metadata files, manifest lists, manifests) to rewrite, without a plan."""
    logged = mj.metadata_log(meta)
    metadata_files = [p for p in logged if src_io.stat(p) is not None] + [source_metadata]
    lists = mj.manifest_lists(meta)
    manifests: dict[str, ManifestRef] = {}
    for uri in lists:
        for ref in manifest_refs(uri, src_io.read(uri)):
            manifests.setdefault(ref.path, ref)
    return metadata_files, lists, manifests


def rewrite_table_metadata(
    source_metadata: str,
    target_location: str,
    staging_dir: str,
    processes: int | None = None,
    plan: TablePlan | None = None,
    cpus: CpuPools | None = None,
) -> RewriteResult:
    """Rewrite all metadata of the table at `source_metadata` for `target_location` into
    `staging_dir`; with its `plan` (from `plan_table`), what to rewrite and copy is the plan's.
    `cpus`: the worker processes the plan used, kept for the rewrite (as `migrate_table` keeps
    them); else each step starts its own."""
    started = time.monotonic()
    processes = processes or os.cpu_count() or 1
    src_io: FileIO = LocalFileIO()
    dst_io: FileIO = LocalFileIO()
    result = RewriteResult()
    current = fetch_metadata(src_io, source_metadata)  # rewritten last, in step 4
    meta, _gz = mj.parse_metadata(source_metadata, current)
    prefix_map = PrefixMap([(meta["location"], target_location)])
    target_root = target_spelling(target_location)

    map_path = prefix_map.require

    Path(staging_dir).mkdir(parents=True, exist_ok=True)
    list_path = Path(staging_dir).resolve() / "file-list.csv"
    result.file_list = str(list_path)
    with list_path.open("w", newline="") as fh:
        file_list = csv.writer(fh)

        def put(target_uri: str, data: bytes) -> None:
            """Stage rewritten bytes (as `_execute`'s put does while the target is still empty)."""
            staged = staging_path(target_uri, target_root, staging_dir)
            if prefix_map.under_any_source(staged):
                raise UnsafeTargetError(f"refusing to write {staged}: it is under a source prefix")
            if dst_io.stat(staged) is not None:
                raise UnsafeTargetError(f"{staged} exists: the staging directory must start empty")
            dst_io.write(staged, data)
            result.bytes_written += len(data)
            file_list.writerow([staged, target_uri])

        # 1. What to rewrite: the metadata chain, the manifest lists of the live snapshots and the
        #    manifests they name (each once). Given the plan, as `icelake migrate` rewrites after
        #    planning: its lists, and the data files to copy onto the file list from its copies.
        t0 = time.monotonic()
        if plan is not None:
            metadata_files, lists, manifests = plan.metadata_files, plan.manifest_lists, plan.manifests
            write_csv_rows(fh, plan.copies.pairs())
            result.data_files = len(plan.copies)
        else:
            metadata_files, lists, manifests = _discover(src_io, source_metadata, meta)
        if any(ref.content == POSITION_DELETES for ref in manifests.values()) or mj.inline_manifests(meta):
            raise NotImplementedError("the benchmark harness handles data manifests of v2 tables only")
        t1 = time.monotonic()

        # 2. Manifests, spread over worker processes as the engine does (`phase_pool`); every
        #    data-file path mapped goes to the file list.
        new_lengths: dict[str, int] = {}
        with (
            phase_pool(cpus, processes, len(manifests)) as pool,
            ThreadPoolExecutor(max_workers=2 * processes) as io_pool,
        ):
            job = rewrite_and_list if plan is None else rewrite_only
            planned = {} if plan is None else plan.planned_manifests

            def one(uri: str) -> tuple[str, bytes, list[tuple[str, str]]]:
                raw = src_io.read(uri)
                args = (uri, raw, prefix_map) if plan is None else (uri, raw, prefix_map, planned.get(uri))
                if pool is None:
                    return (uri, *job(*args))
                return (uri, *pool.submit(job, *args).result())

            for uri, data, mapped_paths in io_pool.map(one, manifests):
                put(map_path(uri), data)
                new_lengths[uri] = len(data)
                write_csv_rows(fh, mapped_paths)
                result.data_files += len(mapped_paths)
        t2 = time.monotonic()

        with phase_pool(cpus, processes, max(len(lists), len(metadata_files))) as pool:
            # 3. Manifest lists, with the new manifest lengths, in batches in worker processes as
            #    the engine rewrites them (`rewrite_manifest_lists`).
            heads = ListHeads(map_path, new_lengths)
            for uri, data in _rewritten_lists(lists, src_io, prefix_map, heads, pool, 2 * processes):
                put(map_path(uri), data)
            t3 = time.monotonic()

            # 4. metadata.json files, oldest first (rewritten in worker processes as the engine
            #    does), the current one last.
            kept = frozenset(metadata_files)
            for uri, data in rewritten_metadata_files(metadata_files[:-1], src_io, prefix_map, kept, pool):
                put(map_path(uri), data)
        put(
            map_path(source_metadata),
            mj.rewrite_metadata_bytes(source_metadata, current, map_path, kept.__contains__),
        )
        t4 = time.monotonic()

    result.metadata_files = len(metadata_files)
    result.manifest_lists = len(lists)
    result.manifests = len(manifests)
    result.target_metadata = map_path(source_metadata)
    result.staged_metadata = staging_path(result.target_metadata, target_root, staging_dir)
    result.phase_seconds = {
        "discover": round(t1 - t0, 3),
        "manifests": round(t2 - t1, 3),
        "manifest_lists": round(t3 - t2, 3),
        "metadata_json": round(t4 - t3, 3),
    }
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _rewritten_lists(
    lists: list[str],
    src_io: FileIO,
    prefix_map: PrefixMap,
    heads: ListHeads,
    pool: Executor | None,
    threads: int,
) -> Iterator[tuple[str, bytes]]:
    """(uri, rewritten bytes) of every manifest list, in order, LISTS_PER_JOB to a job."""

    def rewrite(start: int) -> list[tuple[str, bytes]]:
        uris = lists[start : start + LISTS_PER_JOB]
        batch = [(uri, src_io.read(uri)) for uri in uris]
        return list(zip(uris, rewrite_manifest_lists(batch, prefix_map, heads, pool), strict=True))

    with ThreadPoolExecutor(max_workers=threads) as io_pool:
        for batch in io_pool.map(rewrite, range(0, len(lists), LISTS_PER_JOB)):
            yield from batch


def _recording(map_path: Callable[[str], str], into: list[tuple[str, str]]) -> Callable[[str], str]:
    """`map_path` that also remembers what it mapped.

    In a data manifest, `rewrite_manifest` maps exactly one path per entry, its `file_path`: the
    recorded pairs are the data files to copy (the synthetic table has no deleted entries).
    """

    def mapped(uri: str) -> str:
        out = map_path(uri)
        into.append((uri, out))
        return out

    return mapped


class RequestCountingIO(LocalFileIO):
    """LocalFileIO that counts the requests S3 would be sent for the same calls: a HEAD per stat, a
    GET per read, a LIST per 1,000 keys listed (at least one per listing). `latency_s` is waited
    out on each request, as S3's time to first byte would be (local files answer at once, which
    hides whether the requests wait one after another)."""

    def __init__(self, latency_s: float = 0.0) -> None:
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._latency_s = latency_s
        self.listing_waits = latency_s > 0  # lists as S3 would be listed when its pages wait

    def _count(self, kind: str) -> None:
        with self._lock:
            self.requests[kind] += 1
        if self._latency_s:
            time.sleep(self._latency_s)

    def stat(self, uri: str) -> ObjectInfo | None:
        self._count("HEAD")
        return super().stat(uri)

    def read(self, uri: str) -> bytes:
        self._count("GET")
        return super().read(uri)

    def read_tail(self, uri: str, nbytes: int) -> bytes:
        self._count("GET")
        return super().read_tail(uri, nbytes)

    def parse_in(self, cpu: Executor | None, uri: str, job: Callable[..., R], *args: Any) -> R | None:
        if cpu is not None:
            self._count("GET")  # read in the worker process (here, `read` counts it)
        return super().parse_in(cpu, uri, job, *args)

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        listed = 0
        for item in super().list(prefix, start_after):
            if listed % 1000 == 0:
                self._count("LIST")
            listed += 1
            yield item
        if listed == 0:
            self._count("LIST")

    def list_range(
        self, prefix: str, start_after: str | None, until: str, cpu: Executor | None = None
    ) -> Iterable[tuple[str, ObjectInfo]]:
        if cpu is None:  # listed by `list`, which counts
            return super().list_range(prefix, start_after, until, cpu)
        listed = super().list_range(prefix, start_after, until, cpu)  # walked in a worker process
        assert isinstance(listed, ListedRange)
        for _page in range(max(1, -(-len(listed.keys) // 1000))):
            self._count("LIST")
        return listed


@dataclass
class PlanResult:
    seconds: float
    metadata_files: int
    manifest_lists: int
    manifests: int
    copies: int
    files_planned: int
    source_requests: dict[str, int]
    target_requests: dict[str, int]


def measure_plan(
    source_metadata: str, target_location: str, workers: int = 16, latency_s: float = 0.0
) -> PlanResult:
    """icelake's own `build_plan` (the planning pass of `migrate_table`) on the synthetic table,
    whose data files exist (sparse); the requests it would send to S3 are counted per side."""
    return plan_table(source_metadata, target_location, workers, latency_s)[0]


def plan_table(
    source_metadata: str,
    target_location: str,
    workers: int = 16,
    latency_s: float = 0.0,
    cpus: CpuPools | None = None,
) -> tuple[PlanResult, TablePlan]:
    """`measure_plan`'s figures, and the plan itself (for the rewrite that follows it). `cpus`:
    worker processes to plan with and keep for the rewrite, as `migrate_table` does."""
    Path(local_path(target_location)).mkdir(parents=True, exist_ok=True)
    src_io, dst_io = RequestCountingIO(latency_s), RequestCountingIO(latency_s)
    started = time.monotonic()
    plan = build_plan(
        source_metadata,
        target_location,
        [],
        src_io,
        dst_io,
        settings=EngineSettings(
            overwrite=False, workers=workers, progress=NoProgress(), processes=os.cpu_count() or 1
        ),
        cpus=cpus,
    )
    figures = PlanResult(
        seconds=round(time.monotonic() - started, 3),
        metadata_files=len(plan.metadata_files),
        manifest_lists=len(plan.manifest_lists),
        manifests=len(plan.manifests),
        copies=len(plan.copies),
        files_planned=plan.files_planned,
        source_requests=dict(src_io.requests),
        target_requests=dict(dst_io.requests),
    )
    return figures, plan
