"""`icelake assess`: what a migration would move, what would block it, how long it takes and what
it costs, in assessment.json and assessment.html under --out. Reads AWS (or AWS_ENDPOINT_URL);
writes nothing outside --out. This module assesses directly, with the caller's credentials and the
source and target roles; the command itself (icelake/cli_assess.py) also starts the deployed
workflow's assess mode instead (--workflow), which needs no access to either lake."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from icelake.assess.consumers.model import Rewire
from icelake.assess.consumers.scan import REWIRE_NAME, scan_request, write_rewire
from icelake.assess.estimate.cost import DEFAULT_REGION, SYNC_DAYS, regions_of
from icelake.assess.estimate.prices import load_prices
from icelake.assess.gather.assessment import Settings, assemble, assess_table
from icelake.assess.gather.estate import assess_request, default_concurrency, settings_for
from icelake.assess.pages.render import render_assessment
from icelake.assess.schema import Assessment, TableAssessment
from icelake.aws.fileio import io_for
from icelake.aws.session import assume_role_session
from icelake.console import err, one_line_errors, stdout_console
from icelake.constants import ARTIFACTS_BUCKET, LEDGER_TABLE
from icelake.errors import IcelakeError
from icelake.objects.kinds import summary_line
from icelake.request.deps import Deps, WorkflowEnv
from icelake.request.models import MigrationRequest
from icelake.request.schedule import DEFAULT_SYNC_SCHEDULE, interval_seconds
from icelake.request.selection import parse_request
from icelake.throughput import ThroughputModel, load_throughput
from icelake.uris import parse_map_option

assess_app = typer.Typer(
    add_completion=False,
    help="Assess tables before moving them.\n\nExit code 0 when no table is blocked, 1 when any table "
    "is blocked (a gate before `icelake migrate start`; the assessment is written either way), 2 "
    "when the request or an option is refused (nothing is read or written).",
)


@dataclass(frozen=True)
class AssessOptions:
    """The options of `icelake assess`."""

    request: Annotated[
        Path | None, typer.Option("--request", help="Migration request JSON: assess what it would move.")
    ] = None
    metadata: Annotated[
        str | None, typer.Option("--metadata", help="One table's current metadata.json (as migrate path).")
    ] = None
    target_location: Annotated[
        str | None, typer.Option("--target-location", help="With --metadata: where the table would go.")
    ] = None
    map_: Annotated[
        list[str] | None, typer.Option("--map", help="With --metadata: SRC=DST for a prefix (repeatable).")
    ] = None
    out: Annotated[Path, typer.Option("--out", help="Directory for assessment.json and .html.")] = Path(
        "assessment"
    )
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False
    prices: Annotated[
        Path | None, typer.Option("--prices", help="A price table (same schema as the shipped ones).")
    ] = None
    region: Annotated[
        str | None, typer.Option(help="Region whose prices apply (default: the target's, else AWS_REGION).")
    ] = None
    sync_days: Annotated[
        float, typer.Option("--sync-days", min=0, help="Days both copies are kept while syncing.")
    ] = SYNC_DAYS
    sync_interval: Annotated[
        str | None,
        typer.Option(
            "--sync-interval",
            help="How often the syncs run until cutover, as the deployment's sync_schedule "
            "('rate(1 hour)', 'cron(0 2 * * ? *)'); default: the request's options.sync_interval, "
            "else rate(1 day). Prices the sync window and the cutover's freeze.",
        ),
    ] = None
    throughput: Annotated[
        Path | None,
        typer.Option(
            "--throughput",
            help="A throughput model JSON (docs/assessment.md): your accounts' latencies, limits and "
            "start-ups; default: the request's options.throughput, else the model's defaults.",
        ),
    ] = None
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=256,
            help="Tables assessed at once (default: four a core, at most 16); the output is the same "
            "for any value.",
        ),
    ] = None
    map_concurrency: Annotated[
        int,
        typer.Option("--map-concurrency", min=1, max=1000, help="With --metadata: the Map's concurrency."),
    ] = 4
    source_role: Annotated[str | None, typer.Option(help="With --metadata: role ARN to read with.")] = None
    target_role: Annotated[
        str | None, typer.Option(help="With --metadata: role ARN the target is read with.")
    ] = None
    consumers: Annotated[
        bool,
        typer.Option(
            "--consumers/--no-consumers",
            help="With --request: find the jobs, queries, workflows and code that read the selected "
            "tables (rewire.json, 'Rewire at cutover' in assessment.html); on by default.",
        ),
    ] = True
    workflow: Annotated[
        bool,
        typer.Option(
            "--workflow/--direct",
            help="--workflow: the deployed workflow assesses --request (its mode assess) and the "
            "assessment's files are fetched from the artifacts bucket: the operator's path on AWS "
            "(docs/deploy.md 'The operator'). --direct (the default): assess here, reading both lakes "
            "through the source and target roles.",
        ),
    ] = False
    state_machine_arn: Annotated[
        str | None, typer.Option(help="With --workflow: default, the deployed icelake state machine.")
    ] = None
    run_id: Annotated[
        str | None, typer.Option(help="With --workflow: the run id (execution name); default: the time.")
    ] = None
    verbose: Annotated[
        bool, typer.Option("--verbose", help="With --workflow: a line per table per state change.")
    ] = False


def assess_directly(options: AssessOptions) -> None:
    """Assess an estate (--request) or one table (--metadata, --target-location) here; the exit
    codes are in assess_app's help."""
    o = options
    with one_line_errors():
        if (o.request is None) == (o.metadata is None):
            raise IcelakeError("give either --request FILE or --metadata URI --target-location URI")
        if o.metadata is not None and not o.target_location:
            raise IcelakeError("--metadata needs --target-location URI: where the table would go")
        with Tally(err) as shown:
            assessment = _of_request(o, o.request, shown) if o.request else _of_table(o, shown)
        paths = write_assessment(assessment, o.out, _consumers(o))
    show_assessment(assessment, paths, o.as_json)


