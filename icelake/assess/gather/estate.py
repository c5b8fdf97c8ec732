"""An estate's assessment from a migration request: the tables `icelake migrate start` would move
(the Inventory step's own selection, icelake/request/selection.py), each assessed with what the
workflow's steps know of its target (the target catalog and the ledger, checked as the Plan step
checks them: icelake/request/target.py). `icelake assess --request` and the workflow's Assess
step both run `assess_item`, so the two can never assess differently."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any, cast

from icelake.assess.estimate.cost import SYNC_DAYS, regions_of
from icelake.assess.estimate.engine_choice import Thresholds
from icelake.assess.estimate.model import ThroughputModel
from icelake.assess.estimate.prices import PriceTable
from icelake.assess.gather.assessment import Settings, assemble, assess_table
from icelake.assess.gather.buckets import BucketReads, bucket_findings
from icelake.assess.gather.lending import EstateClients
from icelake.assess.gather.table_bucket import BucketRemovals, Target, new_table_io, read_target, table_keeps
from icelake.assess.schema import Assessment, Finding, TableAssessment
from icelake.aws import catalog
from icelake.aws.fileio import FileIO, S3FileIO
from icelake.errors import IcelakeError
from icelake.migrate.plan.reads import read_metadata
from icelake.objects.model import objects_by_kind
from icelake.objects.survey import check_reads, survey, target_names
from icelake.request.deps import Deps
from icelake.request.models import MigrationRequest, WorkItem
from icelake.request.schedule import DEFAULT_SYNC_SCHEDULE
from icelake.request.selection import work_items
from icelake.request.target import foreign_commit, owner_of, prefix_maps


def settings_for(
    request: MigrationRequest,
    prices: PriceTable,
    *,
    sync_days: float = SYNC_DAYS,
    model: ThroughputModel | None = None,
    now: datetime | None = None,
    sync_interval: str | None = None,
) -> Settings:
    """The request's thresholds, concurrency, throughput model and sync interval (`model` and
    `sync_interval` win over the request's); cross-region when it names two regions."""
    source_region, target_region = regions_of(request)
    options = request.options
    return Settings(
        prices=prices,
        model=model or options.throughput or ThroughputModel(),
        glue_threshold_files=options.glue_threshold_files,
        glue_threshold_bytes=options.glue_threshold_bytes,
        thresholds_explicit=Thresholds.of(options).explicit,
        verify_glue_threshold_files=options.verify_glue_threshold_files,
        concurrency=options.concurrency,
        prune=options.prune,
        history=options.history,
        sync_days=sync_days,
        sync_interval=sync_interval or options.sync_interval or DEFAULT_SYNC_SCHEDULE,
        cross_region=bool(source_region and target_region and source_region != target_region),
        s3tables=request.target.kind == "s3tables",
        now=now or datetime.now(UTC),
    )


def assess_request(
    request: MigrationRequest,
    deps: Deps,
    settings: Settings,
    on_table: Callable[[TableAssessment, int, int], None] | None = None,
    concurrency: int = 1,
) -> Assessment:
    """Every table the request selects, `concurrency` at a time on threads sharing one set of
    sessions and clients (EstateClients); `on_table(assessed, done, total)` after each, in the
    order they end. The assessment lists the tables in the selection's order whatever the
    concurrency, and each table's figures are its own (its requests counted on the clients it
    holds), so the output is the same for any concurrency."""
    items = [item for item in work_items(request, deps) if not item.source_dropped]
    clients = EstateClients(deps)
    buckets, removals = BucketReads(), BucketRemovals()
    tables: list[TableAssessment | None] = [None] * len(items)
    with ThreadPoolExecutor(max(1, min(concurrency, len(items) or 1)), "icelake-assess") as pool:
        futures = {
            pool.submit(assess_item, item, deps, settings, clients, buckets, removals): i
            for i, item in enumerate(items)
        }
        try:
            for done, future in enumerate(as_completed(futures), 1):
                tables[futures[future]] = future.result()
                if on_table is not None:
                    on_table(future.result(), done, len(items))
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # the first failure ends the assessment
            raise
    assessed = assemble([t for t in tables if t is not None], settings, scope_of(request))
    return with_objects(assessed, request, deps, items)


