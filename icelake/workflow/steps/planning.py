"""Plan: pin the source version, make sure the target is icelake's to write and nobody else's
run holds it, list what must be copied, journal every key the copy may create, and choose the
engine (Lambda, Glue, or none)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from icelake.assess.estimate.engine_choice import PLANNED_BY_GLUE, CopyWork, Thresholds, choose_engine
from icelake.assess.estimate.expected import expected_requests
from icelake.aws import catalog
from icelake.aws.fileio import FileIO
from icelake.aws.request_count import RequestCount, subtracted
from icelake.migrate.copy.engine import rewritten_files
from icelake.migrate.journal import new_target_keys, write_journal
from icelake.migrate.models import Orphans
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.reads import read_metadata
from icelake.migrate.plan.target import external_mapped, table_prefix_map
from icelake.migrate.progress import NoProgress
from icelake.migrate.settings import EngineSettings
from icelake.migrate.table_size import estimate_size
from icelake.request.deps import Deps, Sessions
from icelake.request.models import WorkItem
from icelake.request.sync import since_of, with_sync_base
from icelake.request.target import foreign_commit, owner_of, prefix_maps, target_io
from icelake.throughput import ThroughputModel
from icelake.workflow import table_bucket
from icelake.workflow.inputs import PlanInput
from icelake.workflow.models import PlanResult
from icelake.workflow.steps.carrying import carry_plan, promoted_state
from icelake.workflow.steps.shared import journal_key_of, planned_result

LOCK_LEASE_SECONDS = 24 * 3600  # longer than any table's copy; only a dead run's hold ever expires


def plan(given: PlanInput, deps: Deps) -> PlanResult:
    """The plan, with the step's own account: its S3 requests and seconds."""
    started = time.monotonic()
    sessions = deps.sessions(given.item.request)
    planned = _plan(given.item, deps, sessions)
    seconds = round(time.monotonic() - started, 3)
    return planned.model_copy(update={"requests": sessions.requests.counts(), "seconds": seconds})


def _plan(item: WorkItem, deps: Deps, sessions: Sessions) -> PlanResult:
    if item.request.mode == "cutover" and not item.source_dropped:
        item = _with_current_source(item, sessions)
    ledger = deps.ledger
    target_name = f"{item.target_database}.{item.target_table}"
    version = None
    if table_bucket.is_table_bucket(item):  # found or made, and where its storage is (the location)
        writes = item.request.mode in ("full", "incremental", "cutover") and not item.request.options.dry_run
        writes = writes and not item.source_dropped  # a dropped source's target is reported, not made
        found = table_bucket.resolve(item, sessions, ledger, create=writes)
        item, existed, previous, version = found.item, found.existed, found.previous, found.version
    else:
        existing = catalog.get_table(sessions.target.client("glue"), item.target_database, item.target_table)
        catalog.check_target_is_ours(existing, owner_of(item), target_name)
        previous = catalog.metadata_location(existing) if existing else None
        existed = existing is not None
    synced = ledger.last_synced(item.target_location)
    if synced and synced.get("promoted_at"):
        promoted = _promoted(item, deps, sessions, synced, previous)
        return promoted.model_copy(update={"target_version": version})  # a carry commits from it
    if item.request.mode == "carry_over":
        why = (
            f"{target_name} was never promoted: a carry-over brings only commits made to the source "
            "after a cutover; sync the table (mode incremental) or cut it over"
        )
        return _stopped(item, deps, "failed", why, previous, existed, kind="NotPromoted")
    stop = _busy(item, deps)
    if stop is not None:
        return _stopped(item, deps, stop[0], stop[1], previous, existed)
    dst_io = target_io(item, sessions)
    stop = _dropped_or_diverged(item, dst_io, synced, previous, target_name)
    if stop is not None:
        return _stopped(item, deps, stop[0], stop[1], previous, existed)
    if version is not None and not item.request.options.dry_run:  # a table bucket's table, held
        table_bucket.pause_maintenance(item, sessions, ledger)
    src_io = sessions.source_io()
    before = sessions.requests.counts()
    source = read_metadata(src_io, item.source_metadata_location)
    item = with_sync_base(item, synced, previous, source[0], dst_io, src_io)
    journal_uri = deps.artifacts.uri(journal_key_of(item))
    figures = _planned_by_glue(item, source[0], journal_uri, deps)
    if figures is None:
        figures = _plan_here(item, src_io, dst_io, source, journal_uri, deps, sessions.requests, before)
    engine, rule = _engine(item, figures, synced, previous)
    return planned_result(
        deps,
        item,
        figures.target_metadata,
        previous,
        existed,
        engine,
        engine_rule=rule,
        target_version=version,
        expected_requests=figures.expected_requests or {},
        **figures.result_fields(),
    )


Stopped = Literal["diverged", "source_dropped", "busy", "promoted", "stranded", "failed"]


