"""assessment.html, rendered from assessment.json alone (`render_assessment(json.load(...))`).

For an estate of any size: the figures, then the blockers and warnings by kind (one collapsed
line each), then the table of tables (filter, sort, 50 rows a page), then the charts, and every
finding table by table in one collapsed section at the end."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from icelake.assess.pages import estate_html as e
from icelake.assess.pages import html as h
from icelake.assess.pages.kinds import by_kind
from icelake.assess.pages.objects_page import objects_section
from icelake.assess.pages.rewire_page import rewire_section
from icelake.assess.pages.s3tables_page import s3tables_section
from icelake.assess.pages.sync_page import sync_sections

COMMIT_CHARTS = 10  # tables whose daily commits are drawn (the busiest); the filter finds the rest

_COLUMNS = [
    "table",
    "engine",
    "snapshots",
    "data files",
    "data",
    "delete files",
    "metadata files",
    "to copy",
    "blockers",
    "warnings",
    "est. time",
    "freeze",
    "est. cost",
    "sync window",
]


def grouped(data: Mapping[str, Any], field: str, of: str) -> dict[str, Any]:
    """`warnings_by_kind` or `blockers_by_kind` as the JSON holds it, or made from its tables (an
    assessment.json written before they were)."""
    if field in data:
        return dict(data[field])
    found = ((t["table"], f["kind"], f["message"]) for t in data.get("tables", []) for f in t.get(of, []))
    return {kind: s.model_dump() for kind, s in by_kind(found).items()}


def render_assessment(data: Mapping[str, Any], rewire: Mapping[str, Any] | None = None) -> str:
    """assessment.html from assessment.json, with "Rewire at cutover" from rewire.json (None: the
    consumers were not scanned, which the section says)."""
    tables: list[Mapping[str, Any]] = list(data.get("tables", []))
    totals = data.get("totals", {})
    run = data.get("run", {})
    cost = totals.get("cost_usd", {})
    blockers = grouped(data, "blockers_by_kind", "blockers")
    warnings = grouped(data, "warnings_by_kind", "warnings")
    body = [
        _cards(totals, run, bool(blockers), bool(warnings)),
        f'<h2 id="blockers">Blockers by kind ({totals.get("blocked_tables", 0):,} table(s) blocked)</h2>',
        '<p class="meta">What would fail: fix each before migrating. Open a line for what to do and '
        "the tables.</p>",
        e.kinds(blockers, "bad"),
        f'<h2 id="warnings">Warnings by kind ({len(warnings)})</h2>',
        e.kinds(warnings, "warn"),
        f'<h2 id="tables-title">Tables ({len(tables):,})</h2>',
        '<p class="meta">Counts over every retained snapshot (what a migration copies).</p>',
        e.paged_table(_COLUMNS, (_row(t) for t in tables), numeric=list(range(2, 14)), tid="tables"),
        f"<h2>Estimated time on the Map's {run.get('concurrency', 1)} lane(s)</h2>",
        h.lanes_chart(
            run.get("lanes", []), int(run.get("concurrency", 1)), float(run.get("duration_s", 0.0))
        ),
        "<h2>Cost</h2>",
        h.bars_chart("cost-chart", h.cost_rows(cost)),
        _cost_notes(data),
        sync_sections(data),
        s3tables_section(data),
        objects_section(data),
        rewire_section(rewire),
        _commit_rates(tables),
        _every_finding(tables),
    ]
    return h.page("icelake assessment", _subtitle(data), "".join(body))


def _subtitle(data: Mapping[str, Any]) -> str:
    scope = data.get("scope", {})
    prices = data.get("model", {}).get("prices", {})
    return (
        f"{escape(str(scope.get('source_account') or scope.get('source_metadata_location') or ''))} &rarr; "
        f"{escape(str(scope.get('target') or scope.get('target_location') or ''))} &middot; generated "
        f"{escape(str(data.get('generated_at', '')))} &middot; prices "
        f"{escape(str(prices.get('region', '')))} as of {escape(str(prices.get('as_of', '')))}"
    )


def _cards(totals: Mapping[str, Any], run: Mapping[str, Any], blocked: bool, warned: bool) -> str:
    cost = totals.get("cost_usd", {})
    return h.cards(
        [
            ("tables", f"{totals.get('tables', 0):,}", ""),
            ("blocked tables", f"{totals.get('blocked_tables', 0):,}", "bad" if blocked else "ok"),
            ("warnings", f"{totals.get('warnings', 0):,}", "warn" if warned else "ok"),
            ("data", h.size(totals.get("data_bytes", 0)), ""),
            ("files", f"{totals.get('data_files', 0) + totals.get('delete_files', 0):,}", ""),
            ("estimated time", h.duration_range(run.get("duration_s", 0.0), run.get("duration_range_s")), ""),
            ("estimated cost", h.usd(cost.get("total", 0.0)), ""),
            ("sync window", h.usd((totals.get("sync_window_cost_usd") or {}).get("total", 0.0)), ""),
            ("S3 requests", f"{h.requests_total(totals.get('requests')):,}", ""),
        ]
    )


def _row(t: Mapping[str, Any]) -> e.Row:
    estimate = t.get("estimate") or {}
    deletes = sum((t.get("delete_files") or {}).values())
    seconds = float(estimate.get("duration_s", 0.0))
    span = estimate.get("duration_range_s")  # (low, high): the page shows the range
    total = float((estimate.get("cost_usd") or {}).get("total", 0.0))
    freeze = t.get("cutover") or {}
    window = float(((t.get("sync_window") or {}).get("cost_usd") or {}).get("total", 0.0))
    blockers, warnings = e.kinds_of(t.get("blockers", [])), e.kinds_of(t.get("warnings", []))
    cells = "".join(
        [
            h.cell(t["table"]),
            h.cell(t.get("engine", ""), title=t.get("engine_rule") or ""),  # which rule chose it
            h.cell(f"{t.get('snapshots', 0):,}", number=t.get("snapshots", 0)),
            h.cell(f"{t.get('data_files', 0):,}", number=t.get("data_files", 0)),
            h.cell(h.size(t.get("data_bytes", 0)), number=t.get("data_bytes", 0)),
            h.cell(f"{deletes:,}", number=deletes),
            h.cell(f"{t.get('metadata_files', 0):,}", number=t.get("metadata_files", 0)),
            h.cell(h.size(t.get("bytes_to_copy", 0)), number=t.get("bytes_to_copy", 0)),
            h.cell(" ".join(blockers), number=len(t.get("blockers", [])), cls="bad" if blockers else ""),
            h.cell(" ".join(warnings), number=len(t.get("warnings", [])), cls="warn" if warnings else ""),
            h.cell(h.duration_range(seconds, span) if estimate else "n/a", number=seconds),
            h.cell(
                h.duration_range(freeze["freeze_s"], freeze.get("freeze_range_s")) if freeze else "n/a",
                number=float(freeze.get("freeze_s", 0.0)),
                title=_freeze_title(freeze),
            ),
            h.cell(h.usd(total) if estimate else "n/a", number=total),
            h.cell(h.usd(window) if t.get("sync_window") else "n/a", number=window),
        ]
    )
    state = "blocked" if blockers else "warnings" if warnings else "ok"
    return e.Row(cells, str(t["table"]), [str(t.get("engine", "")), state, *blockers, *warnings])


def _cost_notes(data: Mapping[str, Any]) -> str:
    model = data.get("model", {})
    prices = model.get("prices", {})
    in_tables = any(t.get("s3tables") for t in data.get("tables", []))
    tables = (
        " (in a table bucket: at S3 Tables' rate, with its monitoring fee per object)" if in_tables else ""
    )
    return (
        f'<p class="meta">Priced by the {escape(str(prices.get("region", "")))} table of '
        f"{escape(str(prices.get('as_of', '')))} (icelake/assess/estimate/price_tables, or --prices); "
        "storage_month is the target copy held beside the source for "
        f"{escape(str(model.get('sync_days', '')))} day(s) (--sync-days){tables}; transfer is counted "
        f"when the regions differ ({'they do' if model.get('cross_region') else 'they do not'}).</p>"
    )


def _commit_rates(tables: list[Mapping[str, Any]]) -> str:
    """The daily commits of the COMMIT_CHARTS busiest tables that need syncs."""
    syncing = [t for t in tables if any(f.get("kind") == "commit_rate" for f in t.get("warnings", []))]
    busiest = sorted(syncing, key=lambda t: -float((t.get("commits_per_day") or {}).get("30d", 0.0)))
    charts = "".join(
        h.commits_chart(f"commits-{i}", t["table"], t.get("daily_commits", []))
        for i, t in enumerate(busiest[:COMMIT_CHARTS])
    )
    rest = len(syncing) - COMMIT_CHARTS
    more = (
        f'<p class="meta">The {COMMIT_CHARTS} busiest are drawn; {rest:,} more need syncs too: filter the '
        "tables by commit_rate.</p>"
        if rest > 0
        else ""
    )
    return f"<h2>Commit rate of tables that need syncs ({len(syncing):,})</h2>" + (
        charts + more or '<p class="ok">No table commits often enough to need a sync before cutover.</p>'
    )


def _every_finding(tables: list[Mapping[str, Any]]) -> str:
    """Each table's own findings, whole (their counts and objects), collapsed at the page's end."""
    blockers = [(t["table"], f) for t in tables for f in t.get("blockers", [])]
    warnings = [(t["table"], f) for t in tables for f in t.get("warnings", [])]
    if not blockers and not warnings:
        return ""
    return (
        f'<h2 id="findings">Every finding, table by table ({len(blockers) + len(warnings):,})</h2>'
        f"<details><summary>{len(blockers):,} blocker(s) and {len(warnings):,} warning(s), each with its "
        f"table's own message and objects</summary>{h.findings(blockers, 'bad')}"
        f"{h.findings(warnings, 'warn')}</details>"
    )


def _freeze_title(freeze: dict[str, Any]) -> str:
    """What the freeze is made of, for its cell's tooltip: the last sync's commits, their files and
    the manifest entries they wrote (read three times and rewritten: sync_window.py)."""
    said = "the cutover's write freeze: the last sync, Register and the proof"
    if not freeze:
        return said
    return (
        f"{said}; the last sync takes {freeze.get('commits', 0):,} commit(s) adding "
        f"{freeze.get('files', 0):,} file(s), their manifests {freeze.get('manifest_entries', 0):,} entries"
    )