def with_objects(
    assessed: Assessment, request: MigrationRequest, deps: Deps, items: list[WorkItem]
) -> Assessment:
    """The assessment with every other catalog entry of the selection classified, and each view
    that the run could not create named (it reads what is neither migrated nor on the target)."""
    sessions = deps.sessions(request)
    plan = survey(request, sessions, {(i.source_database, i.source_table) for i in items})
    needed = {db for c in plan.carries for db, _ in c.needs}
    available = target_names(sessions.target.client("glue"), needed)
    check_reads(plan, available | {(i.target_database, i.target_table) for i in items})
    objects = list(plan.objects.values())
    return assessed.model_copy(update={"objects": objects, "objects_by_kind": objects_by_kind(objects)})


def default_concurrency() -> int:
    """Tables assessed at once when --concurrency is not given: four a core (a small table's
    assessment mostly waits on its requests; past that the interpreter's lock binds, botocore
    spending 2-3 ms of CPU a request), at most 16, which keeps the source's Glue and S3 well
    inside their rates (each table sends a few Glue calls and tens of S3 requests, spread over
    its own prefix)."""
    return max(2, min(16, 4 * (os.cpu_count() or 1)))


def scope_of(request: MigrationRequest) -> dict[str, Any]:
    return {
        "source_account": request.source.account_id,
        "target_account": request.target.account_id,
        "target": request.target.table_bucket_arn
        if request.target.kind == "s3tables"
        else f"s3://{request.target.bucket}/{request.target.prefix}".rstrip("/"),
        "selection": json.loads(request.selection.model_dump_json()),
        "mode": request.mode,
    }


def assess_item(
    item: WorkItem,
    deps: Deps,
    settings: Settings,
    clients: EstateClients | None = None,
    buckets: BucketReads | None = None,
    removals: BucketRemovals | None = None,
) -> TableAssessment:
    """One work item's assessment; with `clients`, read through the sessions and clients they lend
    (an estate's tables), else through sessions of its own (the workflow's Assess step). The
    buckets' settings are compared too (icelake/assess/gather/buckets.py), each bucket read once per
    `buckets` (and each table bucket's unreferenced-file removal once per `removals`)."""
    if item.request.target.kind == "s3tables":
        return _in_table_bucket(item, deps, settings, clients, removals or BucketRemovals())
    buckets = buckets or BucketReads()
    if clients is None:
        sessions = deps.sessions(item.request)
        findings = target_findings(item, deps, sessions.target.client("glue"), sessions.target_io())
        blocked, warned = bucket_findings(item, sessions, buckets)
        assessed = _assessed(item, (sessions.source_io(), sessions.target_io()), settings, findings + blocked)
    else:
        with clients.lent(item.request) as lent:
            findings = target_findings(item, deps, lent.target_glue, lent.findings_io)
            blocked, warned = bucket_findings(item, clients.sessions(item.request), buckets)
            assessed = _assessed(item, (lent.source_io, lent.target_io), settings, findings + blocked)
    return assessed.model_copy(update={"warnings": [*assessed.warnings, *warned]}) if warned else assessed


def _assessed(
    item: WorkItem, ios: tuple[FileIO, FileIO], settings: Settings, findings: list[Finding]
) -> TableAssessment:
    return assess_table(
        item.name,
        item.source_metadata_location,
        item.target_location,
        prefix_maps(item),
        ios[0],
        ios[1],
        settings,
        findings=findings,
    )