def show_assessment(assessment: Assessment, paths: tuple[Path, Path], as_json: bool) -> None:
    """The assessment on the terminal (or one JSON object), and exit code 1 when a table is blocked."""
    summary = {
        "assessment_uri": paths[0].resolve().as_uri(),
        "assessment_html_uri": paths[1].resolve().as_uri(),
        "tables": assessment.totals.tables,
        "blocked_tables": assessment.totals.blocked_tables,
        "duration_s": assessment.run.duration_s,
        "totals": assessment.totals.model_dump(mode="json"),
    }
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        stdout_console().print(assessment_table(assessment))
        err.print(f"assessment: {summary['assessment_html_uri']}", highlight=False, markup=False)
        line = summary_line(assessment.objects, "'Views and other objects' in assessment.html", planned=True)
        if line:
            err.print(f"icelake: {line}", highlight=False, markup=False, soft_wrap=True)
    if assessment.totals.blocked_tables:
        err.print(
            f"icelake: {assessment.totals.blocked_tables} of {assessment.totals.tables} table(s) blocked: "
            "see each table's blockers in the assessment",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


def _of_request(options: AssessOptions, path: Path, shown: Tally) -> Assessment:
    try:
        body = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise IcelakeError(f"{path} is not a readable JSON request ({exc}): fix the request file") from exc
    if not isinstance(body, dict):
        raise IcelakeError(f"{path} must be one JSON object (a migration request)")
    parsed: MigrationRequest = parse_request({"run_id": "assessment", **body})
    o = options
    table = load_prices(_price_region(o.region, regions_of(parsed)[1]), o.prices)
    deps = Deps(WorkflowEnv(ledger_table=LEDGER_TABLE, artifacts_bucket=ARTIFACTS_BUCKET))
    model = load_throughput(o.throughput) if o.throughput else parsed.options.throughput
    settings = settings_for(
        parsed, table, sync_days=o.sync_days, model=model, sync_interval=_interval(o.sync_interval)
    )
    return assess_request(parsed, deps, settings, shown, o.concurrency or default_concurrency())


def _of_table(options: AssessOptions, shown: Tally) -> Assessment:
    """One table (--metadata, --target-location: both given, as the command checks)."""
    o = options
    metadata, target_location, maps = o.metadata, o.target_location, o.map_ or []
    assert metadata is not None and target_location is not None
    pairs = [parse_map_option(m) for m in maps]
    table_prices = load_prices(_price_region(o.region, None), o.prices)
    model = load_throughput(o.throughput) if o.throughput else ThroughputModel()
    settings = Settings(
        prices=table_prices,
        model=model,
        concurrency=o.map_concurrency,
        sync_days=o.sync_days,
        sync_interval=_interval(o.sync_interval) or DEFAULT_SYNC_SCHEDULE,
    )
    src_io = io_for(metadata, assume_role_session(o.source_role, session_name="icelake-assess-source"))
    dst_io = io_for(target_location, assume_role_session(o.target_role, session_name="icelake-assess-target"))
    name = metadata.rstrip("/").rsplit("/", 3)[-3] if metadata.count("/") >= 3 else metadata
    assessed = assess_table(name, metadata, target_location, pairs, src_io, dst_io, settings)
    shown(assessed, 1, 1)
    scope = {"source_metadata_location": metadata, "target_location": target_location, "maps": maps}
    return assemble([assessed], settings, scope)


def _consumers(options: AssessOptions) -> Rewire | None:
    """The consumer scan of --request's selection (icelake/assess/consumers/), unless
    --no-consumers or the request's consumers.scan is false; its counts in one line."""
    if options.request is None or not options.consumers:
        return None
    parsed = parse_request({"run_id": "assessment", **json.loads(options.request.read_text())})
    if not parsed.consumers.scan:
        return None
    rewire = scan_request(
        parsed, Deps(WorkflowEnv(ledger_table=LEDGER_TABLE, artifacts_bucket=ARTIFACTS_BUCKET))
    )
    consumers = len({r.consumer for r in rewire.references})
    err.print(
        f"icelake: {len(rewire.references)} reference(s) in {consumers} consumer(s) to rewire at cutover, "
        f"{len(rewire.unread)} consumer(s) not read: see {REWIRE_NAME}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    return rewire


class Tally:
    """How far an assessment is, by outcome (ok, warnings, blocked): a live bar on a terminal; off
    one (logs, CI), a line at each tenth of the tables and at the end, never a line per table."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.counts = {"ok": 0, "warnings": 0, "blocked": 0}
        self.started = time.monotonic()
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Tally:
        if self.console.is_terminal:
            self._bar = Progress(
                TextColumn("assessing"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                console=self.console,
            )
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def text(self) -> str:
        return ", ".join(f"{n} {outcome}" for outcome, n in self.counts.items())

    def __call__(self, done: TableAssessment, count: int, total: int) -> None:
        self.counts["blocked" if done.blockers else "warnings" if done.warnings else "ok"] += 1
        if self._bar is not None:
            if self._task is None:
                self._task = self._bar.add_task("assess", total=total, counts="")
            self._bar.update(self._task, completed=count, counts=self.text())
        elif count == total or count * 10 // total != (count - 1) * 10 // total:
            self.console.print(
                f"[icelake] assessed {count}/{total} table(s) in {time.monotonic() - self.started:.1f} s: "
                f"{self.text()}",
                highlight=False,
                markup=False,
            )


def _price_region(asked: str | None, target_region: str | None) -> str:
    return (
        asked
        or target_region
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or DEFAULT_REGION
    )


def write_assessment(assessment: Assessment, out: Path, rewire: Rewire | None = None) -> tuple[Path, Path]:
    """assessment.json and assessment.html in `out` (made if absent), and rewire.json when the
    consumers were scanned."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        data = assessment.model_dump(mode="json")
        json_path, html_path = out / "assessment.json", out / "assessment.html"
        json_path.write_text(json.dumps(data, indent=1) + "\n")
        if rewire is not None:
            write_rewire(rewire, out)
        html_path.write_text(render_assessment(data, rewire.model_dump(mode="json") if rewire else None))
    except OSError as exc:
        raise IcelakeError(
            f"cannot write the assessment to {out} ({exc.strerror or exc}): pass another --out"
        ) from exc
    return json_path, html_path


FULL_TABLE = 50  # tables listed one a row in the terminal


def assessment_table(assessment: Assessment) -> Table:
    from icelake.assess.pages.html import duration, size, usd

    table = Table(
        title=f"Assessment: {assessment.totals.tables} table(s), {assessment.totals.blocked_tables} blocked"
    )
    for column in (
        "table",
        "engine",
        "data",
        "files",
        "to copy",
        "blockers",
        "warnings",
        "est. time",
        "est. cost",
    ):
        table.add_column(column)
    # Of an estate (more than FULL_TABLE tables), the blocked tables, and the rest as one line.
    listed = assessment.tables
    if len(listed) > FULL_TABLE:
        listed = [t for t in assessment.tables if t.blockers]
        warned = sum(bool(t.warnings) for t in assessment.tables if not t.blockers)
        rest = len(assessment.tables) - len(listed)
    for t in listed:
        estimate = t.estimate
        table.add_row(
            t.table,
            t.engine,
            size(t.data_bytes),
            f"{t.data_files:,}",
            size(t.bytes_to_copy),
            str(len(t.blockers)),
            str(len(t.warnings)),
            duration(estimate.duration_s) if estimate else "n/a",
            usd(estimate.cost_usd["total"]) if estimate else "n/a",
        )
    if len(listed) < len(assessment.tables):
        table.add_row(
            f"… {rest:,} more",
            f"{warned:,} with warnings, {rest - warned:,} without (assessment.html lists them)",
        )
    table.add_row(
        "all (Map)",
        "",
        size(assessment.totals.data_bytes),
        f"{assessment.totals.data_files:,}",
        size(assessment.totals.bytes_to_copy),
        str(assessment.totals.blockers),
        str(assessment.totals.warnings),
        duration(assessment.run.duration_s),
        usd(assessment.totals.cost_usd.get("total", 0.0)),
    )
    return table


def _interval(expression: str | None) -> str | None:
    """--sync-interval, checked: a bad expression is refused in one line naming what is wrong."""
    if expression is not None:
        try:
            interval_seconds(expression)
        except ValueError as exc:
            raise IcelakeError(f"--sync-interval: {exc}") from exc
    return expression
