"""A promoted table in every run: its source compared with the version that was promoted (stranded
commits), and in a carry-over (mode carry_over) the stranded appends brought onto the target. Plan
decides and journals, Copy writes the files (`carry_copy`), Register moves the target's pointer
from the version the carry-over was built on (`carry_register`), Validate reads the new snapshot
back (`carried_outcome`), and Rollback undoes only what nothing else builds on (`carry_undo`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from pyiceberg.table import StaticTable

from icelake.aws import catalog
from icelake.aws.fileio import FileIO
from icelake.aws.session import pyiceberg_props
from icelake.errors import CarryRefusedError, ValidationFailedError
from icelake.migrate.cutover.carry import CarryPlan, carry_names, plan_carry, refusals, write_carry
from icelake.migrate.cutover.stranded import StrandedCommit, carried_ids, commits_after, stranded_message
from icelake.migrate.journal import read_journal, write_journal
from icelake.migrate.metadata_json import parse_metadata
from icelake.migrate.models import MigrationResult
from icelake.migrate.plan.target import table_prefix_map
from icelake.request.deps import Deps, Sessions
from icelake.request.models import WorkItem
from icelake.request.target import prefix_maps
from icelake.workflow import table_bucket
from icelake.workflow.models import PlanResult, TableOutcome
from icelake.workflow.steps.shared import (
    copy_facts,
    item_facts,
    journal_key_of,
    planned_result,
    record_outcome,
    source_prefixes,
)

MAX_COMMITS = 200  # a carry-over's commits per run, and those an outcome lists (payloads stay small)
BY_HAND = (
    'stop the writers that still commit to the source (docs/runbook.md "Cutover"); bring appends '
    "over with `icelake migrate carry-over --request FILE`; redo anything else on the target by hand "
    "(e.g. the same DELETE or MERGE), then decommission the source"
)


@dataclass(frozen=True)
class Promoted:
    """What a run does with a promoted table: report it (promoted, or stranded naming the commits,
    or refused by a carry-over), or carry its stranded appends (`carry`)."""

    status: Literal["promoted", "stranded", "failed"]
    why: str
    commits: list[StrandedCommit]
    carry: CarryPlan | None = None
    kind: str = ""  # the error type when it is not the status


def _read(io: FileIO, uri: str) -> dict[str, Any]:
    meta, _gz = parse_metadata(uri, io.read(uri))
    return dict(meta)


def _promoted_source(io: FileIO, uri: str | None) -> dict[str, Any] | None:
    """The source's metadata as it was promoted; None when the source no longer has that file."""
    if not uri:
        return None
    try:
        return _read(io, uri)
    except Exception:  # deleted since (write.metadata.delete-after-commit): fall back on time
        return None


def promoted_state(
    item: WorkItem, sessions: Sessions, synced: dict[str, Any], previous: str | None
) -> Promoted:
    """Compare the source's current metadata with the version that was promoted; in a carry-over,
    plan what can be carried. Reads three metadata.json files, and only when the source moved."""
    promoted_at = str(synced["promoted_at"])
    target = item.target_name
    why = (
        f"{target} was promoted at {promoted_at} by run {synced.get('promoted_by')}: it is the "
        "table's home now, and icelake writes nothing to it"
    )
    moved = item.source_metadata_location != synced.get("source_metadata")
    if item.source_dropped or not moved:
        if item.request.mode == "carry_over":
            why += "; no commit was made to the source after promotion: nothing to carry"
        return Promoted("promoted", why, [])
    src_io, dst_io = sessions.source_io(), sessions.target_io()
    current = _read(src_io, item.source_metadata_location)
    target_meta = _read(dst_io, previous) if previous else {}
    carried = carried_ids(target_meta) | {int(i) for i in synced.get("carried", [])}
    promoted = _promoted_source(src_io, synced.get("source_metadata"))
    commits = commits_after(promoted, current, promoted_at, carried)
    if not commits:
        note = f"; the {len(carried)} commit(s) made to the source since were carried over" if carried else ""
        return Promoted("promoted", why + note, [])
    message = stranded_message(item.name, target, promoted_at, commits)
    if item.request.mode != "carry_over":
        return Promoted("stranded", message, commits[:MAX_COMMITS])
    if previous is None:
        return Promoted("stranded", message + f"; {target} no longer exists: nothing to carry onto", commits)
    return _carry_or_refuse(item, sessions, commits[:MAX_COMMITS], current, previous)


