"""Validate: show that the target reads like the source (at the request's validation tier) and
holds no file of the source's, record the sync, prune what the source expired, and for a cutover
promote the target. A table that Plan left alone gets its outcome here too."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from icelake.aws import catalog
from icelake.aws.fileio import io_for
from icelake.aws.session import pyiceberg_props
from icelake.errors import ValidationFailedError
from icelake.migrate.check.validate import Tier, check_target_files, validate_tables
from icelake.migrate.history import dangling_versions, orphans_note, to_source_map
from icelake.migrate.models import MigrationResult, RowsValidation
from icelake.migrate.prune import prune_target, unreached
from icelake.request.deps import Deps, Sessions
from icelake.workflow import table_bucket
from icelake.workflow.accounting import accounted
from icelake.workflow.failures import TableError, stopped_error
from icelake.workflow.inputs import PlannedInput
from icelake.workflow.models import PlanResult, TableOutcome
from icelake.workflow.steps.carrying import carried_outcome
from icelake.workflow.steps.cutover import cutover
from icelake.workflow.steps.registering import record_access, register_and_carry
from icelake.workflow.steps.shared import copy_facts, item_facts, record_outcome, source_prefixes
from icelake.workflow.steps.sync_scope import SyncScope


def validate(given: PlannedInput, deps: Deps) -> TableOutcome:
    started = time.monotonic()
    planned = given.plan
    item = planned.item
    ledger = deps.ledger
    if item.request.mode == "carry_over" and planned.engine != "none":
        return carried_outcome(planned, deps)  # a promoted table's carried snapshot, read back
    if planned.engine == "none":  # dry run, in sync, or left alone: nothing was written to check
        outcome = skipped(planned)
        if outcome.status == "in_sync":  # the data is; the source's Glue metadata and access may not be
            access = register_and_carry(planned, deps.sessions(item.request))
            record_access(deps, item, "IN_SYNC", access)
            outcome = outcome.model_copy(update={"warnings": [*outcome.warnings, *access.warnings]})
        outcome = accounted(outcome, item.request, planned, None, "validate", {}, time.monotonic() - started)
        if outcome.status == "in_sync" and item.request.mode == "cutover":
            outcome = cutover(planned, deps, outcome)
        record_outcome(ledger, outcome, _ledger_state(outcome))
        if outcome.status != "busy":  # a busy table's lock is another run's
            ledger.release_table(item.target_location, item.run_id)
        return outcome
    sessions = deps.sessions(item.request)
    copied = MigrationResult.model_validate_json(
        io_for(planned.copy_result_uri, deps.orchestrator).read(planned.copy_result_uri)
    )
    rows = copied.rows_validation  # the Glue job compared the rows where the data is (or said why not)
    if rows is not None and rows.error:
        raise ValidationFailedError(f"{item.name}: the Glue job could not compare the rows: {rows.error}")
    scope = SyncScope.of(planned, copied, deps, sessions)
    report = validate_tables(
        item.source_metadata_location,
        planned.target_metadata_location,
        source_props=pyiceberg_props(sessions.source),
        target_props=pyiceberg_props(sessions.target),
        tier=_tier_left(item.request.options.validation, rows),
        only=scope.new if scope else None,
    )
    problems = [
        *report.problems,
        *(rows.problems if rows else []),
        *(scope.untouched if scope else []),
        *_file_problems(planned, copied, sessions, scope),
        *_catalog_problems(planned, sessions),
    ]
    if problems:
        raise ValidationFailedError(f"{item.name}: the target is not the same table: {problems[:10]}")
    ledger.record_synced(
        item.target_location,
        item.source_metadata_location,
        planned.target_metadata_location,
        item.run_id,
        journal_key=planned.journal_key,
    )
    # After an incremental sync, only an expiry or a dropped logged version since the last sync can
    # have left a file icelake wrote unreachable: otherwise the prune has nothing to look for.
    prunes = item.request.options.prune and (scope is None or scope.removed)
    pruned, prune_error, kept = _prune(planned, sessions, deps) if prunes else (0, None, [])
    outcome = TableOutcome(
        **copy_facts(item, planned, copied),
        status="migrated",
        snapshots_validated=copied.snapshots,
        validation=_tier_done(report.tier, report.notes, rows) + (scope.note if scope else ""),
        sync=copied.sync,
        sync_reason=copied.sync_reason,
        engines={"plan": planned.planned_in, "copy": planned.engine, "validate": _validated_in(rows)},
        engine_rule=planned.engine_rule,
        files_pruned=pruned,
        orphans=copied.orphans,
        history_note=orphans_note(copied.history, copied.orphans),
        error=TableError(type="PruneFailed", message=prune_error, step="Validate") if prune_error else None,
        seconds=copied.elapsed_seconds,
        **_with_warnings(item_facts(item, ledger.get_table(item.run_id, item.name)), kept),
    )
    own = sessions.requests.counts()
    outcome = accounted(outcome, item.request, planned, copied, "validate", own, time.monotonic() - started)
    if item.request.mode == "cutover":
        outcome = cutover(planned, deps, outcome)
    record_outcome(ledger, outcome, _ledger_state(outcome), snapshots_validated=len(report.snapshots))
    ledger.release_table(item.target_location, item.run_id)
    return outcome


def _file_problems(
    planned: PlanResult, copied: MigrationResult, sessions: Sessions, scope: SyncScope | None
) -> list[str]:
    """What is wrong with the target's files: as the Glue job found it next to the copy (a large
    table's manifests are not read again here), else checked now: those the sync added when it
    was incremental (`scope`), else all of them."""
    checked = copied.files_check
    item = planned.item
    if checked is None and scope is not None:
        return scope.files.problems
    if checked is None:
        target_io = sessions.target_io()
        problems = check_target_files(target_io, planned.target_metadata_location, source_prefixes(item))
        if item.request.options.history == "all":
            to_source = to_source_map(copied.prefix_mappings)
            problems += dangling_versions(
                sessions.source_io(), target_io, planned.target_metadata_location, to_source
            )
        return problems
    if checked.error:
        raise ValidationFailedError(
            f"{planned.item.name}: the Glue job could not check the target's files: {checked.error}"
        )
    return checked.problems


def _catalog_problems(planned: PlanResult, sessions: Sessions) -> list[str]:
    """How the target's Glue table differs from the source's in what Register carries (an S3
    Tables target carries none: its table is its Iceberg metadata, compared above)."""
    item = planned.item
    if table_bucket.is_table_bucket(item):
        return []
    source = catalog.get_table(sessions.source.client("glue"), item.source_database, item.source_table)
    target = catalog.get_table(sessions.target.client("glue"), item.target_database, item.target_table)
    return catalog.metadata_differences(source, target)


def skipped(planned: PlanResult) -> TableOutcome:
    """The outcome of a table Plan chose to write nothing to: left alone, dry run, or in sync."""
    if planned.stopped:
        return TableOutcome(
            run_id=planned.item.run_id,
            table=planned.item.name,
            status=planned.stopped,
            target_metadata_location=planned.previous_target_metadata,
            error=stopped_error(planned.stop_type or planned.stopped, planned.stop_reason or planned.stopped),
            stranded=planned.stranded,
            **item_facts(planned.item),
        )
    status: Literal["dry_run", "in_sync"] = "dry_run" if planned.item.request.options.dry_run else "in_sync"
    return TableOutcome(
        run_id=planned.item.run_id,
        table=planned.item.name,
        status=status,
        target_metadata_location=planned.target_metadata_location,
        files_copied=planned.files_to_copy if status == "dry_run" else 0,
        bytes_copied=planned.bytes_to_copy if status == "dry_run" else 0,
        **item_facts(planned.item),
        orphans=planned.orphans,
        history_note=orphans_note(planned.item.request.options.history, planned.orphans),
    )


def _tier_left(asked: Tier, rows: RowsValidation | None) -> Tier:
    """What this Lambda validates: metadata when the Glue job compared the rows, a sample of files
    when it could not read them, else the tier asked."""
    if rows is None:
        return asked
    return "sample" if rows.skipped else "metadata"


def _tier_done(tier: str, notes: list[str], rows: RowsValidation | None) -> str:
    if rows is None:
        return "; ".join([tier, *notes[:3]])
    if rows.skipped:
        return f"{tier}; rows not compared in the Glue job: {rows.skipped}"
    return (
        f"rows (in the Glue job: {rows.snapshots_compared} snapshots, {rows.rows:,} rows, "
        f"{rows.files_read} scan tasks read, {rows.seconds:.1f} s)"
    )


def _validated_in(rows: RowsValidation | None) -> str:
    return "glue" if rows is not None and not rows.skipped else "lambda"


def _ledger_state(outcome: TableOutcome) -> str:
    if outcome.sync_again:
        return "SYNCING_AGAIN"
    return "VALIDATED" if outcome.status == "migrated" else outcome.status.upper()


def _with_warnings(facts: dict[str, Any], more: list[str]) -> dict[str, Any]:
    return facts | {"warnings": [*facts["warnings"], *more]}


def _on_journals(
    planned: PlanResult, sessions: Sessions, deps: Deps
) -> Callable[[Callable[..., list[str]]], list[str]]:
    """What calls `prune_target` or `unreached` on the table as synced: the journals of its syncs
    (read from the ledger now), its location, its current metadata and whether its history stays."""
    item = planned.item
    synced = deps.ledger.last_synced(item.target_location) or {}
    journals = [deps.artifacts.uri(key) for key in synced.get("journals", [])]

    def call(find: Callable[..., list[str]]) -> list[str]:
        return find(
            sessions.target_io(),
            deps.artifacts.io,
            journals,
            item.target_location,
            planned.target_metadata_location,
            keep_history=item.request.options.history == "all",
        )

    return call


def _unpruned(planned: PlanResult, sessions: Sessions, deps: Deps) -> list[str]:
    """An S3 Tables target is never pruned by deleting (its storage takes no DeleteObject): the
    outcome says what a Glue target would have pruned, and when the bucket's removal takes it."""
    keys = _on_journals(planned, sessions, deps)(unreached)
    if not keys:
        return []
    days = table_bucket.removal_days(sessions, planned.item)
    shown = ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")
    why = f"that the source expired ({shown}) and a Glue target would have pruned"
    return [table_bucket.files_left_note(len(keys), "the journals of this table's syncs", days, why)]


def _prune(planned: PlanResult, sessions: Sessions, deps: Deps) -> tuple[int, str | None, list[str]]:
    """Mirror the source's retention (icelake/migrate/prune.py says what may go). A failed prune
    does not undo a validated sync: the outcome says so, and the next run prunes again. Returns
    (files deleted, why the prune failed, what the outcome says of files left: S3 Tables)."""
    if table_bucket.is_table_bucket(planned.item):
        return 0, None, _unpruned(planned, sessions, deps)  # never by deleting
    on_journals = _on_journals(planned, sessions, deps)
    try:
        deleted = on_journals(prune_target)
    except Exception as exc:
        return 0, f"the sync is good, but pruning expired files failed ({exc}); the next run prunes again", []
    return len(deleted), None, []
