"""The migration on Spark executors: the same phases as `migrate_table`, spread over a cluster.

The driver plans (reads the metadata tree, checks source and target), then each parallel phase
(copy files, rewrite delete files, rewrite manifests) becomes one Spark job over the phase's
items: a task takes a slice of items and works through it on a few threads (the work is mostly
waiting on S3). Executors open their own FileIO from a `FileIOSpec` (boto3 in the executor; S3
to S3 copies are server-side, so the bytes of data files never pass through Spark). Only small
results come back: one `Outcome` per file, and what rewriting a delete file changed. Manifest
lists and metadata.json files are written by the driver, last.

Every step is idempotent, so a task that Spark retries ends in the same target state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any, TypeVar

from icelake.aws.fileio import FileIOSpec
from icelake.aws.session import assume_role_session
from icelake.migrate.copy import CopySettings
from icelake.migrate.engine import ThreadRunner, run_migration
from icelake.migrate.models import MigrationResult
from icelake.migrate.progress import NoProgress, ProgressSink

T = TypeVar("T")
R = TypeVar("R")

THREADS_PER_TASK = 8  # concurrent S3 calls per Spark task (copies mostly wait on S3)
SLICES_PER_CORE = 3  # tasks per executor core and phase: small enough slices to balance load


def executor_spec(
    uri: str, role_arn: str | None = None, *, session_name: str = "icelake", kms_key_id: str | None = None
) -> FileIOSpec:
    """The FileIO spec for `uri`, acting as `role_arn` (assumed here, on the driver) if given.

    Executors get the role's temporary credentials, not the right to assume it; without a role
    they use their own default credential chain (the Glue job's role).
    """
    session = assume_role_session(role_arn, session_name=session_name) if role_arn else None
    return FileIOSpec.for_uri(uri, session, kms_key_id)


def _run_slice(fn: Callable[[T], R], threads: int, items: Iterable[T]) -> Iterator[R]:
    """One Spark task: its slice of items, on a few threads, results in order."""
    return iter(ThreadRunner(threads, NoProgress()).map("slice", fn, list(items)))


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
        self.slices = slices or SLICES_PER_CORE * int(spark_context.defaultParallelism)

    def map(self, phase: str, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        self.progress.start(phase, len(items))
        if not items:
            return []
        self.sc.setJobDescription(f"icelake: {phase} ({len(items)} files)")  # names the job in the UI
        try:
            rdd = self.sc.parallelize(list(items), min(self.slices, len(items)))
            out: list[R] = rdd.mapPartitions(partial(_run_slice, fn, self.threads_per_task)).collect()
        finally:
            self.sc.setJobDescription(None)
        self.progress.advance(phase, len(items))
        return out

    def cpu_pool(self, jobs: int) -> AbstractContextManager[Executor | None]:
        return nullcontext(None)  # each executor core rewrites its own manifests


def migrate_table_on_spark(
    spark: Any,
    source_metadata: str,
    target_location: str,
    maps: Iterable[tuple[str, str]] = (),
    *,
    src: FileIOSpec,
    dst: FileIOSpec,
    dry_run: bool = False,
    overwrite: bool = False,
    workers: int = 16,
    progress: ProgressSink | None = None,
    copy_settings: CopySettings | None = None,
) -> MigrationResult:
    """`migrate_table` with copies and delete/manifest rewrites on the executors of `spark`.

    Produces the same target files, byte for byte, and the same counts as `migrate_table`.
    `workers` are the driver's threads for planning and for the manifest lists.
    """
    return run_migration(
        source_metadata,
        target_location,
        maps,
        src=src,
        dst=dst,
        runner=SparkRunner(spark.sparkContext, progress),
        dry_run=dry_run,
        overwrite=overwrite,
        workers=workers,
        progress=progress,
        copy_settings=copy_settings,
    )
