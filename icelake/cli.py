"""The `icelake` command."""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from typing import Annotated

import typer
from rich.console import Console

from icelake.assess.cli import assessment_table
from icelake.assess.schema import Assessment
from icelake.aws.clients import client as aws_client
from icelake.cli_assess import assess_app  # with its command: directly, or --workflow
from icelake.cli_options import options_command
from icelake.cli_path import PathOptions, run_path
from icelake.console import err, one_line_errors, say, stdout_console
from icelake.errors import IcelakeError
from icelake.ingest.cli import ingest_app
from icelake.request.selection import parse_request
from icelake.run_view import RunView, report_table, run_table
from icelake.workflow.client import (
    RunStatus,
    aws_errors,
    find_state_machine,
    follow,
    run_status,
    start_migration,
)

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Move Apache Iceberg tables with their history.",
)
migrate_app = typer.Typer(no_args_is_help=True, help="Migrate Iceberg tables.")
app.add_typer(assess_app, name="assess")  # first: an estate is assessed before it moves
app.add_typer(migrate_app, name="migrate")
app.add_typer(ingest_app, name="ingest")


@migrate_app.command("path")
@options_command(PathOptions)
def migrate_path(options: PathOptions) -> None:
    """Migrate one table, given its metadata file, to a new location (S3 or local)."""
    run_path(options)


def _execution_arn(state_machine_arn: str, run_id: str) -> str:
    return state_machine_arn.replace(":stateMachine:", ":execution:") + f":{run_id}"


def _follow(execution_arn: str, run_id: str, verbose: bool) -> RunStatus:
    with RunView(err, run_id, verbose=verbose) as view:
        return follow(execution_arn, run_id, view)


# Options `migrate start` and `migrate cutover` share.
RunIdOption = Annotated[
    str | None, typer.Option(help="Run id (execution name); default: from the request or time.")
]
StateMachineOption = Annotated[str | None, typer.Option(help="Default: the deployed icelake state machine.")]
NoFollowOption = Annotated[bool, typer.Option("--no-follow", help="Start and return at once.")]
JsonReportOption = Annotated[bool, typer.Option("--json", help="Print the run report as JSON.")]
VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose", help="A line per table per state change (the default off a terminal), not one live view."
    ),
]


@dataclass(frozen=True)
class RunOptions:
    """What every command that starts a run takes (`migrate start`, `cutover`, `verify`, ...)."""

    request: Annotated[
        typer.FileText,
        typer.Option(
            "--request",
            help="Migration request JSON (see README); cutover, verify and carry-over set its mode.",
        ),
    ]
    run_id: RunIdOption = None
    state_machine_arn: StateMachineOption = None
    no_follow: NoFollowOption = False
    verbose: VerboseOption = False
    as_json: JsonReportOption = False


@dataclass(frozen=True)
class StartOptions(RunOptions):
    allow_empty: Annotated[
        bool, typer.Option("--allow-empty", help="A selection that matches no table is not an error.")
    ] = False


@migrate_app.command("start")
@options_command(StartOptions)
def migrate_start(options: StartOptions) -> None:
    """Start a migration through the Step Functions workflow and follow it until it ends.

    Exit code 0 when every table succeeded, 1 when any did not, 2 when the request is refused
    (checked here, then by the Inventory against the catalogs; nothing runs)."""
    _start(options, allow_empty=options.allow_empty)


@migrate_app.command("cutover")
@options_command(RunOptions)
def migrate_cutover(options: RunOptions) -> None:
    """The last sync: catch up with the source, prove it did not move, promote the target.

    Stop the source's writers first. A promoted table is the target's from then on: every later
    run reports it `promoted` and writes nothing (docs/runbook.md "Cutover")."""
    _start(options, mode="cutover")


@migrate_app.command("verify")
@options_command(RunOptions)
def migrate_verify(options: RunOptions) -> None:
    """Check each selected target again, migrated or promoted, writing nothing to any table.

    Each table ends verified, or damaged naming its missing or changed files (exit code 1;
    docs/runbook.md "Day 2")."""
    _start(options, mode="verify")


@migrate_app.command("repair")
@options_command(RunOptions)
def migrate_repair(options: RunOptions) -> None:
    """Verify each selected target at the request's tier, then write its damaged or missing files
    again from the source where the source still holds what was copied.

    Each table ends verified (repaired_files names what was written again), or damaged naming each
    file left with why and what to do (exit code 1). The source is only read; after promotion with
    the source decommissioned nothing is written (docs/runbook.md "Day 2")."""
    _start(options, mode="repair")


@migrate_app.command("carry-over")
@options_command(RunOptions)
def migrate_carry_over(options: RunOptions) -> None:
    """Bring commits made to a promoted table's source after its cutover (stranded) onto the target.

    Appends only, as one new snapshot on the target's current state (its writers' commits stay);
    anything else is refused per table, naming the commits (exit code 1). The source is only read
    (docs/runbook.md "Cutover")."""
    _start(options, mode="carry_over")


