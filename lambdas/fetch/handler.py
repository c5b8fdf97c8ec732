"""Lambda handlers of the ingestion workflow's raw landing: fetch an API, and mark merged batches complete."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict
from pydantic_settings import BaseSettings, SettingsConfigDict

from icelake.aws.lambda_metrics import metrics_of_one_invocation
from icelake.ingest.fetch import fetch_source
from icelake.ingest.landing import complete_or_report
from icelake.ingest.models import FetchConfig, FetchCursor

logger = Logger()
tracer = Tracer()
metrics = Metrics()


class Settings(BaseSettings):
    model_config = SettingsConfigDict(frozen=True)
    raw_root: str  # RAW_ROOT, e.g. s3://raw-bucket


@cache
def settings() -> Settings:
    return Settings()  # type: ignore[call-arg]


class FetchEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    fetch: FetchConfig
    cursor: FetchCursor | None = None  # set when a previous invocation ran out of its budget


class CompleteEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    batch_uris: list[str]


Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def _powertools(fn: Handler) -> Handler:
    """Both handlers' Powertools, outermost first: one invocation's metrics, the Lambda context in
    the log, a trace, the metrics flushed."""
    return metrics_of_one_invocation(metrics)(
        logger.inject_lambda_context(tracer.capture_lambda_handler(metrics.log_metrics(fn)))
    )


@_powertools
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = FetchEvent.model_validate(event)
    outcome = fetch_source(request.fetch, settings().raw_root, resume=request.cursor)
    metrics.add_metric(name="RecordsFetched", unit=MetricUnit.Count, value=outcome.record_count)
    metrics.add_metric(name="PendingBatches", unit=MetricUnit.Count, value=outcome.pending_count)
    logger.info(
        "landed batch" if not outcome.more else "fetched part of a batch, going on with a cursor",
        extra={"batch_id": outcome.batch_id, "pending": outcome.pending_count, "more": outcome.more},
    )
    return {**outcome.model_dump(mode="json"), "pending_count": outcome.pending_count}


@_powertools
def complete_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = CompleteEvent.model_validate(event)
    done, quarantined = complete_or_report(request.batch_uris)
    metrics.add_metric(name="BatchesCompleted", unit=MetricUnit.Count, value=len(done))
    metrics.add_metric(name="BatchesQuarantined", unit=MetricUnit.Count, value=len(quarantined))
    if quarantined:
        logger.error("batches quarantined", extra={"quarantined": quarantined})
    return {"completed": done, "quarantined": quarantined, "quarantined_count": len(quarantined)}
