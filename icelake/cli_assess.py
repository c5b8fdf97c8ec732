"""`icelake assess`: directly (icelake/assess/cli.py), or through the deployed workflow (--workflow).

Through the workflow, the request runs in mode assess (Inventory, an Assess step per table, Report)
with the workflow's roles, and the assessment.json and assessment.html its Report step wrote under
runs/<run_id>/ of the artifacts bucket are fetched into --out: the operator needs no access to the
source or the target, only to start and follow runs and read runs/ (docs/deploy.md "The
operator"). This module is a command, above both the assessment and the workflow client."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from botocore.exceptions import ClientError

from icelake.assess.cli import AssessOptions, assess_app, assess_directly, show_assessment
from icelake.assess.consumers.scan import REWIRE_NAME
from icelake.assess.estimate.cost import SYNC_DAYS
from icelake.assess.schema import Assessment
from icelake.aws.clients import client as aws_client
from icelake.cli_options import options_command
from icelake.console import err, one_line_errors
from icelake.errors import IcelakeError
from icelake.request.selection import parse_request
from icelake.run_view import RunView
from icelake.workflow.client import RunStatus, aws_errors, follow, start_migration

__all__ = ["assess", "assess_app", "assess_through_workflow", "fetch_assessment"]


@assess_app.callback(invoke_without_command=True)
@options_command(AssessOptions)
def assess(options: AssessOptions) -> None:
    """Assess an estate (--request) or one table (--metadata, --target-location) before moving it,
    here or (--workflow) by the deployed workflow; the exit codes are in assess_app's help."""
    if options.workflow:
        assess_through_workflow(options)
    else:
        assess_directly(options)


# What only a direct assessment takes, and the request's option that says it to the workflow.
DIRECT_ONLY = {
    "--metadata": "one table is assessed directly: drop --workflow",
    "--prices": "give options.prices, the S3 URI of the price table, in the request",
    "--throughput": "give options.throughput in the request",
    "--sync-days": "give options.sync_days in the request",
    "--sync-interval": "give options.sync_interval in the request",
    "--region": "the workflow prices the target's region (target.region), else its own",
    "--concurrency": "the workflow assesses options.concurrency tables at once",
    "--no-consumers": 'give "consumers": {"scan": false} in the request',
}


def _direct_flags(o: AssessOptions) -> list[str]:
    given = {
        "--metadata": o.metadata is not None or o.target_location is not None or bool(o.map_),
        "--prices": o.prices is not None,
        "--throughput": o.throughput is not None,
        "--sync-days": o.sync_days != SYNC_DAYS,
        "--sync-interval": o.sync_interval is not None,
        "--region": o.region is not None,
        "--concurrency": o.concurrency is not None,
        "--no-consumers": not o.consumers,
    }
    return [flag for flag, is_given in given.items() if is_given]


def assess_through_workflow(o: AssessOptions) -> None:
    """Start the workflow's assess mode with the request, follow it, fetch its two files."""
    with one_line_errors():
        flags = _direct_flags(o)
        if flags:
            raise IcelakeError(f"{flags[0]} is not for --workflow: {DIRECT_ONLY[flags[0]]}")
        if o.request is None:
            raise IcelakeError("--workflow assesses a request: give --request FILE")
        try:
            body = json.loads(o.request.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise IcelakeError(
                f"{o.request} is not a readable JSON request ({exc}): fix the request file"
            ) from exc
        if not isinstance(body, dict):
            raise IcelakeError(f"{o.request} must be one JSON object (a migration request)")
        body["mode"] = "assess"
        # refused here, with exit code 2, before anything starts (prices of the region among it)
        parse_request({**body, "run_id": o.run_id or body.get("run_id") or "unnamed"})
        execution_arn, run_id = start_migration(body, o.state_machine_arn, o.run_id)
        err.print(f"started {execution_arn}", highlight=False, markup=False)
        with RunView(err, run_id, verbose=o.verbose) as view:
            status = follow(execution_arn, run_id, view)
        _ended_well(status)
        assessment, paths = fetch_assessment(status, o.out)
    show_assessment(assessment, paths, o.as_json)


def _ended_well(status: RunStatus) -> None:
    if status.execution_status == "SUCCEEDED" and status.report:
        return
    err.print(
        f"icelake: run {status.run_id} {status.execution_status}: {status.error or 'no assessment written'}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    # the Inventory refused the request (it reads the catalogs): bad input, as a refusal here
    raise typer.Exit(2 if (status.error or "").startswith("InvalidRequest") else 1)


def fetch_assessment(status: RunStatus, out: Path) -> tuple[Assessment, tuple[Path, Path]]:
    """The run's assessment.json (read with its status), assessment.html and rewire.json (when the
    run scanned the consumers), written into `out`."""
    report = status.report or {}
    assessment = Assessment.model_validate(report)
    html_uri = str((status.output or {}).get("report_html_uri", ""))
    bucket, _, key = html_uri.removeprefix("s3://").partition("/")
    with aws_errors(f"read {html_uri}"):
        html = aws_client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    try:
        out.mkdir(parents=True, exist_ok=True)
        json_path, html_path = out / "assessment.json", out / "assessment.html"
        json_path.write_text(json.dumps(report, indent=1) + "\n")
        html_path.write_bytes(html)
        rewire = _rewire_beside(bucket, key)
        if rewire is not None:  # the run scanned the consumers (consumers.scan, on by default)
            (out / REWIRE_NAME).write_bytes(rewire)
    except OSError as exc:
        raise IcelakeError(
            f"cannot write the assessment to {out} ({exc.strerror or exc}): pass another --out"
        ) from exc
    return assessment, (json_path, html_path)


def _rewire_beside(bucket: str, html_key: str) -> bytes | None:
    """The run's rewire.json beside its assessment.html, or None when the run wrote none."""
    key = html_key.rsplit("/", 1)[0] + "/" + REWIRE_NAME
    try:
        body: bytes = aws_client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise IcelakeError(
            f"cannot read s3://{bucket}/{key} ({exc}): check the operator's read of runs/"
        ) from exc
    return body
