"""Cutover: after a validated sync, promote the target if the source did not move meanwhile, or
ask the state machine to sync again."""

from __future__ import annotations

from datetime import UTC, datetime

from icelake.aws import catalog
from icelake.aws.fileio import FileIO
from icelake.errors import ValidationFailedError
from icelake.migrate.metadata_json import parse_metadata
from icelake.request.deps import Deps
from icelake.workflow import table_bucket
from icelake.workflow.failures import TableError
from icelake.workflow.models import PlanResult, TableOutcome


def _current_snapshot(io: FileIO, metadata_location: str) -> int | None:
    meta, _gz = parse_metadata(metadata_location, io.read(metadata_location))
    snapshot = meta.get("current-snapshot-id")
    return int(snapshot) if snapshot is not None and snapshot != -1 else None


def cutover(planned: PlanResult, deps: Deps, synced: TableOutcome) -> TableOutcome:
    """The sync just validated; promote the target if the source did not move meanwhile, else ask
    the state machine to sync again (at most `cutover_attempts` syncs in all)."""
    item = planned.item
    options = item.request.options
    sessions = deps.sessions(item.request)
    source = catalog.get_table(sessions.source.client("glue"), item.source_database, item.source_table)
    now_at = catalog.metadata_location(source) if source else None
    if now_at != item.source_metadata_location:
        syncs = deps.ledger.count_cutover_attempt(item.run_id, item.name)
        if syncs < options.cutover_attempts:
            return synced.model_copy(update={"sync_again": True})
        return synced.model_copy(
            update={
                "status": "failed",
                "error": TableError(
                    type="SourceMoved",
                    message=f"the source {item.name} moved during each of {syncs} syncs (now {now_at}); "
                    "the target is a good copy of an earlier version and was not promoted",
                    step="Validate",
                    hint="stop the source's writers, then run the cutover again",
                ),
            }
        )
    source_snapshot = _current_snapshot(sessions.source_io(), item.source_metadata_location)
    target_snapshot = _current_snapshot(sessions.target_io(), planned.target_metadata_location)
    if source_snapshot != target_snapshot:
        raise ValidationFailedError(
            f"{item.name}: the target's current snapshot {target_snapshot} is not the source's "
            f"{source_snapshot}; not promoted"
        )
    promoted_at = datetime.now(UTC).isoformat(timespec="seconds")
    kept: list[str] = []  # an S3 Tables target: the maintenance set now, and what it keeps
    if table_bucket.is_table_bucket(item):
        kept.append(table_bucket.set_cutover_maintenance(item, sessions))
        table_bucket.promote(item, sessions, promoted_at)
    else:
        catalog.set_parameters(
            sessions.target.client("glue"),
            item.target_database,
            item.target_table,
            {catalog.PROMOTED_PARAMETER: promoted_at},
        )
    if options.mark_source:
        catalog.set_parameters(
            sessions.source.client("glue"),
            item.source_database,
            item.source_table,
            {catalog.PROMOTED_TO_PARAMETER: f"{item.request.target.account_id}:{item.target_location}"},
        )
    deps.ledger.mark_promoted(item.target_location, item.run_id, promoted_at)
    return synced.model_copy(
        update={
            "status": "promoted",
            "target_metadata_location": planned.target_metadata_location,
            "source_snapshot_id": source_snapshot,
            "target_snapshot_id": target_snapshot,
            "warnings": [*synced.warnings, *kept],
        }
    )
