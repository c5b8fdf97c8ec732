"""Python's cyclic collector for a process that holds a large heap for a while.

At the default thresholds (700, 10, 10) a full collection walks every tracked object every few
thousand allocations, and its cost grows with the heap: an embedded AWS keeps about 750,000
objects alive (moto's backends, parsed state machines, botocore's models), and 25 full
collections took 8.3 s of test_migrate_workflow's 44 s; a verify of 100,000 files holds the copy
record and the manifests' entries while it parses a million listed keys. Roomier thresholds
collect the same garbage, less often.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

ROOMY_GC_THRESHOLDS = (50_000, 20, 20)  # gen0 allocations, then gen1 and gen2 in rounds of the one below


class _Holders:
    """How many blocks hold the roomy thresholds now, and what the thresholds were before them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.saved = gc.get_threshold()


_holders = _Holders()


@contextmanager
def roomy_gc() -> Iterator[None]:
    """The collector at `ROOMY_GC_THRESHOLDS` while any such block runs (threads may nest and
    overlap them), then at what it was before the first."""
    with _holders.lock:
        if _holders.count == 0:
            _holders.saved = gc.get_threshold()
            gc.set_threshold(*ROOMY_GC_THRESHOLDS)
        _holders.count += 1
    try:
        yield
    finally:
        with _holders.lock:
            _holders.count -= 1
            if _holders.count == 0:
                gc.set_threshold(*_holders.saved)