def _start(options: RunOptions, *, allow_empty: bool = False, mode: str | None = None) -> None:
    """The one runner of the commands above: the request checked, the run started and followed."""
    request, run_id = options.request, options.run_id
    with one_line_errors():
        try:
            body = json.loads(request.read())
        except json.JSONDecodeError as exc:
            raise IcelakeError(f"{request.name} is not JSON ({exc}): fix the request file") from exc
        if mode and isinstance(body, dict):
            body["mode"] = mode
        if isinstance(body, dict):  # refused here, with exit code 2, before anything starts
            parse_request({"run_id": "unnamed", **body} if run_id is None else {**body, "run_id": run_id})
        execution_arn, rid = start_migration(body, options.state_machine_arn, run_id)
        err.print(f"started {execution_arn}", highlight=False, markup=False)
        if options.no_follow:
            return
        status = _follow(execution_arn, rid, options.verbose)
    _print_outcome(status, options.as_json)
    if status.output and status.output.get("tables") == 0 and not allow_empty:
        err.print(
            f"icelake: warning: run {rid} matched no Iceberg table, nothing was migrated: check the "
            "selection's databases, tables and patterns (pass --allow-empty when that is expected)",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


def _print_outcome(status: RunStatus, as_json: bool) -> None:
    report = status.report or status.output  # the whole report (from S3), else what the run returned
    if as_json:
        sys.stdout.write(json.dumps(report or {"run_id": status.run_id, "error": status.error}) + "\n")
    elif report and "totals" in report:  # mode assess: the run's assessment
        stdout_console().print(assessment_table(Assessment.model_validate(report)))
        summary = status.output or {}
        err.print(f"assessment: {summary.get('report_html_uri', '')}", highlight=False, markup=False)
    elif report:
        stdout_console().print(report_table(report))
        if report.get("report_html_uri"):
            say(f"report: {report['report_html_uri']}")
        objects = (status.output or {}).get("objects")  # views carried, tables not moved: one line
        if objects:
            say(f"icelake: {objects}")
    else:
        stdout_console().print(run_table(status))
    if status.execution_status != "SUCCEEDED":
        say(f"icelake: run {status.run_id} {status.execution_status}: {status.error}")
        # the Inventory refused the request (it reads the catalogs): bad input, as a refusal here
        raise typer.Exit(2 if (status.error or "").startswith("InvalidRequest") else 1)
    if status.output and status.output.get("status") != "succeeded":
        raise typer.Exit(1)


@migrate_app.command("status")
def migrate_status(
    run_id: Annotated[str, typer.Argument(help="The run id (execution name).")],
    state_machine_arn: Annotated[
        str | None, typer.Option(help="Default: the deployed icelake state machine.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run report as JSON.")] = False,
    follow_run: Annotated[
        bool, typer.Option("--follow", help="Follow a run that has not ended until it does.")
    ] = False,
    verbose: VerboseOption = False,
) -> None:
    """Show a run: per-table state from the ledger (by state once it has more than 50 tables),
    and the report when it has ended."""

    with one_line_errors():
        with aws_errors(f"read run {run_id}"):
            arn = state_machine_arn or find_state_machine(aws_client("stepfunctions"))
        status = run_status(_execution_arn(arn, run_id), run_id)
        if follow_run and not status.done:
            status = _follow(_execution_arn(arn, run_id), run_id, verbose)
    if not status.done:
        stdout_console().print(run_table(status))
        return
    _print_outcome(status, as_json)


local_app = typer.Typer(
    no_args_is_help=True, help="Embedded AWS on this machine (moto), running the real workflow."
)
app.add_typer(local_app, name="local")


@local_app.command("up")
def local_up(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: one the system picks).")] = 5055,
    with_lake: Annotated[
        bool,
        typer.Option(
            "--with-lake",
            help="Also create the two demo accounts' buckets and KMS key, and publish sample tables "
            "(database sales) in the source account.",
        ),
    ] = False,
) -> None:
    """Start embedded AWS with the migration workflow deployed; stop with Ctrl-C."""
    import signal
    import tempfile
    from pathlib import Path

    from icelake.local.deploy import deploy_migration_workflow
    from icelake.local.embedded import start_embedded_aws
    from icelake.local.lake import build_lake, publish_sample_tables

    repo = Path(__file__).resolve().parents[1]
    # The sample lake's local files live as long as the server, and go with it.
    with (
        start_embedded_aws(repo, port=port) as aws,
        tempfile.TemporaryDirectory(prefix="icelake-lake-") as scratch,
    ):
        deployment = deploy_migration_workflow()
        console = Console()
        if with_lake:
            lake = build_lake(Path(scratch), orchestrator_resources=False)
            tables = publish_sample_tables(lake)
            console.print(
                f"source tables: {', '.join(f'sales.{t}' for t in sorted(tables))}", highlight=False
            )
        console.print(
            f"embedded AWS on [bold]{aws.endpoint}[/bold]; state machine {deployment.state_machine_arn}"
        )
        console.print("In another shell:", highlight=False)
        exports = f"AWS_ENDPOINT_URL={aws.endpoint} AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing"
        console.print(
            f"  export {exports} AWS_DEFAULT_REGION=us-east-1", highlight=False, markup=False, soft_wrap=True
        )
        console.print("  icelake migrate start --request tests/events/migrate_request.json", highlight=False)
        console.print("Ctrl-C stops it.")
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
