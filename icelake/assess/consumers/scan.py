"""The consumer scan of an estate: every reader of consumers run with the source's read role on
the selected tables, into rewire.json (model.Rewire). Read only, and nothing skipped silently:
what could not be read is listed in `unread`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icelake.assess.consumers.athena import scan_workgroups
from icelake.assess.consumers.code import scan_code_prefixes
from icelake.assess.consumers.context import ScanContext
from icelake.assess.consumers.glue import scan_crawlers, scan_jobs
from icelake.assess.consumers.model import KINDS, KindCount, Rewire
from icelake.assess.consumers.refs import Selected, SelectedTable, table_location
from icelake.assess.consumers.workflows import scan_functions, scan_state_machines
from icelake.request.deps import Deps
from icelake.request.models import MigrationRequest, WorkItem
from icelake.request.selection import work_items

READERS: tuple[Callable[[ScanContext], None], ...] = (
    scan_jobs,
    scan_crawlers,
    scan_workgroups,
    scan_state_machines,
    scan_functions,
)
REWIRE_NAME = "rewire.json"


def selected_tables(items: Sequence[WorkItem]) -> Selected:
    """The tables whose references are looked for: each work item's name and location, and
    where they go."""
    return Selected(
        SelectedTable(
            name=item.name.lower(),
            target=item.target_name,
            location=table_location(item.source_metadata_location),
            target_location=item.target_location.rstrip("/"),
        )
        for item in items
        if not item.source_dropped
    )


def scan_consumers(
    request: MigrationRequest, items: Sequence[WorkItem], session: Any, *, workers: int = 8
) -> Rewire:
    """Every consumer of the source account (in `session`'s region) that names a selected table;
    `session`: the source's read role."""
    ctx = ScanContext(
        session=session,
        account=request.source.account_id,
        region=session.region_name or "us-east-1",
        selected=selected_tables(items),
        workers=workers,
    )
    if len(ctx.selected):
        for reader in READERS:
            reader(ctx)
        scan_code_prefixes(ctx, request.consumers.code_prefixes)
    return rewire_of(ctx, request.consumers.code_prefixes)


def rewire_of(ctx: ScanContext, code_prefixes: list[str]) -> Rewire:
    """rewire.json from what a scan found, in a stable order: by kind, consumer, place."""
    order = {kind: i for i, kind in enumerate(KINDS)}
    references = sorted(
        ctx.references,
        key=lambda r: (
            order[r.consumer.kind],
            r.consumer.name,
            r.consumer.workgroup or "",
            r.line or 0,
            r.where,
        ),
    )
    unread = sorted(ctx.unread, key=lambda u: (order[u.consumer.kind], u.consumer.name, u.what))
    referencing = Counter(kind for kind, _ in {(r.consumer.kind, r.consumer) for r in references})
    counts = Counter(r.consumer.kind for r in references)
    missed = Counter(u.consumer.kind for u in unread)
    return Rewire(
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        source_account=ctx.account,
        region=ctx.region,
        tables=len(ctx.selected),
        code_prefixes=list(code_prefixes),
        by_kind={
            kind: KindCount(
                read=ctx.read[kind],
                referencing=referencing[kind],
                references=counts[kind],
                unread=missed[kind],
            )
            for kind in KINDS
        },
        references=references,
        unread=unread,
    )


def scan_request(request: MigrationRequest, deps: Deps) -> Rewire:
    """The scan of what `icelake assess --request` assesses: the request's selection (the
    Inventory's own), read with its source role."""
    items = [item for item in work_items(request, deps) if not item.source_dropped]
    return scan_consumers(request, items, deps.sessions(request).source)


def write_rewire(rewire: Rewire, out: Path) -> Path:
    path = out / REWIRE_NAME
    path.write_text(json.dumps(rewire.model_dump(mode="json"), indent=1) + "\n")
    return path


def run_rewire(
    request: MigrationRequest | None, items: Sequence[WorkItem], deps: Deps, run_id: str
) -> Rewire | None:
    """The workflow's assess mode: the run's scan kept as runs/<run_id>/rewire.json beside its
    assessment (None, and nothing written, when the request turns the scan off)."""
    if request is None or not request.consumers.scan:
        return None
    rewire = scan_consumers(request, items, deps.sessions(request).source)
    deps.artifacts.put_json(f"runs/{run_id}/{REWIRE_NAME}", rewire.model_dump(mode="json"))
    return rewire
