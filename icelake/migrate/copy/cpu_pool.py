"""Spread manifest rewrites over processes: Avro encoding is CPU-bound and holds the GIL.

Reading and writing stay on threads in the parent (they need the boto3 clients); only bytes go
to the worker processes and back. Where processes cannot be made (AWS Lambda has no
/dev/shm for the semaphores) the work runs in the calling thread instead.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from types import TracebackType

from icelake.migrate.avro.files import DeleteRewrite, rewrite_manifest, rewrite_manifest_list
from icelake.migrate.avro.patch import ListHeads, PlannedManifest
from icelake.uris import PrefixMap

# Starting a process costs a few hundred ms; below this many manifests threads alone are faster.
MIN_MANIFESTS_FOR_PROCESSES = 16


def rewrite_manifest_job(
    uri: str,
    data: bytes,
    prefix_map: PrefixMap,
    delete_rewrites: dict[str, DeleteRewrite],
    planned: PlannedManifest | None = None,
) -> bytes:
    """One manifest rewrite; a top-level function so that it can run in another process."""
    return rewrite_manifest(uri, data, prefix_map.require, prefix_map.map, delete_rewrites, planned)


# Manifest lists go to a worker process this many at a time: a job carries the manifests' new
# lengths once for all of them (a table's lists name the same manifests over and over: the new
# heads are encoded once a job), and a thousand lists are a few dozen jobs, not a thousand.
LISTS_PER_JOB = 32


def rewrite_manifest_lists(
    lists: Sequence[tuple[str, bytes]], prefix_map: PrefixMap, heads: ListHeads, cpu: Executor | None
) -> list[bytes]:
    """Each (uri, bytes) manifest list rewritten with `heads` (`rewrite_manifest_list`), in order:
    in one job of `cpu`'s worker processes when given, else here. A list a worker could not
    rewrite is rewritten here, where its error is raised as icelake explains it."""
    if cpu is None:
        return [rewrite_manifest_list(uri, data, heads) for uri, data in lists]
    done = cpu.submit(rewrite_manifest_lists_job, list(lists), prefix_map, heads.new_lengths).result()
    return [
        data if data is not None else rewrite_manifest_list(uri, raw, heads)
        for (uri, raw), data in zip(lists, done, strict=True)
    ]


def rewrite_manifest_lists_job(
    lists: list[tuple[str, bytes]], prefix_map: PrefixMap, new_lengths: dict[str, int]
) -> list[bytes | None]:
    """`rewrite_manifest_lists` in a worker process: None for a list it could not rewrite (errors
    do not cross processes intact)."""
    heads = ListHeads(prefix_map.require, new_lengths)
    out: list[bytes | None] = []
    for uri, data in lists:
        try:
            out.append(rewrite_manifest_list(uri, data, heads))
        except Exception:
            out.append(None)
    return out


PARENT_POLL_SECONDS = 0.5


def _die_with_parent(parent_pid: int) -> None:
    """Worker initializer: exit when the parent is gone (killed with -9, its pool never shut down),
    so no worker, and no resource_tracker waiting on the workers, outlives it holding its stdout."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="icelake-parent-watch", daemon=True).start()


@contextmanager
def cpu_pool(processes: int) -> Iterator[Executor | None]:
    if processes <= 1:
        yield None
        return
    try:
        pool = ProcessPoolExecutor(
            max_workers=processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_die_with_parent,
            initargs=(os.getpid(),),
        )
    except (OSError, NotImplementedError):
        yield None
        return
    with pool:
        yield pool


class CpuPools:
    """The worker processes of one migration: one pool, started by the first phase with work
    enough for it, used by every phase after it (the plan's scan and source check, the rewrites
    of manifests, manifest lists and metadata.json files), ended with the migration. Each start
    is a spawn, the imports and every pattern compiled again in each worker: about half a second
    and a core-second, which a big table paid three times (plan, manifests, lists)."""

    def __init__(self, processes: int) -> None:
        self._processes = processes
        self._stack = ExitStack()
        self._started = False
        self._pool: Executor | None = None

    def __enter__(self) -> CpuPools:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stack.close()

    def for_jobs(self, jobs: int) -> Executor | None:
        """The pool for a phase of `jobs` files, or None: that phase runs on this process's threads."""
        if self._processes <= 1 or jobs < MIN_MANIFESTS_FOR_PROCESSES:
            return None
        if not self._started:
            self._started = True
            self._pool = self._stack.enter_context(cpu_pool(self._processes))  # None where none can start
        return self._pool


def phase_pool(cpus: CpuPools | None, processes: int, jobs: int) -> AbstractContextManager[Executor | None]:
    """The worker processes for one phase of `jobs` files, or None (the phase's threads): the
    migration's `cpus` when it shares them, else a pool of `processes` of the phase's own, ended
    with it. Either way `CpuPools.for_jobs` decides whether the work is worth processes."""
    if cpus is not None:
        return nullcontext(cpus.for_jobs(jobs))
    return _own_pool(processes, jobs)


@contextmanager
def _own_pool(processes: int, jobs: int) -> Iterator[Executor | None]:
    with CpuPools(processes) as cpus:
        yield cpus.for_jobs(jobs)
