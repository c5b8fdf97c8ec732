"""Test Lambda handlers for test_embedded_aws.py, loaded by path like lambdas/<step>/handler.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics()


class IcelakeTestError(Exception):
    """Caught by name in the test ASL."""


class TransientError(Exception):
    """Retried by name in the test ASL."""


@logger.inject_lambda_context
@metrics.log_metrics
def decide(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    items = event.get("items") or []
    metrics.add_metric(name="Items", unit=MetricUnit.Count, value=len(items))
    return {
        "route": "process" if items else "skip",
        "count": len(items),
        "function_name": context.function_name,
        "request_id": context.aws_request_id,
        "remaining_ms": context.get_remaining_time_in_millis(),
        "namespace": os.environ["POWERTOOLS_METRICS_NAMESPACE"],
    }


def multiply(event: Any, context: LambdaContext) -> dict[str, Any]:
    value = int(event) * int(os.environ["FACTOR"])
    # AWS calls from inside a handler reach the same embedded AWS (AWS_ENDPOINT_URL of the process).
    boto3.client("s3").put_object(Bucket=os.environ["RESULT_BUCKET"], Key=f"items/{event}", Body=str(value))
    return {"value": value}


def flaky(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    counter = Path(event["counter_file"])
    attempt = (int(counter.read_text()) if counter.exists() else 0) + 1
    counter.write_text(str(attempt))
    if attempt < 2:
        raise TransientError(f"attempt {attempt} fails")
    return {"attempt": attempt}


def boom(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("kind") == "other":
        raise KeyError("not caught by name")
    raise IcelakeTestError(json.dumps({"reason": event.get("message")}))


def hold(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Holds `mib` MiB resident (every page written) until it returns."""
    block = bytearray(event["mib"] * 2**20)
    block[::4096] = b"x" * len(range(0, len(block), 4096))
    return {"held_mib": len(block) // 2**20, "memory_limit_mb": int(context.memory_limit_in_mb)}
