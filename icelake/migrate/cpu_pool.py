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
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager

from icelake.migrate.avro_files import DeleteRewrite, rewrite_manifest
from icelake.migrate.avro_patch import PlannedManifest
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
