"""The Glue job sizes its copies' threads per task from the table's prefix spread."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from icelake.migrate.copy.distributed import (
    MAX_COPY_THREADS_PER_TASK,
    MAX_STREAMED_THREADS_PER_TASK,
    MIN_COPY_THREADS_PER_TASK,
    SparkRunner,
    size_copies,
)
from icelake.migrate.plan.copies import Copies
from icelake.migrate.plan.model import TablePlan
from icelake.uris import PrefixMap


def _plan(counts: dict[str, int], target: str = "s3://dst/t") -> TablePlan:
    paths = [f"s3://src/t/data/{p}/{i}.parquet" for p, n in counts.items() for i in range(n)]
    copies = Copies(paths, dict.fromkeys(paths), PrefixMap([("s3://src/t", target)]))
    return cast(
        TablePlan, SimpleNamespace(copies=copies, target_metadata=f"{target}/metadata/1.metadata.json")
    )


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


def test_copies_streamed_into_s3_tables_storage_take_fewer_threads() -> None:
    # A copy into a table's storage is a GET and a PUT (twice a CopyObject's requests), and holds
    # its parts in the task's memory: all in one prefix, 280 in flight reach 3,500 writes a second,
    # 6 a task over 50 cores; spread over many prefixes, at most 8 a task.
    storage = "s3://0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b--table-s3"
    assert size_copies(_runner(50), _plan({"only": 10}, storage)) == 6
    assert (
        size_copies(_runner(4), _plan({f"p{i}": 10 for i in range(50)}, storage))
        == MAX_STREAMED_THREADS_PER_TASK
    )
