"""Powertools metrics published, or dropped, once per invocation, whatever the invocation did.

`Metrics.log_metrics` publishes the metric set and clears it at the end of an invocation, except
when metrics are disabled (POWERTOOLS_METRICS_DISABLED, as the embedded AWS runs every Lambda):
then it clears nothing, and the set, shared by every `Metrics` of the process, grows with each
invocation of a warm process. At 100 values of one metric `add_metric` publishes the set anyway
(disabled or not) and clears it; when that happens in an invocation that adds nothing more (one
that fails after counting itself), `log_metrics` then warns that the set is empty, and where
warnings are errors that warning replaces the invocation's own error. Clearing the set after every
invocation keeps each invocation's metrics its own."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Metrics

F = TypeVar("F", bound=Callable[..., Any])


def metrics_of_one_invocation(metrics: Metrics) -> Callable[[F], F]:
    """Decorator (outside `metrics.log_metrics`): the metric set is empty after every call."""

    def decorate(handler: F) -> F:
        @functools.wraps(handler)
        def cleared_after(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            finally:
                metrics.clear_metrics()

        return cleared_after  # type: ignore[return-value]

    return decorate