def target_findings(item: WorkItem, deps: Deps, glue: Any, target_io: FileIO) -> list[Finding]:
    """What Plan would find at the target and stop for: a table icelake did not create, a foreign
    commit since the last sync (diverged), another run holding it (busy). The ledger is read only
    where it exists (an estate is often assessed before anything is deployed). `glue` and
    `target_io`: the target's Glue client and S3."""
    target_name = f"{item.target_database}.{item.target_table}"
    findings = []
    existing = catalog.get_table(glue, item.target_database, item.target_table)
    try:
        catalog.check_target_is_ours(existing, owner_of(item), target_name)
    except IcelakeError as exc:
        findings.append(Finding(kind="target_not_ours", message=str(exc)))
    current = catalog.metadata_location(existing) if existing else None
    return findings + ledger_findings(item, deps, target_io, current)


def ledger_findings(item: WorkItem, deps: Deps, target_io: FileIO, current: str | None) -> list[Finding]:
    """What the ledger says of the target at `item.target_location` (`current`: the metadata its
    catalog points at): promoted, diverged since the last sync, or held by another run."""
    target_name = f"{item.target_database}.{item.target_table}"
    findings: list[Finding] = []
    try:
        synced = deps.ledger.last_synced(item.target_location)
        holder = deps.ledger.holder(item.target_location)
    except Exception:  # no ledger yet (not deployed) or not readable: nothing it could tell
        return findings
    if synced and synced.get("promoted_at"):
        findings.append(
            Finding(
                kind="promoted",
                message=f"{target_name} was promoted at {synced['promoted_at']}: icelake writes nothing "
                "to it",
            )
        )
    diverged = foreign_commit(target_io, synced, current)
    if diverged:
        findings.append(Finding(kind="diverged", message=diverged))
    if holder is not None:
        until = datetime.fromtimestamp(int(holder.get("expires_at", 0)), UTC).isoformat(timespec="seconds")
        findings.append(
            Finding(
                kind="busy",
                message=f"run {holder.get('run_id')} holds {item.target_location} (its lease lasts until "
                f"{until} "
                "unless that run has ended): a run now would leave the table alone",
            )
        )
    return findings


def _in_table_bucket(
    item: WorkItem, deps: Deps, settings: Settings, clients: EstateClients | None, removals: BucketRemovals
) -> TableAssessment:
    """An S3 Tables work item: its table found (or planned as Plan would create it), what the ledger
    says of its storage, its plan, and what it keeps after cutover (table_bucket.py)."""
    with ExitStack() as held:
        lent = held.enter_context(clients.lent(item.request)) if clients is not None else None
        sessions = clients.sessions(item.request) if clients is not None else deps.sessions(item.request)
        tables = lent.target_tables if lent is not None else sessions.target.client("s3tables")
        target = read_target(item, deps, tables, removals)
        src_io = lent.source_io if lent is not None else sessions.source_io()
        dst_io = lent.target_io if lent is not None else sessions.target_io()
        found: list[Finding] = []
        if target.exists:
            found = ledger_findings(target.item, deps, dst_io, target.current)
        else:
            dst_io = new_table_io(cast(S3FileIO, dst_io).client)
        assessed = _assessed(target.item, (src_io, dst_io), settings, [*target.blockers, *found])
        return _with_table(item, target, assessed, src_io, settings)


def _with_table(
    item: WorkItem, target: Target, assessed: TableAssessment, src_io: FileIO, settings: Settings
) -> TableAssessment:
    """The assessment with the table's S3 Tables side: its name in Athena, what it keeps, the bucket's
    unreferenced-file removal, and the location it has (its storage, or its pending name)."""
    blockers, warnings = [*assessed.blockers], [*assessed.warnings, *target.warnings]
    table = None
    try:
        metadata = read_metadata(src_io, item.source_metadata_location)[0]
    except Exception:  # unreadable: the assessment's own refusal says why
        metadata = None
    if metadata is not None:
        table, refused = table_keeps(target.item, metadata, settings.prices, target.exists)
        table = table.model_copy(update={"table_bucket": target.bucket})
        blockers += [refused] if refused else []
    location = target.item.target_location if target.exists else item.target_location
    return assessed.model_copy(
        update={"target_location": location, "s3tables": table, "blockers": blockers, "warnings": warnings}
    )
