"""Counts the pools of worker processes a migration starts (`cpu_pool.cpu_pool`, which every
`CpuPools` goes through): one entry, its process count, per pool that started."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager

import pytest

from icelake.migrate.copy import cpu_pool


def count_pool_starts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    started: list[int] = []
    start_pool = cpu_pool.cpu_pool

    @contextmanager
    def counted(processes: int) -> Iterator[Executor | None]:
        with start_pool(processes) as pool:
            if pool is not None:  # None: the calling thread (one process, or none could start)
                started.append(processes)
            yield pool

    monkeypatch.setattr(cpu_pool, "cpu_pool", counted)
    return started
