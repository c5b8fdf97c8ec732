"""The migration on Spark executors: the same phases as `migrate_table`, spread over a cluster
(`run_migration(..., runner=SparkRunner(spark.sparkContext))`, with `FileIOSpec`s for both sides:
same target bytes and same counts as `migrate_table`).

The driver plans (reads the metadata tree, checks source and target), then each parallel phase
(rewrite delete files, rewrite manifests) becomes one Spark job over the phase's items, and the
copies one job per `ITEMS_PER_JOB` files: a task takes a slice of items and works through it on
a few threads (the work is mostly waiting on S3). Executors open their own FileIO from a
`FileIOSpec` (boto3 in the executor; S3 to S3 copies are server-side, so the bytes of data files
never pass through Spark). Only small results come back: one `Outcome` per file (the copies'
added up as each job ends), and what rewriting a delete file changed. Manifest lists and
metadata.json files are written by the driver, last.

Every step is idempotent, so a task that Spark retries ends in the same target state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any, TypeVar

from icelake.aws.fileio import FileIOSpec
from icelake.aws.fileio.spec import OPENED_REQUESTS
from icelake.aws.request_count import added, subtracted, zero
from icelake.aws.session import AssumedRole
from icelake.migrate.copy.engine import ThreadRunner
from icelake.migrate.copy.schedule import REQUEST_S, copy_concurrency
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.progress import NoProgress, ProgressSink

T = TypeVar("T")
R = TypeVar("R")

THREADS_PER_TASK = 8  # concurrent S3 calls per Spark task (copies mostly wait on S3)
# Copies per task at most: botocore spends about 2.7 ms of CPU on each request (measured against
# the S3 model), so one task's process (one core, one GIL) sends at most ~370 requests a second,
# which 16 threads waiting ~40 ms on S3 each already ask of it.
MAX_COPY_THREADS_PER_TASK = 16
MIN_COPY_THREADS_PER_TASK = 2
# Copies streamed through the executor (S3 Tables' storage) hold up to two parts each (64 MiB by
# default, CopySettings): 8 a task is 512 MiB of a task's memory, and a worker's bandwidth, not
# its threads, bounds them (ThroughputModel.glue_worker_stream_mib_per_s).
MAX_STREAMED_THREADS_PER_TASK = 8
SLICES_PER_CORE = 3  # tasks per executor core and phase: small enough slices to balance load
# Items of a phase run as one Spark job when the results are only added up (copies): a job costs
# a second or so to start, and its items and results are held by the driver while it runs.
ITEMS_PER_JOB = 100_000


def executor_spec(uri: str, role: AssumedRole | None = None, *, kms_key_id: str | None = None) -> FileIOSpec:
    """The FileIO spec for `uri`, acting as `role` if given.

    Each process that opens the spec (the driver and every executor) assumes the role itself and
    refreshes its credentials before they expire, so a copy may outlast any one STS session; the
    Glue job's role must be allowed to assume it. Without a role, each process uses its own
    default credential chain (the Glue job's role). Each bucket's requests go to its own region
    (a copy to the target bucket's), so source and target may be in different regions.
    """
    return FileIOSpec.for_uri(uri, kms_key_id=kms_key_id, role=role, regional=True)


class RequestCounts:
    """A Spark accumulator's arithmetic for S3 request counts by kind (`request_count`); Spark
    pickles it to the executors by reference, so it needs no import of pyspark here."""

    def zero(self, _value: dict[str, int]) -> dict[str, int]:
        return zero()

    def addInPlace(self, total: dict[str, int], more: dict[str, int]) -> dict[str, int]:
        return added(total, more)


def _run_slice(fn: Callable[[T], R], threads: int, requests: Any, items: Iterable[T]) -> Iterator[R]:
    """One Spark task: its slice of items, on a few threads, results in order; the S3 requests
    they sent are added to the job's `requests` accumulator (a Python worker runs one task at a
    time, so what its FileIOs counted meanwhile is this task's)."""
    before = OPENED_REQUESTS.counts()
    out = ThreadRunner(threads, NoProgress()).map("slice", fn, list(items))
    requests.add(subtracted(OPENED_REQUESTS.counts(), before))
    return iter(out)


class SparkRunner:
    """Runs each phase as one Spark job; `fn` and the items are pickled to the executors."""

    def __init__(
        self,
        spark_context: Any,
        progress: ProgressSink | None = None,
        *,
        threads_per_task: int = THREADS_PER_TASK,
        slices: int | None = None,
    ) -> None:
        self.sc = spark_context
        self.progress = progress or NoProgress()
        self.threads_per_task = threads_per_task
        self.copy_threads = threads_per_task  # the copies' threads per task (`size_copies`)
        self.slices = slices or SLICES_PER_CORE * int(spark_context.defaultParallelism)
        self._requests: Any = None  # the jobs' accumulator of S3 requests, made with the first job

    @property
    def requests(self) -> dict[str, int]:
        """The S3 requests the executors sent for this runner's jobs, by kind (retried tasks'
        again, as S3 bills them)."""
        return dict(self._requests.value) if self._requests is not None else zero()

    def map(self, phase: str, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        self.progress.start(phase, len(items))
        if not items:
            return []
        out = self._run(phase, fn, items)
        self.progress.advance(phase, len(items))
        return out

    def each(self, phase: str, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        """One Spark job per batch of `ITEMS_PER_JOB`: the driver holds one batch's items and
        results at a time (a million copies' outcomes collected at once would not fit it)."""
        self.progress.start(phase, len(items))
        for start in range(0, len(items), ITEMS_PER_JOB):
            batch = items[start : start + ITEMS_PER_JOB]
            yield from self._run(phase, fn, batch, self.copy_threads)
            self.progress.advance(phase, len(batch))

    def _run(
        self, phase: str, fn: Callable[[T], R], items: Sequence[T], threads: int | None = None
    ) -> list[R]:
        self.sc.setJobDescription(f"icelake: {phase} ({len(items)} files)")  # names the job in the UI
        try:
            rdd = self.sc.parallelize(list(items), min(self.slices, len(items)))
            per_task = threads or self.threads_per_task
            if self._requests is None:
                self._requests = self.sc.accumulator(zero(), RequestCounts())
            out: list[R] = rdd.mapPartitions(partial(_run_slice, fn, per_task, self._requests)).collect()
        finally:
            self.sc.setJobDescription(None)
        return out

    def cpu_pool(self, jobs: int) -> AbstractContextManager[Executor | None]:
        return nullcontext(None)  # each executor core rewrites its own manifests


def size_copies(runner: SparkRunner, plan: TablePlan) -> int:
    """Set the copies' threads per task from the table's prefix spread: as many copies in flight,
    over all the cores, as take the busiest prefix to S3's rate (`copy_schedule.copy_concurrency`),
    within what a task's process can send. Returns the threads per task."""
    _, share = plan.copies.prefix_spread()
    streamed = is_table_storage(plan.target_metadata)  # a GET and a PUT a copy, not a CopyObject
    wanted = copy_concurrency(share, seconds_per_copy=2 * REQUEST_S if streamed else None)
    cores = max(1, int(runner.sc.defaultParallelism))
    per_task = -(-wanted // cores)
    most = MAX_STREAMED_THREADS_PER_TASK if streamed else MAX_COPY_THREADS_PER_TASK
    runner.copy_threads = max(MIN_COPY_THREADS_PER_TASK, min(most, per_task))
    return runner.copy_threads
