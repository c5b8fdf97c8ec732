"""The one shape of every migration step's Lambda handler: Powertools logging, tracing and metrics
around `step(InputModel.model_validate(event), Deps.from_environ())`, the result as JSON.

Each lambdas/<step>/handler.py is one line that names its step, its input model and the metric
that counts a finished invocation (`Invocations` is published first, so failures count too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from icelake.aws.lambda_metrics import metrics_of_one_invocation
from icelake.request.deps import Deps

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)
Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def step_handler(
    step: Callable[[In, Deps], Out],
    input_model: type[In],
    done_metric: str,
    result_metrics: Callable[[Out], dict[str, int]] | None = None,
) -> Handler:
    """The Lambda handler of `step`; `result_metrics` adds counts taken from its result."""
    logger = Logger()
    tracer = Tracer()
    metrics = Metrics()

    @metrics_of_one_invocation(metrics)
    @logger.inject_lambda_context(log_event=False)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        metrics.add_metric(name="Invocations", unit=MetricUnit.Count, value=1)
        result = step(input_model.model_validate(event), Deps.from_environ())
        metrics.add_metric(name=done_metric, unit=MetricUnit.Count, value=1)
        for name, value in (result_metrics(result) if result_metrics else {}).items():
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
        return result.model_dump(mode="json")

    return handler
