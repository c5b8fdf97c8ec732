"""Start a migration execution and follow it: what `icelake migrate start/status` and the demo use."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
)

from icelake.aws.clients import client as aws_client
from icelake.aws.ledger import Ledger
from icelake.constants import LEDGER_TABLE, MIGRATE_STATE_MACHINE
from icelake.errors import IcelakeError


@dataclass
class RunStatus:
    run_id: str
    execution_status: str
    tables: dict[str, str] = field(default_factory=dict)  # table -> ledger state
    output: dict[str, Any] | None = None  # the Report step's summary (RunSummary)
    error: str | None = None
    report: dict[str, Any] | None = None  # the whole RunReport (every table), read from output's report_uri

    @property
    def done(self) -> bool:
        return self.execution_status not in ("RUNNING", "PENDING_REDRIVE")


def find_state_machine(sfn: Any, name: str = MIGRATE_STATE_MACHINE) -> str:
    for page in sfn.get_paginator("list_state_machines").paginate():
        for sm in page["stateMachines"]:
            if sm["name"] == name:
                return str(sm["stateMachineArn"])
    raise IcelakeError(
        f"no state machine named {name}: deploy the stack (cdk deploy) or run `icelake local up`"
    )


MAX_INPUT_BYTES = 262_144  # Step Functions' cap on an execution's input (256 KiB)


def request_body(request: object, run_id: str | None = None) -> tuple[str, str]:
    """The execution input and run id for `request`, refused here when Step Functions would refuse
    it or fail on it later."""
    if not isinstance(request, dict):
        raise IcelakeError(
            f'the request must be one JSON object ({{"source": ..., "target": ...}}), not a JSON '
            f"{type(request).__name__ if request is not None else 'null'}: see README 'Migrate many tables'"
        )
    rid = str(run_id or request.get("run_id") or f"run-{time.strftime('%Y%m%d-%H%M%S')}")
    body = json.dumps({**request, "run_id": rid})
    size = len(body.encode())
    if size > MAX_INPUT_BYTES:
        raise IcelakeError(
            f"the request is {size:,} bytes and Step Functions accepts at most {MAX_INPUT_BYTES:,} "
            "(256 KiB): select tables by database and pattern instead of listing each, or split the run"
        )
    return body, rid


def start_migration(
    request: object, state_machine_arn: str | None = None, run_id: str | None = None
) -> tuple[str, str]:
    """Start an execution named after the run id; returns (execution ARN, run id)."""
    body, rid = request_body(request, run_id)
    with aws_errors("start the migration"):
        sfn = aws_client("stepfunctions")
        arn = state_machine_arn or find_state_machine(sfn)
        try:
            out = sfn.start_execution(stateMachineArn=arn, name=rid, input=body)
        except sfn.exceptions.ExecutionAlreadyExists as exc:
            raise IcelakeError(
                f"run id {rid} was used already: see it with `icelake migrate status {rid}`, or start a "
                "new run with another --run-id"
            ) from exc
    return str(out["executionArn"]), rid


@contextmanager
def aws_errors(doing: str) -> Iterator[None]:
    """AWS failures that are not icelake's as one line that says what to check."""
    try:
        yield
    except (EndpointConnectionError, ConnectTimeoutError) as exc:
        where = os.environ.get("AWS_ENDPOINT_URL") or "AWS"
        raise IcelakeError(
            f"cannot {doing}: {where} does not answer ({exc}); check the network, AWS_ENDPOINT_URL, "
            "or start the embedded AWS with `icelake local up`"
        ) from exc
    except (NoCredentialsError, PartialCredentialsError) as exc:
        raise IcelakeError(
            f"cannot {doing}: no AWS credentials found; set AWS_PROFILE or run `aws sso login`"
        ) from exc
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise IcelakeError(f"cannot {doing}: {error.get('Code')}: {error.get('Message')}") from exc


def run_status(execution_arn: str, run_id: str, ledger_table: str = LEDGER_TABLE) -> RunStatus:
    with aws_errors(f"read run {run_id}"):
        sfn = aws_client("stepfunctions")
        try:
            desc = sfn.describe_execution(executionArn=execution_arn)
        except sfn.exceptions.ExecutionDoesNotExist as exc:
            raise IcelakeError(
                f"there is no run {run_id}: check the run id (the execution's name in the console)"
            ) from exc
        rows = Ledger(aws_client("dynamodb"), ledger_table).run_tables(run_id)
    status = RunStatus(
        run_id=run_id,
        execution_status=desc["status"],
        # A row without a state is one being written: moto's update_item stores a new item's keys
        # before its attributes (DynamoDB's is atomic); the next look shows it whole.
        tables={str(r["sk"]).removeprefix("TABLE#"): str(r["state"]) for r in rows if "state" in r},
    )
    if desc.get("output"):
        status.output = json.loads(desc["output"])
        if isinstance(status.output, dict) and status.output.get("report_uri"):
            status.report = read_report(str(status.output["report_uri"]))
    if desc["status"] == "FAILED":
        status.error = f"{desc.get('error', '')}: {_readable_cause(desc.get('cause', ''))}".strip(": ")
    return status


def read_report(report_uri: str) -> dict[str, Any]:
    """The RunReport (every table's outcome) that the Report step wrote to S3."""
    bucket, _, key = report_uri.removeprefix("s3://").partition("/")
    body = aws_client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    report: dict[str, Any] = json.loads(body)
    return report


def _readable_cause(cause: str) -> str:
    """A Lambda failure's cause is its error JSON (with a stack trace): keep the message."""
    try:
        parsed = json.loads(cause)
    except ValueError:
        return cause
    if isinstance(parsed, dict) and "errorMessage" in parsed:
        return f"{parsed.get('errorType', 'Error')}: {parsed['errorMessage']}"
    return cause


def follow(
    execution_arn: str,
    run_id: str,
    on_update: Callable[[RunStatus], None],
    poll_seconds: float = 1.0,
    timeout_seconds: float = 6 * 3600,
) -> RunStatus:
    deadline = time.monotonic() + timeout_seconds
    while True:
        status = run_status(execution_arn, run_id)
        on_update(status)
        if status.done:
            return status
        if time.monotonic() > deadline:
            raise IcelakeError(
                f"{execution_arn} still running after {timeout_seconds:.0f} s; it goes on in AWS"
            )
        time.sleep(poll_seconds)
