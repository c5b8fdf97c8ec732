"""An estate's assessment from a migration request: the tables `icelake migrate start` would move
(the Inventory step's own selection, icelake/request/selection.py), each assessed with what the
workflow's steps know of its target (the target catalog and the ledger, checked as the Plan step
checks them: icelake/request/target.py). `icelake assess --request` and the workflow's Assess
step both run `assess_item`, so the two can never assess differently."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from icelake.assess.assessment import Settings, assemble, assess_table
from icelake.assess.cost import SYNC_DAYS, regions_of
from icelake.assess.estimate import ThroughputModel
from icelake.assess.prices import PriceTable
from icelake.assess.schema import Assessment, Finding, TableAssessment
from icelake.aws import catalog
from icelake.errors import IcelakeError
from icelake.request.deps import Deps
from icelake.request.models import MigrationRequest, WorkItem
from icelake.request.selection import work_items
from icelake.request.target import foreign_commit, owner_of, prefix_maps


def settings_for(
    request: MigrationRequest,
    prices: PriceTable,
    *,
    sync_days: float = SYNC_DAYS,
    model: ThroughputModel | None = None,
    now: datetime | None = None,
) -> Settings:
    """The request's thresholds and concurrency; cross-region when it names two regions."""
    source_region, target_region = regions_of(request)
    options = request.options
    return Settings(
        prices=prices,
        model=model or ThroughputModel(),
        glue_threshold_files=options.glue_threshold_files,
        glue_threshold_bytes=options.glue_threshold_bytes,
        concurrency=options.concurrency,
        prune=options.prune,
        history=options.history,
        sync_days=sync_days,
        cross_region=bool(source_region and target_region and source_region != target_region),
        now=now or datetime.now(UTC),
    )


def assess_request(
    request: MigrationRequest,
    deps: Deps,
    settings: Settings,
    on_table: Callable[[TableAssessment, int, int], None] | None = None,
) -> Assessment:
    """Every table the request selects; `on_table(assessed, done, total)` after each."""
    items = [item for item in work_items(request, deps) if not item.source_dropped]
    tables = []
    for done, item in enumerate(items, 1):
        tables.append(assess_item(item, deps, settings))
        if on_table is not None:
            on_table(tables[-1], done, len(items))
    return assemble(tables, settings, scope_of(request))


def scope_of(request: MigrationRequest) -> dict[str, Any]:
    return {
        "source_account": request.source.account_id,
        "target_account": request.target.account_id,
        "target": f"s3://{request.target.bucket}/{request.target.prefix}".rstrip("/"),
        "selection": json.loads(request.selection.model_dump_json()),
        "mode": request.mode,
    }


def assess_item(item: WorkItem, deps: Deps, settings: Settings) -> TableAssessment:
    sessions = deps.sessions(item.request)
    return assess_table(
        item.name,
        item.source_metadata_location,
        item.target_location,
        prefix_maps(item),
        sessions.source_io(),
        sessions.target_io(),
        settings,
        findings=target_findings(item, deps),
    )


def target_findings(item: WorkItem, deps: Deps) -> list[Finding]:
    """What Plan would find at the target and stop for: a table icelake did not create, a foreign
    commit since the last sync (diverged), another run holding it (busy). The ledger is read only
    where it exists (an estate is often assessed before anything is deployed)."""
    sessions = deps.sessions(item.request)
    target_name = f"{item.target_database}.{item.target_table}"
    findings = []
    existing = catalog.get_table(sessions.target.client("glue"), item.target_database, item.target_table)
    try:
        catalog.check_target_is_ours(existing, owner_of(item), target_name)
    except IcelakeError as exc:
        findings.append(Finding(kind="target_not_ours", message=str(exc)))
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
    diverged = foreign_commit(
        sessions.target_io(), synced, catalog.metadata_location(existing) if existing else None
    )
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
