"""Report step: the run's summary to S3 and an EventBridge event."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from icelake.workflow import steps
from icelake.workflow.inputs import ReportInput

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="Invocations", unit=MetricUnit.Count, value=1)  # published on failures too
    result = steps.report(ReportInput.model_validate(event), steps.Deps.from_environ())
    metrics.add_metric(name="Reports", unit=MetricUnit.Count, value=1)
    for name, value in result.metrics().items():  # the dashboard's "Table outcomes"
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    return result.model_dump(mode="json")
