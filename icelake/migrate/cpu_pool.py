"""Spread manifest rewrites over processes: Avro encoding is CPU-bound and holds the GIL.

Reading and writing stay on threads in the parent (they need the boto3 clients); only bytes go
to the worker processes and back. Where processes cannot be made (AWS Lambda has no
/dev/shm for the semaphores) the work runs in the calling thread instead.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager

from icelake.migrate.avro_files import DeleteRewrite, rewrite_manifest
from icelake.uris import PrefixMap

# Starting a process costs a few hundred ms; below this many manifests threads alone are faster.
MIN_MANIFESTS_FOR_PROCESSES = 16


def rewrite_manifest_job(
    uri: str, data: bytes, prefix_map: PrefixMap, delete_rewrites: dict[str, DeleteRewrite]
) -> bytes:
    """One manifest rewrite; a top-level function so that it can run in another process."""
    return rewrite_manifest(uri, data, prefix_map.require, prefix_map.map, delete_rewrites)


@contextmanager
def cpu_pool(processes: int) -> Iterator[Executor | None]:
    if processes <= 1:
        yield None
        return
    try:
        pool = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"))
    except (OSError, NotImplementedError):
        yield None
        return
    with pool:
        yield pool