def _promoted(
    item: WorkItem, deps: Deps, sessions: Sessions, synced: dict[str, Any], previous: str | None
) -> PlanResult:
    """A promoted table: reported promoted, or stranded naming the source's commits since
    promotion; in a carry-over, claimed and planned when its stranded commits can be carried."""
    found = promoted_state(item, sessions, synced, previous)
    if found.carry is None or previous is None:
        stopped = _stopped(
            item, deps, found.status, found.why, previous, previous is not None, kind=found.kind
        )
        return stopped.model_copy(update={"stranded": found.commits})
    holder = claim(item, deps)
    if holder:
        return _stopped(item, deps, "busy", holder, previous, True)
    return carry_plan(item, deps, found.carry, previous, sessions.target_io())


def _busy(item: WorkItem, deps: Deps) -> tuple[Stopped, str] | None:
    """Why the table is left alone before anything is read: another run holds it; else None, with
    the table claimed for this run (a promoted table never gets here: `_promoted`)."""
    holder = claim(item, deps)
    if holder:
        return "busy", holder
    return None


def _dropped_or_diverged(
    item: WorkItem, dst_io: FileIO, synced: dict[str, Any] | None, previous: str | None, target_name: str
) -> tuple[Stopped, str] | None:
    """Why the claimed table is left alone: its source is gone, or someone else committed to its
    target since icelake last registered it; else None."""
    if item.source_dropped:
        why = (
            f"{item.name} no longer exists in account {item.request.source.account_id}; its target "
            f"{target_name} (icelake created it) was left as it is: keep it as the table's new home, or "
            "drop it once nothing reads it"
        )
        return "source_dropped", why
    diverged = foreign_commit(dst_io, synced, previous)
    if diverged:
        return "diverged", diverged
    return None


def _planned_by_glue(item: WorkItem, meta: dict[str, Any], journal_uri: str, deps: Deps) -> Figures | None:
    """The figures of a table the Glue job plans (its snapshot summaries put it over a Glue
    threshold, and this is no dry run), or None: it is planned here."""
    options = item.request.options
    size = estimate_size(meta)
    # An incremental sync is planned here whatever the table's size: its plan reads the change.
    glue_sized = (
        item.sync_from is None
        and size is not None
        and (size.files > options.glue_threshold_files or size.bytes > options.glue_threshold_bytes)
    )
    if glue_sized and size is not None and not options.dry_run:
        # Planning grows with the table: the Glue job plans it, and journals what it will create
        # before it copies. Until then the journal is empty: a failure before the job wrote its
        # own leaves nothing of this run's to remove.
        mapped = table_prefix_map(meta, prefix_maps(item), item.target_location)
        target_metadata = mapped.map(item.source_metadata_location) or ""
        write_journal(deps.artifacts.io, journal_uri, [])
        return Figures(
            "glue",
            size.files,
            size.bytes,
            size.files,
            size.bytes,
            target_metadata,
            mapped_outside=tuple(external_mapped(mapped)),
        )
    return None


def _engine(
    item: WorkItem, figures: Figures, synced: dict[str, Any] | None, previous: str | None
) -> tuple[Literal["lambda", "glue", "none"], str | None]:
    """Where the table copies, and by which rule: nowhere on a dry run or when the target is
    already in sync with the pinned source (incremental, cutover); in the Glue job when the job
    plans it; else as `choose_engine` says of what will be copied (an incremental sync's increment):
    over a Glue threshold, or a Lambda copy estimated past 60 % of its timeout, goes to Glue."""
    options = item.request.options
    in_sync = (
        item.request.mode in ("incremental", "cutover")
        and synced is not None
        and synced.get("source_metadata") == item.source_metadata_location
        and previous == figures.target_metadata
    )
    if options.dry_run or in_sync:
        return "none", None
    if figures.planned_in == "glue":
        return "glue", PLANNED_BY_GLUE
    work = CopyWork(
        figures.files_to_copy,
        figures.bytes_to_copy,
        (figures.expected_requests or {}).get("copy", {}),
        figures.busiest,
    )
    chosen = choose_engine(work, Thresholds.of(options), options.throughput or ThroughputModel())
    return chosen.engine, chosen.rule


@dataclass(frozen=True)
class Figures:
    """What planning found (or, for a table the Glue job plans, the summaries' upper bounds)."""

    planned_in: Literal["lambda", "glue"]
    files_planned: int
    bytes_planned: int
    files_to_copy: int
    bytes_to_copy: int
    target_metadata: str
    orphans: Orphans = field(default_factory=Orphans)  # known when planned here
    # The requests the copy and Validate's file check will send (`assess.expected.expected_requests`)
    expected_requests: dict[str, dict[str, int]] | None = None
    busiest: float = 1.0  # the copies' busiest prefix's share of them (Copies.prefix_spread)
    # Of a full plan made here, what the run's own estimate times besides the requests: the
    # entries of the manifests it read (TablePlan.manifest_entries) and the snapshots Validate
    # compares. An incremental plan's are left at 0 (the estimate then times its requests only).
    manifest_entries: int = 0
    snapshots: int = 0
    # Into a table bucket: where the prefixes outside the source's location were mapped (a line
    # each, `external_mapped`); the Glue job's own plan may find more than these.
    mapped_outside: tuple[str, ...] = ()

    def result_fields(self) -> dict[str, Any]:
        """What the plan's result takes from the figures, by the same names."""
        return {name: getattr(self, name) for name in _RESULT_FIELDS}


