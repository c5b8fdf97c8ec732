"""Verify (mode "verify"): a migrated or promoted target, checked again on day 2 at the request's
validation tier (icelake/migrate/check/verify.py), with nothing written to any table: no Glue table, no
object, no lock taken; only the run's outcome is recorded in the ledger, as every run's is.

Outcomes: `verified`, or `damaged` with the missing or changed files named (a failed status: the
Report step's event names it and its metric raises the tables-failed alarm). A table icelake has
not migrated, or whose target someone else has committed to before its promotion, is not
verified: `failed` and `diverged` say why."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from icelake.aws import catalog
from icelake.aws.session import pyiceberg_props
from icelake.migrate.check.record import RECORD_NAME, Record, read_record
from icelake.migrate.check.verify import VerifyReport, verify_alone, verify_synced
from icelake.request.deps import Deps, Sessions
from icelake.request.models import WorkItem
from icelake.request.target import foreign_commit
from icelake.workflow.failures import TableError, stopped_error, table_error
from icelake.workflow.inputs import PlanInput
from icelake.workflow.models import TableOutcome
from icelake.workflow.steps.shared import item_facts, record_outcome, source_prefixes

DAMAGED_HINT = (
    "the target no longer holds what icelake wrote: before promotion, run a full migration of the "
    "table again (identical files are skipped, the damaged ones copied again); after promotion, "
    "restore the named objects from the bucket's versions or backups"
)


def verify(given: PlanInput, deps: Deps) -> TableOutcome:
    return timed_outcome(given, deps, "Verify", _verified)


def timed_outcome(
    given: PlanInput, deps: Deps, step: str, check: Callable[[WorkItem, Deps, Sessions], TableOutcome]
) -> TableOutcome:
    """`check`'s outcome with its time and requests, recorded in the ledger; whatever it raises
    (a manifest that no longer parses, a role denied, a record that cannot be read) is the table's
    failure, said and not raised, so one table never stops the Map."""
    started = time.monotonic()
    item = given.item
    sessions = deps.sessions(item.request)
    try:
        outcome = check(item, deps, sessions)
    except Exception as exc:
        error = table_error(type(exc).__name__, str(exc), step)
        outcome = TableOutcome(
            run_id=item.run_id, table=item.name, status="failed", error=error, **item_facts(item)
        )
    outcome = outcome.model_copy(
        update={"seconds": round(time.monotonic() - started, 3), "requests": sessions.requests.counts()}
    )
    record_outcome(deps.ledger, outcome, outcome.status.upper())
    return outcome


def _verified(item: WorkItem, deps: Deps, sessions: Sessions) -> TableOutcome:
    found = migrated_target(item, deps, sessions, "Verify")
    if isinstance(found, TableOutcome):
        return found
    item, synced, current = found
    report = verified_report(item, deps, sessions, synced, current)
    if isinstance(report, TableOutcome):
        return report
    facts: dict[str, Any] = {"run_id": item.run_id, "table": item.name, **item_facts(item)}
    return _outcome(report, current, facts)


def migrated_target(
    item: WorkItem, deps: Deps, sessions: Sessions, step: str
) -> tuple[WorkItem, dict[str, Any], str] | TableOutcome:
    """The item (a decommissioned source's prefixes are the version synced from), its last sync
    and the target's current metadata; or why there is nothing to check."""
    synced = deps.ledger.last_synced(item.target_location)
    table = catalog.get_table(sessions.target.client("glue"), item.target_database, item.target_table)
    current = catalog.metadata_location(table) if table else None
    facts: dict[str, Any] = {"run_id": item.run_id, "table": item.name, **item_facts(item)}
    if not synced or current is None:
        why = (
            f"icelake has no validated sync of {item.name} to {item.target_name} on record"
            + ("" if current else " and the target table does not exist")
            + ": migrate it before verifying it"
        )
        error = TableError(type="NotMigrated", message=why, step=step, hint="run a full migration first")
        return TableOutcome(status="failed", error=error, target_metadata_location=current, **facts)
    if item.source_dropped:  # a decommissioned source: its prefixes are the version synced from
        item = item.model_copy(update={"source_metadata_location": str(synced["source_metadata"])})
    return item, synced, current


def verified_report(
    item: WorkItem, deps: Deps, sessions: Sessions, synced: dict[str, Any], current: str
) -> VerifyReport | TableOutcome:
    """The target checked at the request's tier against the copy record; a diverged target's
    outcome instead (someone else committed to it before its promotion)."""
    facts: dict[str, Any] = {"run_id": item.run_id, "table": item.name, **item_facts(item)}
    tier = item.request.options.validation
    target_io = sessions.target_io()
    record = copy_record(deps, synced)
    if synced.get("promoted_at"):
        # The table's home: others commit to it now, so its current metadata is what is checked.
        return verify_alone(
            target_io, current, pyiceberg_props(sessions.target), tier, source_prefixes(item), record
        )
    diverged = foreign_commit(target_io, synced, current)
    if diverged:
        error = stopped_error("diverged", diverged, "Verify")
        return TableOutcome(status="diverged", error=error, target_metadata_location=current, **facts)
    return verify_synced(
        target_io,
        sessions.source_io(),
        (str(synced["source_metadata"]), current),
        (pyiceberg_props(sessions.source), pyiceberg_props(sessions.target)),
        tier,
        source_prefixes(item),
        record,
    )


def copy_record(deps: Deps, synced: dict[str, Any]) -> Record:
    """What every run that wrote this target wrote (the ledger lists their journals; each run's
    record lies beside its journal), in one pass, the later run's row winning."""
    keys = [str(k) for k in synced.get("journals") or []]
    uris = [deps.artifacts.uri(f"{k.rsplit('/', 1)[0]}/{RECORD_NAME}") for k in keys]
    return read_record(deps.artifacts.io, uris)[0]


def _outcome(report: VerifyReport, current: str, facts: dict[str, Any]) -> TableOutcome:
    return outcome_of(report, current, facts, "Verify", DAMAGED_HINT)


def outcome_of(
    report: VerifyReport, current: str, facts: dict[str, Any], step: str, hint: str
) -> TableOutcome:
    done = f"verify: {report.files_checked} files; {report.done}"
    if not report.problems:
        return TableOutcome(status="verified", validation=done, target_metadata_location=current, **facts)
    shown = report.problems[:20]
    more = len(report.problems) - len(shown)
    message = f"{facts['target']} is damaged: " + "; ".join(shown) + (f"; and {more} more" if more else "")
    error = TableError(type="Damaged", message=message[:4000], step=step, hint=hint)
    facts = {"damaged_files": [d.path for d in report.damaged], **facts}  # a repair's: what it found
    return TableOutcome(
        status="damaged", validation=done, target_metadata_location=current, error=error, **facts
    )
