"""The Glue job sizes its copies' threads per task from the table's prefix spread."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from icelake.migrate.copy.distributed import (
    MAX_COPY_THREADS_PER_TASK,
    MIN_COPY_THREADS_PER_TASK,
    SparkRunner,
    size_copies,
)
from icelake.migrate.plan.copies import Copies
from icelake.migrate.plan.model import TablePlan
from icelake.uris import PrefixMap


def _plan(counts: dict[str, int]) -> TablePlan:
    paths = [f"s3://src/t/data/{p}/{i}.parquet" for p, n in counts.items() for i in range(n)]
    copies = Copies(paths, dict.fromkeys(paths), PrefixMap([("s3://src/t", "s3://dst/t")]))
    return cast(TablePlan, SimpleNamespace(copies=copies))


def _runner(cores: int) -> SparkRunner:
    context: Any = SimpleNamespace(defaultParallelism=cores)
    return SparkRunner(context)


def test_threads_follow_the_prefix_spread_within_what_a_task_can_send() -> None:
    # All in one prefix: 140 copies in flight reach S3's 3,500 writes a second; over 50 cores,
    # 3 a task. Spread over many prefixes, far more would help than a task's process can send.
    assert size_copies(_runner(50), _plan({"only": 10})) == 3
    assert size_copies(_runner(1000), _plan({"only": 10})) == MIN_COPY_THREADS_PER_TASK
    assert size_copies(_runner(4), _plan({f"p{i}": 10 for i in range(50)})) == MAX_COPY_THREADS_PER_TASK
    runner = _runner(60)
    assert size_copies(runner, _plan({"hot": 30, "a": 35, "b": 35})) == 7  # 0.35: 400 in flight over 60 cores
    assert runner.copy_threads == 7 and runner.threads_per_task == 8  # other phases keep theirs
