"""Small facts about a work item that several steps share (the owner mark and the prefix maps,
which an assessment needs too, are in icelake/request/target.py)."""

from __future__ import annotations

from typing import Any, Literal

from icelake import uris
from icelake.aws.ledger import Ledger
from icelake.migrate.journal import JOURNAL_NAME
from icelake.migrate.models import MigrationResult
from icelake.request.deps import Artifacts, Deps
from icelake.request.models import WorkItem
from icelake.request.target import athena_name
from icelake.workflow.models import PlanResult, TableOutcome


def item_facts(item: WorkItem, registered: dict[str, Any] | None = None) -> dict[str, Any]:
    """What every outcome of the item says of its target: its name, the earlier targets a changed
    rename left in place (never deleted: another name may be what readers use), and the warnings
    Register recorded in the ledger row `registered` (unmapped principals, data filters)."""
    warnings = [
        f"{earlier} is an earlier target of {item.name} (its target name has changed since); it was "
        "left as it is (icelake created it): drop it when nothing reads it any more"
        for earlier in item.earlier_targets
    ]
    warnings += (registered or {}).get("register_warnings", [])
    return {"target": item.target_name, "athena_name": athena_name(item), "warnings": warnings}


def copy_facts(item: WorkItem, planned: PlanResult, copied: MigrationResult) -> dict[str, Any]:
    """What an outcome after a copy (Validate's, a carry-over's) says of it: the run, the table,
    the target's new metadata and the copy's counts."""
    return {
        "run_id": item.run_id,
        "table": item.name,
        "target_metadata_location": planned.target_metadata_location,
        "files_copied": copied.files_copied,
        "files_verified": copied.files_verified,
        "bytes_copied": copied.bytes_copied,
        "files_rewritten": copied.files_rewritten,
        "files_skipped": copied.files_skipped,
    }


def source_prefixes(item: WorkItem) -> list[str]:
    """Where the source table's files live: nothing under these is ever written or deleted."""
    return uris.source_prefixes(
        item.source_metadata_location, (m.source for m in item.request.target.prefix_maps)
    )


def record_planned(
    ledger: Ledger, item: WorkItem, target_metadata: str, previous: str | None, existed: bool, engine: str
) -> None:
    """The table's PLANNED record: the source version pinned, the target's next and previous
    metadata, whether the target table existed, and the engine that copies it."""
    ledger.record_table(
        item.run_id,
        item.name,
        "PLANNED",
        source_metadata=item.source_metadata_location,
        target_metadata=target_metadata,
        previous_target_metadata=previous,
        target_table_existed=existed,
        engine=engine,
    )


def planned_result(
    deps: Deps,
    item: WorkItem,
    target_metadata: str,
    previous: str | None,
    existed: bool,
    engine: Literal["lambda", "glue", "none"],
    **fields: Any,
) -> PlanResult:
    """A table planned for a copy, by Plan or a carry-over: its PLANNED ledger record (record_planned)
    and the PlanResult with the same figures, where its journal and copy result go, and `fields`."""
    record_planned(deps.ledger, item, target_metadata, previous, existed, engine)
    journal_key = journal_key_of(item)
    return PlanResult(
        item=item,
        engine=engine,
        previous_target_metadata=previous,
        target_table_existed=existed,
        target_metadata_location=target_metadata,
        journal_key=journal_key,
        journal_uri=deps.artifacts.uri(journal_key),
        copy_result_uri=deps.artifacts.uri(Artifacts.key(item.run_id, item.name, "copy-result.json")),
        **fields,
    )


def journal_key_of(item: WorkItem) -> str:
    """The artifacts key of the table's journal in this run: every target key it writes."""
    return Artifacts.key(item.run_id, item.name, JOURNAL_NAME)


def record_outcome(ledger: Ledger, outcome: TableOutcome, state: str, **attrs: Any) -> None:
    """The table's last ledger record of the run carries its whole outcome (see reporting)."""
    ledger.record_table(outcome.run_id, outcome.table, state, outcome=outcome.model_dump_json(), **attrs)
