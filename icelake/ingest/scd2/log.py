"""The commit log: which batches the table's snapshots record (batch id and as-of time in each
MERGE's snapshot summary), the newest merged time, and how a commit is given those properties."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from icelake.ingest.scd2.names import BATCH_AS_OF_PROPERTY, BATCH_ID_PROPERTY, VALID_FROM, VALID_TO, q, qtable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")


@dataclass(frozen=True)
class CommitLog:
    """What the table's live snapshots and rows say about merged batches."""

    batch_ids: frozenset[str]
    high_water: datetime | None  # newest as-of of any merged batch


def batch_commits(spark: SparkSession, table: str) -> dict[str, datetime | None]:
    """The batches the table's live snapshot summaries record: batch id -> its as-of time."""
    rows = spark.sql(
        f"SELECT summary['{BATCH_ID_PROPERTY}'] AS b, summary['{BATCH_AS_OF_PROPERTY}'] AS t "
        f"FROM {qtable(table)}.snapshots WHERE summary['{BATCH_ID_PROPERTY}'] IS NOT NULL"
    ).collect()
    return {str(r["b"]): datetime.fromisoformat(str(r["t"])) if r["t"] else None for r in rows}


def commit_log(spark: SparkSession, table: str) -> CommitLog:
    commits = batch_commits(spark, table)
    ids = frozenset(commits)
    times = [t for t in commits.values() if t is not None]
    if not times:
        # Every batch snapshot has expired (or none was ever made): the rows still carry the times.
        data = spark.sql(
            f"SELECT max(unix_micros({q(VALID_FROM)})) AS f, max(unix_micros({q(VALID_TO)})) AS t "
            f"FROM {qtable(table)}"
        ).collect()[0]
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        times = [epoch + timedelta(microseconds=int(v)) for v in (data["f"], data["t"]) if v is not None]
    return CommitLog(ids, max(times) if times else None)


def with_commit_properties(spark: SparkSession, properties: dict[str, str], action: Callable[[], T]) -> T:
    """Run `action` so that every Iceberg commit it makes carries `properties` in its snapshot summary.

    Iceberg's CommitMetadata.withCommitProperties keeps them in a JVM thread-local; PySpark's pinned
    py4j threads run the Python callback's own JVM calls on that same thread.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    sc = spark.sparkContext
    ensure_callback_server_started(sc._gateway)  # type: ignore[no-untyped-call]
    jvm: Any = sc._jvm
    jprops = jvm.java.util.HashMap()
    for key, value in properties.items():
        jprops.put(key, value)

    class _Call:
        def __init__(self) -> None:
            self.result: Any = None
            self.error: BaseException | None = None

        def call(self) -> None:
            try:
                self.result = action()
            except BaseException as exc:  # re-raised on the Python side, not through py4j
                self.error = exc

        class Java:
            implements = ["java.util.concurrent.Callable"]  # noqa: RUF012

    call = _Call()
    runtime_exception = jvm.java.lang.Class.forName("java.lang.RuntimeException")
    jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(jprops, call, runtime_exception)
    if call.error is not None:
        raise call.error
    result: T = call.result
    return result