def _carry_or_refuse(
    item: WorkItem, sessions: Sessions, commits: list[StrandedCommit], current: dict[str, Any], previous: str
) -> Promoted:
    source = StaticTable.from_metadata(
        item.source_metadata_location, properties=pyiceberg_props(sessions.source)
    )
    target = StaticTable.from_metadata(previous, properties=pyiceberg_props(sessions.target))
    refused = refusals(commits, source.metadata, target.metadata)
    plan = None
    if not refused:
        mapping = table_prefix_map(current, prefix_maps(item), item.target_location)
        try:
            plan = plan_carry(source, target, commits, mapping, seed=f"{item.run_id}/{item.name}")
        except CarryRefusedError as exc:
            refused = [str(exc)]
    if refused:
        why = (
            f"carry-over of {item.name} refused, nothing was written: it carries appends only, and "
            + "; ".join(refused[:20])
        )
        return Promoted("stranded", why, commits, kind="CarryOverRefused")
    return Promoted("stranded", "", commits, carry=plan)


def carry_plan(item: WorkItem, deps: Deps, carry: CarryPlan, previous: str, target_io: FileIO) -> PlanResult:
    """The Plan step's result for a carry-over, its journal written first: every key it will write
    that is not at the target yet, and those this run's earlier attempt journaled."""
    journal_uri = deps.artifacts.uri(journal_key_of(item))
    try:
        earlier = set(read_journal(deps.artifacts.io, journal_uri))
    except Exception:  # no earlier attempt of this run
        earlier = set()
    keys = sorted(k for k in carry.written() if k in earlier or target_io.stat(k) is None)
    write_journal(deps.artifacts.io, journal_uri, keys)
    size = sum(f.file_size_in_bytes for f in carry.files)
    files = len(carry.files)
    return planned_result(
        deps,
        item,
        carry.metadata,
        previous,
        True,
        "lambda",
        files_planned=files,
        bytes_planned=size,
        files_to_copy=files,
        bytes_to_copy=size,
        stranded=list(carry.commits),
    )


def _tables(planned: PlanResult, sessions: Sessions) -> tuple[StaticTable, StaticTable]:
    item = planned.item
    source = StaticTable.from_metadata(
        item.source_metadata_location, properties=pyiceberg_props(sessions.source)
    )
    target = StaticTable.from_metadata(
        planned.previous_target_metadata or "", properties=pyiceberg_props(sessions.target)
    )
    return source, target


def _replanned(
    planned: PlanResult, sessions: Sessions, source: StaticTable, target: StaticTable
) -> CarryPlan:
    """The carry-over Plan decided, made again from the same pinned versions (the same keys)."""
    item = planned.item
    meta = _read(sessions.source_io(), item.source_metadata_location)
    mapping = table_prefix_map(meta, prefix_maps(item), item.target_location)
    plan = plan_carry(source, target, planned.stranded, mapping, seed=f"{item.run_id}/{item.name}")
    if plan.metadata != planned.target_metadata_location:
        raise CarryRefusedError(f"the carry-over of {item.name} is not the one planned; nothing was written")
    return plan


def carry_copy(planned: PlanResult, deps: Deps) -> MigrationResult:
    """The Copy step of a carry-over: the data files, then the new manifests, list and metadata."""
    started = time.monotonic()
    item = planned.item
    sessions = deps.sessions(item.request)
    deps.ledger.record_table(item.run_id, item.name, "CARRYING")
    source, target = _tables(planned, sessions)
    plan = _replanned(planned, sessions, source, target)
    journaled = set(read_journal(deps.artifacts.io, planned.journal_uri))
    done = write_carry(plan, target, sessions.source_io(), sessions.target_io(), journaled)
    return MigrationResult(
        source_metadata_location=item.source_metadata_location,
        target_metadata_location=plan.metadata,
        table_uuid=str(target.metadata.table_uuid),
        format_version=target.metadata.format_version,
        dry_run=False,
        prefix_mappings=[],
        snapshots=1,
        metadata_files=1,
        files_planned=len(plan.written()),
        bytes_planned=sum(f.file_size_in_bytes for f in plan.files),
        files_copied=done.files_copied,
        files_verified=done.files_verified,
        bytes_copied=done.bytes_copied,
        files_rewritten=len(plan.written()) - len(plan.files),
        files_skipped=done.files_skipped,
        elapsed_seconds=round(time.monotonic() - started, 3),
        requests=sessions.requests.counts(),
    )


def carry_register(planned: PlanResult, deps: Deps) -> None:
    """Move the target's pointer from the version the carry-over was built on to its new one; a
    writer's commit since then fails it (nothing of theirs is overwritten: Rollback, run again)."""
    item = planned.item
    sessions = deps.sessions(item.request)
    if table_bucket.is_table_bucket(item):  # from the pointer and version token Plan read
        new, previous = planned.target_metadata_location, planned.previous_target_metadata
        table_bucket.register(item, sessions, new, previous, planned.target_version)
        deps.ledger.record_table(item.run_id, item.name, "REGISTERED")
        return
    glue = sessions.target.client("glue")
    catalog.move_pointer(
        glue,
        item.target_database,
        item.target_table,
        planned.target_metadata_location,
        planned.previous_target_metadata or "",
    )
    deps.ledger.record_table(item.run_id, item.name, "REGISTERED")


