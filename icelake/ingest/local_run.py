"""Run the deployed ingestion state machine once and summarise what it did to the SCD2 table."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from icelake.ingest.models import FetchConfig, Pagination, RetryPolicy, Scd2Spec
from icelake.ingest.scd2 import (
    IS_CURRENT,
    IS_DELETED,
    VALID_FROM,
    VALID_TO,
    batch_commits,
    q,
    qtable,
    table_exists,
    ts_literal,
)
from icelake.local.embedded import ExecutionResult, run_execution

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

API_SECRET = "icelake-demo/api-token"
API_SECRET_KEY = "token"


def demo_fetch_config(
    url: str, *, source: str = "demo", endpoint: str = "customers", page_size: int = 100
) -> FetchConfig:
    """A full-load, page-paginated fetch of the local API with a bearer token from Secrets Manager."""
    return FetchConfig.model_validate(
        {
            "source": source,
            "endpoint": endpoint,
            "url": url,
            "auth": {"secret_id": API_SECRET, "secret_key": API_SECRET_KEY, "prefix": "Bearer "},
            "records_path": "data",
            "pagination": Pagination(kind="page", size_param="per_page", page_size=page_size).model_dump(),
            "retry": RetryPolicy(max_attempts=3, backoff_base_s=0.05).model_dump(),
            "read_timeout_s": 10,
            "full_load": True,
        }
    )


def demo_spec(table: str) -> Scd2Spec:
    return Scd2Spec(
        table=table,
        keys=("id",),
        order_by="updated_at",
        schema_ddl="id BIGINT, name STRING, email STRING, tier STRING, updated_at BIGINT",
        comment="Demo customers, one version per change (icelake ingest run)",
        column_comments={"id": "customer id", "email": "NULL when unknown"},
    )


def batch_id_of(uri: str) -> str:
    """`s3://bucket/raw/{source}/{endpoint}/{run_id}` -> `{source}/{endpoint}/{run_id}`."""
    return "/".join(uri.rstrip("/").split("/")[-3:])


@dataclass(frozen=True)
class IngestRunSummary:
    run: int
    status: str
    error: str | None
    records_fetched: int
    batches_merged: int
    inserted: int  # versions created by this run's batches (new keys and new versions)
    closed: int  # versions closed because the key changed
    deleted: int  # versions closed because a full load no longer had the key
    current_rows: int
    total_rows: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def batch_as_of(spark: SparkSession, table: str, batch_ids: list[str]) -> list[datetime]:
    """The as-of time of each batch recorded in the table's snapshot summaries."""
    found = batch_commits(spark, table)
    return [t for b in batch_ids if (t := found.get(b)) is not None]


def summarise(spark: SparkSession, table: str, run: int, result: ExecutionResult) -> IngestRunSummary:
    fetched = result.output.get("fetched", {}) if result.status == "SUCCEEDED" else {}
    pending = [str(u) for u in fetched.get("pending", [])]
    error = None
    if result.status != "SUCCEEDED":
        name, cause = result.failure()
        error = f"{name}: {cause}"
    inserted = closed = deleted = current = total = 0
    if table_exists(spark, table):
        times = batch_as_of(spark, table, [batch_id_of(u) for u in pending])
        if times:
            at = ", ".join(ts_literal(t) for t in times)
            row = spark.sql(
                f"SELECT count_if({q(VALID_FROM)} IN ({at})) AS i, "
                f"count_if({q(VALID_TO)} IN ({at}) AND NOT {q(IS_DELETED)}) AS c, "
                f"count_if({q(VALID_TO)} IN ({at}) AND {q(IS_DELETED)}) AS d FROM {qtable(table)}"
            ).collect()[0]
            inserted, closed, deleted = int(row["i"]), int(row["c"]), int(row["d"])
        row = spark.sql(
            f"SELECT count_if({q(IS_CURRENT)}) AS cur, count(1) AS n FROM {qtable(table)}"
        ).collect()[0]
        current, total = int(row["cur"]), int(row["n"])
    return IngestRunSummary(
        run=run,
        status=result.status,
        error=error,
        records_fetched=int(fetched.get("record_count", 0)),
        batches_merged=len(pending),
        inserted=inserted,
        closed=closed,
        deleted=deleted,
        current_rows=current,
        total_rows=total,
    )


def run_ingest(
    state_machine_arn: str, fetch: FetchConfig, spec: Scd2Spec, *, name: str, timeout: float = 600
) -> ExecutionResult:
    """One execution of the ingestion state machine with input {"fetch": ..., "table": ...}."""
    request = {"fetch": fetch.model_dump(mode="json"), "table": spec.model_dump(mode="json")}
    return run_execution(state_machine_arn, request, timeout=timeout, name=name)
