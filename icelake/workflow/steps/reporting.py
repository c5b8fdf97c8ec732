"""Report: every table's outcome in runs/<run_id>/report.json, a summary small enough for a
state's payload, and an EventBridge event with the run's status."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from icelake.assess.pages.render import render_report
from icelake.assess.pages.report_summary import outcome_kinds
from icelake.constants import EVENT_SOURCE
from icelake.objects.carry import carry_run
from icelake.objects.kinds import summary_line
from icelake.objects.model import NOT_CARRIED, objects_by_kind
from icelake.request.deps import Artifacts, Deps
from icelake.workflow.failures import MAX_MESSAGE, TableError, table_error
from icelake.workflow.inputs import ReportInput, WriterDetails
from icelake.workflow.models import FAILED_STATUSES, RunReport, RunState, RunSummary, TableOutcome
from icelake.workflow.steps.assessing import report_assessment


def report(given: ReportInput, deps: Deps) -> RunSummary:
    """Write every table's outcome to runs/<run_id>/report.json; return a summary of a few hundred
    bytes whatever the number of tables (Step Functions caps a state's payload at 256 KiB)."""
    run_id = given.run_id
    if given.assess and given.worklist_key:
        summary = report_assessment(run_id, given.worklist_key, given.worklist_bucket, deps)
        _announce(deps, run_id, summary.status, summary.counts.get("failed", 0), summary.tables, "Assessment")
        return summary
    outcomes = run_outcomes(given, deps)
    objects = carry_run(run_id, deps)  # views and links, after the tables they read
    counts = Counter(o.status for o in outcomes)
    failed = sum(n for s, n in counts.items() if s in FAILED_STATUSES)
    status: RunState = "succeeded" if failed == 0 else ("failed" if failed == len(outcomes) else "partial")
    if status == "succeeded" and any(o.status in NOT_CARRIED for o in objects):
        status = "partial"  # a view not carried: named in the report, as a table would be
    key = f"runs/{run_id}/report.json"
    uri = deps.artifacts.uri(key)
    html_uri = deps.artifacts.uri(f"runs/{run_id}/report.html")
    warnings, blockers = outcome_kinds([o.model_dump(mode="json") for o in outcomes], FAILED_STATUSES)
    written = RunReport(
        run_id=run_id,
        status=status,
        tables=outcomes,
        report_uri=uri,
        report_html_uri=html_uri,
        warnings_by_kind=warnings,
        blockers_by_kind=blockers,
        objects=objects,
        objects_by_kind=objects_by_kind(objects),
    )
    deps.artifacts.put_json(key, written.model_dump(mode="json"))
    # The same run for people: estimated against actual, states, errors and timings.
    deps.artifacts.io.write(html_uri, render_report(written.model_dump(mode="json")).encode())
    _announce(deps, run_id, status, failed, len(outcomes), "Migration run", _event_errors(outcomes))
    _announce_stranded(deps, run_id, outcomes)
    return RunSummary(
        run_id=run_id,
        status=status,
        tables=len(outcomes),
        counts=dict(sorted(counts.items())),
        files_pruned=sum(o.files_pruned for o in outcomes),
        report_uri=uri,
        report_html_uri=html_uri,
        objects=summary_line(objects, "objects in report.json"),
    )


EVENT_ERRORS = 20  # tables whose error the event carries (an event entry is at most 256 KB)


def _event_errors(outcomes: list[TableOutcome]) -> list[dict[str, Any]]:
    """The first EVENT_ERRORS tables' errors, in the outcome's shape, for the run's event."""
    errors = [(o, o.error) for o in outcomes if o.status in FAILED_STATUSES and o.error]
    return [
        {"table": o.table, "status": o.status, "type": e.type, "message": e.message[:1000], "step": e.step}
        | ({"hint": e.hint} if e.hint else {})
        for o, e in errors[:EVENT_ERRORS]
    ]


STRANDED_DETAIL_TYPE = "Stranded commits"


def _announce_stranded(deps: Deps, run_id: str, outcomes: list[TableOutcome]) -> None:
    """A run that met stranded tables sends its own event besides the run's (detail type
    STRANDED_DETAIL_TYPE): each table, its target and the commits made to its source after
    promotion (the first EVENT_ERRORS tables and commits of each; report.json has them all)."""
    stranded = [o for o in outcomes if o.status == "stranded"]
    if not stranded:
        return
    tables = [
        {
            "table": o.table,
            "target": o.target,
            "commits": [c.model_dump(mode="json") for c in o.stranded[:EVENT_ERRORS]],
            "error": o.error.type if o.error else None,
        }
        for o in stranded[:EVENT_ERRORS]
    ]
    deps.client("events").put_events(
        Entries=[
            {
                "Source": EVENT_SOURCE,
                "DetailType": STRANDED_DETAIL_TYPE,
                "Detail": json.dumps({"run_id": run_id, "stranded": len(stranded), "tables": tables}),
                "EventBusName": deps.env.event_bus,
            }
        ]
    )


def _announce(
    deps: Deps,
    run_id: str,
    status: str,
    failed: int,
    tables: int,
    what: str,
    errors: list[dict[str, Any]] | None = None,
) -> None:
    """The run's EventBridge event (source icelake): rules notify the topic and start nothing. A
    migration run's detail names its failed tables' errors ({table, status, type, message, step,
    hint}; the first EVENT_ERRORS, the rest are in report.json)."""
    deps.client("events").put_events(
        Entries=[
            {
                "Source": EVENT_SOURCE,
                "DetailType": f"{what} {status}",
                "Detail": json.dumps(
                    {"run_id": run_id, "status": status, "failed": failed, "tables": tables}
                    | ({"errors": errors} if errors is not None else {})
                ),
                "EventBusName": deps.env.event_bus,
            }
        ]
    )


def run_outcomes(given: ReportInput, deps: Deps) -> list[TableOutcome]:
    """Every table's outcome: inline `outcomes`, the Map's exported results (`map_results`, its output
    with a ResultWriter), and for worklist tables neither covers (`worklist_bucket`/`worklist_key`),
    the ledger. So no table of the run is missing from its report."""
    outcomes = list(given.outcomes)
    if given.map_results:
        outcomes.extend(map_outcomes(given.run_id, given.map_results.writer, deps.artifacts))
    if given.worklist_key:
        seen = {o.table for o in outcomes}
        worklist = deps.artifacts.read_json(given.worklist_key, given.worklist_bucket)
        missing = [name for name in map(_item_name, worklist) if name not in seen]
        if missing:
            outcomes.extend(_ledger_outcomes(given.run_id, missing, deps))
    return outcomes


def map_outcomes(run_id: str, writer: WriterDetails, artifacts: Artifacts) -> Iterator[TableOutcome]:
    """The outcomes a Distributed Map exported with its ResultWriter, one result file at a time.

    `writer` is the Map's ResultWriterDetails: {Bucket, Key} of its manifest.json, whose
    ResultFiles list the result files ({Key, Size}) by status: SUCCEEDED, FAILED, PENDING. A result
    file is a JSON array of child executions: Input and Output are the iteration's input and output as
    JSON strings; FAILED ones carry Error and Cause instead of Output.
    """
    manifest = artifacts.read_json(writer.key, writer.bucket)
    bucket = manifest.get("DestinationBucket") or writer.bucket
    for status, files in manifest.get("ResultFiles", {}).items():
        for result_file in files:
            for entry in artifacts.read_json(result_file["Key"], bucket):
                yield _result_outcome(run_id, status, entry)


def _failed(run_id: str, table: str, error: TableError) -> TableOutcome:
    return TableOutcome(run_id=run_id, table=table, status="failed", error=error)


def _item_name(item: dict[str, Any]) -> str:
    return f"{item['source_database']}.{item['source_table']}"


def _result_outcome(run_id: str, status: str, entry: dict[str, Any]) -> TableOutcome:
    """One child execution of a ResultWriter result file as the table's outcome."""
    if status == "SUCCEEDED":
        try:
            return TableOutcome.model_validate_json(entry["Output"])
        except (KeyError, TypeError, ValidationError) as exc:
            error = TableError(
                type="UnreadableOutput",
                message=f"unreadable output of {entry.get('ExecutionArn', 'a child execution')}: "
                + " ".join(str(exc).split())[:MAX_MESSAGE],
                step="Map",
            )
    elif status == "FAILED":  # failed despite the item's own catches (e.g. a States.Runtime error)
        error = table_error(entry.get("Error") or "States.ALL", entry.get("Cause") or "no cause given", "Map")
    else:
        error = TableError(
            type=f"Map{status.title()}",
            message=f"the Map run ended before this table finished ({status})",
            step="Map",
            hint="run again: what was copied is skipped",
        )
    try:
        table = _item_name(json.loads(entry["Input"])["item"])
    except (KeyError, TypeError, ValueError):
        table = "unknown"
    return _failed(run_id, table, error)


def _ledger_outcomes(run_id: str, tables: Iterable[str], deps: Deps) -> Iterator[TableOutcome]:
    """Outcomes of worklist tables that no Map result covers, as their item's last step recorded them
    in the ledger; a table without one failed. (moto 5.2.5, the embedded runtime, writes the
    ResultWriter's manifest but no result files: there every table comes from here.)"""
    rows = {str(r["sk"]).removeprefix("TABLE#"): r for r in deps.ledger.run_tables(run_id)}
    for table in tables:
        row = rows.get(table, {})
        if row.get("outcome"):
            yield TableOutcome.model_validate_json(row["outcome"])
        else:
            message = f"no outcome recorded (last state in the ledger: {row.get('state', 'none')})"
            yield _failed(run_id, table, TableError(type="NoOutcome", message=message, step="Map"))