def carried_outcome(planned: PlanResult, deps: Deps) -> TableOutcome:
    """Validate of a carry-over: the new snapshot read back names exactly the planned files, each at
    the target with its recorded size, none under the source; then the table stays promoted."""
    item = planned.item
    sessions = deps.sessions(item.request)
    target_io = sessions.target_io()
    new = StaticTable.from_metadata(
        planned.target_metadata_location, properties=pyiceberg_props(sessions.target)
    )
    snapshot = new.metadata.current_snapshot()
    if snapshot is None:
        raise ValidationFailedError(f"{item.name}: the carried snapshot is not the target's current one")
    files = [
        entry.data_file
        for manifest in snapshot.manifests(new.io)
        if manifest.added_snapshot_id == snapshot.snapshot_id
        for entry in manifest.fetch_manifest_entry(new.io, discard_deleted=True)
    ]
    rows = sum(f.record_count for f in files)
    expected = sum(c.added_records for c in planned.stranded)
    problems = [f"the carried snapshot holds {rows} rows, the source's commits added {expected}"] * (
        rows != expected
    )
    sources = source_prefixes(item)
    for data_file in files:
        info = target_io.stat(data_file.file_path)
        if any(data_file.file_path.startswith(p) for p in sources):
            problems.append(f"{data_file.file_path} is under the source")
        elif info is None or info.size != data_file.file_size_in_bytes:
            problems.append(f"{data_file.file_path}: missing or not {data_file.file_size_in_bytes} bytes")
    if problems:
        raise ValidationFailedError(f"{item.name}: the carry-over is not what was planned: {problems[:10]}")
    ids = [c.snapshot_id for c in planned.stranded]
    deps.ledger.add_carried(item.target_location, ids)
    copied = MigrationResult.model_validate_json(deps.artifacts.io.read(planned.copy_result_uri))
    outcome = TableOutcome(
        **copy_facts(item, planned, copied),
        status="promoted",
        snapshots_validated=1,
        validation=f"carried snapshot {snapshot.snapshot_id} read back: {len(files)} files, {rows} rows",
        engines={"plan": "lambda", "copy": "lambda", "validate": "lambda"},
        carried=ids,
        carried_rows=rows,
        target_snapshot_id=snapshot.snapshot_id,
        seconds=copied.elapsed_seconds,
        **item_facts(item),
    )
    record_outcome(deps.ledger, outcome, "CARRIED")
    deps.ledger.release_table(item.target_location, item.run_id)
    return outcome


def carry_undo(planned: PlanResult, deps: Deps, sessions: Sessions) -> tuple[int, str | None]:
    """Rollback of a carry-over: its journaled keys deleted and the pointer put back where it was,
    unless a writer has committed on top of the carried snapshot (then both stay: their commit
    reads those files, and the outcome says so). Returns (keys removed, why nothing was)."""
    item = planned.item
    previous = planned.previous_target_metadata or ""
    if table_bucket.is_table_bucket(item):
        return 0, _carry_undo_in_table_bucket(planned, deps, sessions)
    glue = sessions.target.client("glue")
    table = catalog.get_table(glue, item.target_database, item.target_table)
    now = catalog.metadata_location(table) if table else None
    ours = planned.target_metadata_location
    if now is not None and now not in (ours, previous):
        _uuid, snapshot_id, _list, _meta = carry_names(f"{item.run_id}/{item.name}", previous)
        later = _read(sessions.target_io(), now)
        if any(int(s["snapshot-id"]) == snapshot_id for s in later.get("snapshots", [])):
            return 0, (
                f"a writer committed to {item.target_name} on top of the carried snapshot {snapshot_id}: "
                "it and its files were left as they are"
            )
    if now == ours:
        catalog.move_pointer(glue, item.target_database, item.target_table, previous, ours)
    keys = read_journal(deps.artifacts.io, deps.artifacts.uri(planned.journal_key))
    sources = source_prefixes(item)
    return sessions.target_io().delete_many(
        [k for k in keys if not any(k.startswith(p) for p in sources)]
    ), None


def _carry_undo_in_table_bucket(planned: PlanResult, deps: Deps, sessions: Sessions) -> str:
    """A carry-over's rollback on an S3 Tables target: the pointer put back if it is still the
    carry's (a writer's commit since is left), and its files left to the bucket's removal (its
    storage takes no DeleteObject), named."""
    item = planned.item
    journal = deps.artifacts.uri(planned.journal_key)
    journaled = read_journal(deps.artifacts.io, journal)
    plan = (planned.target_metadata_location, planned.previous_target_metadata, True)
    undone = table_bucket.undo(item, sessions, deps.ledger, plan, journaled)
    days = table_bucket.removal_days(sessions, item)
    left = table_bucket.files_left_note(undone.files_left, journal, days, "the carry-over wrote")
    return f"the target table {item.target_name}: {undone.action}; {left}"
