"""Rollback: remove what this run wrote for the table (only keys its journal names, never one
under the source) and restore the table's Glue entry. Never writes the source."""

from __future__ import annotations

import time

from icelake.aws import catalog
from icelake.migrate.journal import read_journal
from icelake.request.deps import Deps, Sessions
from icelake.request.target import owner_of
from icelake.uris import PrefixMap
from icelake.workflow import table_bucket
from icelake.workflow.accounting import accounted
from icelake.workflow.failures import table_error
from icelake.workflow.inputs import CaughtError, RollbackInput
from icelake.workflow.models import PlanResult, TableOutcome
from icelake.workflow.steps.carrying import carry_undo
from icelake.workflow.steps.shared import item_facts, record_outcome, source_prefixes


def rollback(given: RollbackInput, deps: Deps) -> TableOutcome:
    started = time.monotonic()
    item = given.item
    planned = given.plan
    caught = given.error or CaughtError()
    step = caught.step or ("Plan" if planned is None else "Copy")
    error = table_error(caught.error, caught.cause, step, deps.orchestrator.region_name)
    if step == "Validate":
        error = error.model_copy(
            update={
                "hint": "validation failed, not the copy: the copied table could not be shown to read "
                "like its source, so it was rolled back; the source is untouched"
            }
        )
    removed = 0
    kept: list[str] = []  # a table bucket's: what Rollback did to the table, the files it keeps
    sessions = deps.sessions(item.request)
    if planned is not None and item.request.mode == "carry_over":  # a promoted table: guarded
        removed, left = carry_undo(planned, deps, sessions)
        if left:
            error = error.model_copy(update={"message": f"{error.message}; {left}"})
    elif planned is not None and table_bucket.is_table_bucket(planned.item):
        item = planned.item  # located at Plan: the table's storage
        kept = _undo_table_bucket(planned, deps, sessions)
    elif table_bucket.is_table_bucket(item):  # Plan failed: a table it created, still empty, goes
        kept = table_bucket.undo_created(item, sessions, deps.ledger)
    elif planned is not None:
        journaled = read_journal(deps.artifacts.io, deps.artifacts.uri(planned.journal_key))
        source = PrefixMap([(p, "s3://never/written") for p in source_prefixes(item)])
        removed = sessions.target_io().delete_many([k for k in journaled if not source.under_any_source(k)])
        catalog.restore_table(
            sessions.target.client("glue"),
            item.target_database,
            item.target_table,
            planned.previous_target_metadata,
            owner_of(item),
        )
    facts = item_facts(item)
    outcome = TableOutcome(
        run_id=item.run_id,
        table=item.name,
        status="rolled_back",
        error=error,
        **(facts | {"warnings": [*facts["warnings"], *kept]}),
    )
    # The copy's own account is not read back: a failed copy may have written none.
    seconds = time.monotonic() - started
    outcome = accounted(outcome, item.request, planned, None, "rollback", sessions.requests.counts(), seconds)
    record_outcome(deps.ledger, outcome, "ROLLED_BACK", error=error.line(), files_removed=removed)
    deps.ledger.release_table(item.target_location, item.run_id)
    return outcome


def _undo_table_bucket(planned: PlanResult, deps: Deps, sessions: Sessions) -> list[str]:
    """Undo an S3 Tables target without deleting an object: the table deleted whole if this run
    created it, else its earlier pointer put back; the outcome's lines say which, and name the
    files the run wrote that stay in the table's storage until the bucket's removal takes them."""
    item = planned.item
    journal = deps.artifacts.uri(planned.journal_key)
    journaled = read_journal(deps.artifacts.io, journal)
    undone = table_bucket.undo(
        item,
        sessions,
        deps.ledger,
        (planned.target_metadata_location, planned.previous_target_metadata, planned.target_table_existed),
        journaled,
    )
    lines = [f"the target table {item.target_name}: {undone.action}"]
    if undone.files_left:
        days = table_bucket.removal_days(sessions, item)
        lines.append(table_bucket.files_left_note(undone.files_left, journal, days, "this run wrote"))
    return lines
