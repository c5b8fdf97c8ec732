"""Register step: create or move the target Glue table, never clobbering a concurrent change."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from icelake.workflow import steps
from icelake.workflow.inputs import PlannedInput

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="Invocations", unit=MetricUnit.Count, value=1)  # published on failures too
    result = steps.register(PlannedInput.model_validate(event), steps.Deps.from_environ()).model_dump(
        mode="json"
    )
    metrics.add_metric(name="TablesRegistered", unit=MetricUnit.Count, value=1)
    return result