# Figures' fields that PlanResult holds as they are.
_RESULT_FIELDS = (
    "planned_in",
    "files_planned",
    "bytes_planned",
    "files_to_copy",
    "bytes_to_copy",
    "orphans",
    "manifest_entries",
    "snapshots",
    "mapped_outside",
)


def _plan_here(
    item: WorkItem,
    src_io: FileIO,
    dst_io: FileIO,
    source: tuple[dict[str, Any], bool],
    journal_uri: str,
    deps: Deps,
    requests: RequestCount,
    before: dict[str, int],
) -> Figures:
    """The whole plan, in this Lambda, from the source metadata Plan has read; the journal is
    written before the copy starts: what rollback may delete, should anything fail later.
    `before`: the step's requests before it read the source metadata (the Copy step reads it and
    plans again: what this sent since is what that will send first)."""
    table_plan = build_plan(
        item.source_metadata_location,
        item.target_location,
        prefix_maps(item),
        src_io,
        dst_io,
        settings=EngineSettings(
            overwrite=False,
            workers=16,
            progress=NoProgress(),
            history=item.request.options.history,
            since=since_of(item),
        ),
        source=source,
    )
    replanned = subtracted(requests.counts(), before)
    new_keys = new_target_keys(table_plan, dst_io)
    write_journal(deps.artifacts.io, journal_uri, new_keys)
    # The copies are all new keys; the other new keys are the rewritten files not there yet. A
    # re-run's target holds every rewritten file: the copy asks of each and writes none.
    present = rewritten_files(table_plan) - (len(new_keys) - len(table_plan.copies))
    return Figures(
        "lambda",
        table_plan.files_planned,
        table_plan.bytes_planned,
        len(table_plan.copies),
        sum(t.info.size for t in table_plan.copies),
        table_plan.target_metadata,
        table_plan.orphans,
        expected_requests(
            table_plan,
            item.target_location,
            replanned,
            prune=item.request.options.prune,
            present=present,
        ),
        table_plan.copies.prefix_spread()[1] if table_plan.copies else 1.0,
        table_plan.manifest_entries() if table_plan.sync == "full" else 0,
        len(source[0].get("snapshots") or []) if table_plan.sync == "full" else 0,
        tuple(external_mapped(table_plan.prefix_map)),
    )


def _with_current_source(item: WorkItem, sessions: Sessions) -> WorkItem:
    """A cutover syncs to the source as it is now, not as inventory pinned it: a sync that runs
    again because the source moved must catch up with the move."""
    table = catalog.get_table(sessions.source.client("glue"), item.source_database, item.source_table)
    location = catalog.metadata_location(table) if table else None
    if location is None:
        return item
    return item.model_copy(update={"source_metadata_location": location})


def claim(item: WorkItem, deps: Deps) -> str | None:
    """Take the table for this run; None when taken, else why another run has it (the Plan step
    and a repair's writes take it alike)."""
    ledger = deps.ledger
    holder = ledger.claim_table(item.target_location, item.run_id, item.execution_arn, LOCK_LEASE_SECONDS)
    if holder is None:
        return None
    other = str(holder.get("run_id"))
    holder_arn = holder.get("execution_arn")
    if holder_arn:  # a run that has ended (failed, aborted, timed out) holds nothing any more
        status = deps.client("stepfunctions").describe_execution(executionArn=holder_arn)["status"]
        if status != "RUNNING" and ledger.take_over_table(
            item.target_location, item.run_id, item.execution_arn, LOCK_LEASE_SECONDS, other
        ):
            return None
    claimed = datetime.fromtimestamp(int(holder.get("claimed_at", 0)), UTC).isoformat(timespec="seconds")
    return (
        f"run {other} has been working on {item.target_location} since {claimed}; this run left the "
        "table alone: run it again when that run has ended"
    )


def _stopped(
    item: WorkItem,
    deps: Deps,
    status: Stopped,
    why: str,
    current: str | None,
    existed: bool,
    kind: str = "",
) -> PlanResult:
    """The table is left alone: nothing is written, so there is nothing to roll back. `kind`: the
    error's type when it is not the state."""
    deps.ledger.record_table(
        item.run_id, item.name, status.upper(), error=why, previous_target_metadata=current
    )
    return PlanResult(
        item=item,
        engine="none",
        files_planned=0,
        bytes_planned=0,
        files_to_copy=0,
        bytes_to_copy=0,
        previous_target_metadata=current,
        target_table_existed=existed,
        target_metadata_location=current or "",
        journal_key=journal_key_of(item),  # never written: nothing to undo
        copy_result_uri="",
        stopped=status,
        stop_reason=why,
        stop_type=kind or None,
    )
