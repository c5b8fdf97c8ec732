"""A table's error as a person reads it, in one shape everywhere (the outcome, report.json,
report.html, the CLI's table, the run's EventBridge event): {type, message, step} and a hint where
icelake knows what to do. The Step Functions cause ({errorType, errorMessage, stackTrace} of a
Lambda, a Glue job run's JSON, or text) is parsed here, once, where the outcome is built: a stack
trace stays in the step's CloudWatch log, which the error names (log group, request id)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from icelake.constants import LAMBDA_STEPS

GLUE_ERROR_LOGS = "/aws-glue/jobs/error"  # where a Glue job run's driver writes its errors
MAX_MESSAGE = 4000  # characters of a message kept in an outcome (report.html shows it whole)
_TRACEBACK = "Traceback (most recent call last)"

# What to do about an error icelake knows, by its type.
HINTS: dict[str, str] = {
    "TargetNotOursError": "send the table to another target name (target.names or target.renames) or "
    "another target database; icelake never writes to a table it did not create",
    "ConcurrentCatalogChangeError": "someone changed the target's Glue table during the run: run again",
    "CopyVerificationError": "a copy did not match its source; run again (identical files are skipped)",
    "UnmappedPrefixesError": "add a target.prefix_maps entry for each prefix named",
    "TargetConflictError": "a target file differs from the source's: check who wrote it before anything else",
    "ValidationFailedError": "the copied table did not read like its source and was rolled back; the "
    "source is untouched",
    "MissingSourceFilesError": "the source table references files that are gone: repair the source first",
    "Sandbox.Timedout": "the copy ran out of the Lambda's 15 minutes: give options.throughput your "
    "accounts' measured model (docs/assessment.md) so the estimate sends it to Glue, or lower "
    "options.glue_threshold_files or glue_threshold_bytes so this table copies in the Glue job",
    "States.Timeout": "the step ran out of time: lower options.glue_threshold_files so the table copies "
    "in the Glue job, then run again",
    "AccessDeniedException": "a role lacks a permission: see docs/deploy.md for what each role needs",
    "AccessDenied": "a role lacks a permission: see docs/deploy.md for what each role needs",
    "diverged": "keep the target's commits and stop syncing this table, or, once nothing in that "
    "commit is needed, drop the target table icelake created to migrate it again",
    "busy": "run again when the other run has ended",
    "stranded": 'stop the writers that still commit to the source (docs/runbook.md "Cutover"); bring '
    "the appends over with `icelake migrate carry-over --request FILE`; redo anything else on the target "
    "by hand, then decommission the source",
    "CarryOverRefused": "carry-over brings appends only: redo each commit named on the target by hand "
    "(e.g. the same DELETE or MERGE), then decommission the source",
    "NotPromoted": "a carry-over is for tables a cutover promoted: run icelake migrate cutover first",
    "source_dropped": "keep the target as the table's new home, or drop it (icelake created it) once "
    "nothing reads it",
}


class TableError(BaseModel):
    """What went wrong for one table, and where its full record is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str  # the exception's class name, the Step Functions error, or the outcome's state
    message: str  # one message, never a stack trace
    step: str  # Plan, Copy, Register, Validate, Rollback, Map (the iteration itself) or Report
    hint: str | None = None
    # Where the step logged the error whole (CloudWatch Logs), for a step that failed in AWS.
    log_group: str | None = None
    request_id: str | None = None  # the Lambda request id, or the Glue job run id
    region: str | None = None  # of the log group (the workflow's own)

    def line(self) -> str:
        """The error on one line (the CLI's table)."""
        return " ".join(f"{self.type}: {self.message}".split())


def table_error(error: str | None, cause: str | None, step: str, region: str | None = None) -> TableError:
    """A Step Functions {Error, Cause} (a Catch's, or a failed Map iteration's) as a TableError."""
    parsed = _json(cause)
    kind, message, request_id, log_group = error or "Error", cause or error or "unknown error", None, None
    if "errorMessage" in parsed or "errorType" in parsed:  # a Lambda function's error
        kind = str(parsed.get("errorType") or kind)
        message = str(parsed.get("errorMessage") or "")
        request_id = parsed.get("requestId")
        log_group = _lambda_logs(step)
    elif "JobRunState" in parsed or "JobName" in parsed:  # a Glue job run's
        message = str(parsed.get("ErrorMessage") or f"the Glue job run ended {parsed.get('JobRunState')}")
        request_id, log_group = parsed.get("Id"), GLUE_ERROR_LOGS
    elif step in ("Plan", "Copy", "Register", "Validate", "Rollback"):
        log_group = _lambda_logs(step)
    message = _without_traceback(message)[:MAX_MESSAGE]
    return TableError(
        type=kind,
        message=message,
        step=step,
        hint=HINTS.get(kind),
        log_group=log_group,
        request_id=str(request_id) if request_id else None,
        region=region if log_group else None,
    )


def stopped_error(state: str, reason: str, step: str = "Plan") -> TableError:
    """The reason a table was left alone (diverged, busy, promoted, ...) in the same shape."""
    return TableError(type=state, message=reason[:MAX_MESSAGE], step=step, hint=HINTS.get(state))


def coerced(value: Any) -> Any:
    """An outcome's `error` as given: a TableError's fields, a Step Functions {Error, Cause, Step}
    (the state machine's RollbackFailed), or text (an outcome recorded before this shape)."""
    if isinstance(value, str):
        return table_error(None, value, "unknown")
    if isinstance(value, dict) and ("Cause" in value or "Error" in value):
        return table_error(value.get("Error"), value.get("Cause"), str(value.get("Step") or "unknown"))
    return value


def _json(cause: str | None) -> dict[str, Any]:
    try:
        parsed = json.loads(cause or "")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _lambda_logs(step: str) -> str | None:
    function = LAMBDA_STEPS.get(step.lower())
    return f"/aws/lambda/{function[0]}" if function else None


def _without_traceback(message: str) -> str:
    """A message without any stack trace a step put in it (it stays in the step's log)."""
    head, _, _ = message.partition(_TRACEBACK)
    head = head.strip()
    if '"stackTrace"' in head:  # a Lambda error document inside a message: keep its message
        inner = _json(head[head.find("{") :])
        head = str(inner.get("errorMessage") or head.split('"stackTrace"')[0])
    return head or "the step failed without a message (see its log)"
