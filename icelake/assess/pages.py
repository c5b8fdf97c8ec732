"""assessment.html and report.html, rendered from the JSON they sit beside (so either can be made
again from its JSON alone: `render_assessment(json.load(...))`)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from icelake.assess import html as h

_FAILED = ("failed", "rolled_back", "diverged", "source_dropped", "busy", "stranded")


def render_assessment(data: Mapping[str, Any]) -> str:
    tables: list[Mapping[str, Any]] = list(data.get("tables", []))
    totals = data.get("totals", {})
    run = data.get("run", {})
    prices = data.get("model", {}).get("prices", {})
    cost = totals.get("cost_usd", {})
    blockers = [(t["table"], f) for t in tables for f in t.get("blockers", [])]
    warnings = [(t["table"], f) for t in tables for f in t.get("warnings", [])]
    scope = data.get("scope", {})
    subtitle = (
        f"{escape(str(scope.get('source_account') or scope.get('source_metadata_location') or ''))} &rarr; "
        f"{escape(str(scope.get('target') or scope.get('target_location') or ''))} &middot; generated "
        f"{escape(str(data.get('generated_at', '')))} &middot; prices "
        f"{escape(str(prices.get('region', '')))} as of {escape(str(prices.get('as_of', '')))}"
    )
    body = [
        h.cards(
            [
                ("tables", f"{totals.get('tables', 0):,}", ""),
                ("blocked tables", f"{totals.get('blocked_tables', 0):,}", "bad" if blockers else "ok"),
                ("warnings", f"{totals.get('warnings', 0):,}", "warn" if warnings else "ok"),
                ("data", h.size(totals.get("data_bytes", 0)), ""),
                ("files", f"{totals.get('data_files', 0) + totals.get('delete_files', 0):,}", ""),
                ("estimated time", h.duration(run.get("duration_s", 0.0)), ""),
                ("estimated cost", h.usd(cost.get("total", 0.0)), ""),
                ("S3 requests", f"{h.requests_total(totals.get('requests')):,}", ""),
            ]
        ),
        f'<h2 id="blockers">Blockers ({len(blockers)})</h2>',
        '<p class="meta">What would fail: fix each before migrating.</p>',
        h.findings(blockers, "bad"),
        f'<h2 id="warnings">Warnings ({len(warnings)})</h2>',
        h.findings(warnings, "warn"),
        "<h2>Tables</h2>",
        '<p class="meta">Counts over every retained snapshot (what a migration copies). Click a column '
        "to sort.</p>",
        h.table(
            [
                "table",
                "engine",
                "snapshots",
                "data files",
                "data",
                "delete files",
                "metadata files",
                "to copy",
                "blockers",
                "est. time",
                "est. cost",
            ],
            (_assessed_row(t) for t in tables),
            numeric=range(2, 11),
            tid="tables",
        ),
        f"<h2>Estimated time on the Map's {run.get('concurrency', 1)} lane(s)</h2>",
        h.lanes_chart(
            run.get("lanes", []), int(run.get("concurrency", 1)), float(run.get("duration_s", 0.0))
        ),
        "<h2>Cost</h2>",
        h.bars_chart("cost-chart", h.cost_rows(cost)),
        _cost_notes(data),
        _commit_rates(tables),
    ]
    title = "icelake assessment"
    return h.page(title, subtitle, "".join(body))


def _assessed_row(t: Mapping[str, Any]) -> str:
    estimate = t.get("estimate") or {}
    deletes = sum((t.get("delete_files") or {}).values())
    seconds = float(estimate.get("duration_s", 0.0))
    total = float((estimate.get("cost_usd") or {}).get("total", 0.0))
    blockers = len(t.get("blockers", []))
    return "".join(
        [
            h.cell(t["table"]),
            h.cell(t.get("engine", "")),
            h.cell(f"{t.get('snapshots', 0):,}", number=t.get("snapshots", 0)),
            h.cell(f"{t.get('data_files', 0):,}", number=t.get("data_files", 0)),
            h.cell(h.size(t.get("data_bytes", 0)), number=t.get("data_bytes", 0)),
            h.cell(f"{deletes:,}", number=deletes),
            h.cell(f"{t.get('metadata_files', 0):,}", number=t.get("metadata_files", 0)),
            h.cell(h.size(t.get("bytes_to_copy", 0)), number=t.get("bytes_to_copy", 0)),
            h.cell(blockers, number=blockers, cls="bad" if blockers else ""),
            h.cell(h.duration(seconds) if estimate else "n/a", number=seconds),
            h.cell(h.usd(total) if estimate else "n/a", number=total),
        ]
    )


def _cost_notes(data: Mapping[str, Any]) -> str:
    model = data.get("model", {})
    prices = model.get("prices", {})
    return (
        f'<p class="meta">Priced by the {escape(str(prices.get("region", "")))} table of '
        f"{escape(str(prices.get('as_of', '')))} (icelake/assess/price_tables, or --prices); "
        "storage_month is the target copy held beside the source for "
        f"{escape(str(model.get('sync_days', '')))} day(s) "
        f"(--sync-days); transfer is counted when the regions differ "
        f"({'they do' if model.get('cross_region') else 'they do not'}).</p>"
    )


def _commit_rates(tables: list[Mapping[str, Any]]) -> str:
    syncing = [t for t in tables if any(f.get("kind") == "commit_rate" for f in t.get("warnings", []))]
    charts = "".join(
        h.commits_chart(f"commits-{i}", t["table"], t.get("daily_commits", [])) for i, t in enumerate(syncing)
    )
    return f"<h2>Commit rate of tables that need syncs ({len(syncing)})</h2>" + (
        charts or '<p class="ok">No table commits often enough to need a sync before cutover.</p>'
    )


def render_report(report: Mapping[str, Any]) -> str:
    """report.html: every table's state, errors and timings, estimated against actual."""
    tables: list[Mapping[str, Any]] = list(report.get("tables", []))
    failed = [t for t in tables if t.get("status") in _FAILED]
    estimated = [t for t in tables if t.get("estimate")]
    subtitle = (
        f"run {escape(str(report.get('run_id', '')))} &middot; "
        f'<span class="{"bad" if failed else "ok"}">{escape(str(report.get("status", "")))}</span>'
    )
    body = [
        _run_cards(tables, failed, estimated),
        f'<h2 id="errors">Errors ({len(failed)})</h2>',
        _errors(failed),
        _stranded(tables),
        "<h2>Tables</h2>",
        _outcome_table(tables),
        _estimated_against_actual(estimated),
        _request_kinds(tables),
    ]
    return h.page(f"icelake run {report.get('run_id', '')}", subtitle, "".join(body))


def _stranded(tables: list[Mapping[str, Any]]) -> str:
    """Each commit made to a promoted table's source after promotion (none: nothing is shown)."""
    rows = [
        "".join(
            [
                h.cell(t["table"]),
                h.cell(c["snapshot_id"]),
                h.cell(c["committed_at"]),
                h.cell(c["operation"]),
                *(h.cell(f"{c[k]:,}", number=c[k]) for k in _COMMIT_FIGURES),
            ]
        )
        for t in tables
        if t.get("status") == "stranded"
        for c in t.get("stranded") or []
    ]
    if not rows:
        return ""
    headers = ["table", "snapshot", "committed at", "operation", "+files", "+records", "-files", "-records"]
    return f'<h2 id="stranded">Stranded commits ({len(rows)})</h2>' + h.table(
        headers, rows, numeric=range(4, 8), tid="stranded-commits"
    )


_COMMIT_FIGURES = ("added_files", "added_records", "removed_files", "removed_records")


def _run_cards(
    tables: list[Mapping[str, Any]], failed: list[Mapping[str, Any]], estimated: list[Mapping[str, Any]]
) -> str:
    """The run's figures at the top of report.html: tables, failures, copies, requests, cost."""
    actual_cost = sum(float((t.get("cost_usd") or {}).get("total", 0.0)) for t in tables)
    estimated_cost = sum(float(t["estimate"]["cost_usd"].get("total", 0.0)) for t in estimated)
    return h.cards(
        [
            ("tables", f"{len(tables):,}", ""),
            ("not migrated", f"{len(failed):,}", "bad" if failed else "ok"),
            ("files copied", f"{sum(t.get('files_copied', 0) for t in tables):,}", ""),
            ("bytes copied", h.size(sum(t.get("bytes_copied", 0) for t in tables)), ""),
            ("S3 requests", f"{sum(h.requests_total(t.get('requests')) for t in tables):,}", ""),
            ("cost", h.usd(actual_cost), ""),
            ("estimated cost", h.usd(estimated_cost) if estimated else "n/a", ""),
        ]
    )


def _outcome_table(tables: list[Mapping[str, Any]]) -> str:
    """Every table's outcome, one row each (`_outcome_row`)."""
    return h.table(
        [
            "table",
            "state",
            "files copied",
            "verified",
            "bytes copied",
            "requests",
            "est. requests",
            "plan",
            "copy",
            "validate",
            "est. time",
            "cost",
            "est. cost",
            "error",
        ],
        (_outcome_row(t) for t in tables),
        numeric=range(2, 13),
        tid="tables",
    )


def _estimated_against_actual(estimated: list[Mapping[str, Any]]) -> str:
    """The S3 requests and the cost of each table with an estimate, estimated against actual."""
    return "".join(
        [
            "<h2>S3 requests: estimated against actual</h2>",
            h.paired_bars_chart(
                "requests-chart",
                [
                    (
                        t["table"],
                        float(h.requests_total(t["estimate"]["requests"])),
                        float(h.requests_total(t.get("requests"))),
                    )
                    for t in estimated
                ],
                lambda v: f"{v:,.0f}",
            )
            or (
                '<p class="meta">No table has an estimate (each was planned by the Glue job, or not '
                "at all).</p>"
            ),
            "<h2>Cost: estimated against actual</h2>",
            h.paired_bars_chart(
                "cost-chart",
                [
                    (
                        t["table"],
                        float(t["estimate"]["cost_usd"].get("total", 0.0)),
                        float((t.get("cost_usd") or {}).get("total", 0.0)),
                    )
                    for t in estimated
                ],
                h.usd,
            ),
        ]
    )


def _outcome_row(t: Mapping[str, Any]) -> str:
    estimate = t.get("estimate") or {}
    phases = t.get("duration_s") or {}
    requests = h.requests_total(t.get("requests"))
    est_requests = h.requests_total(estimate.get("requests")) if estimate else 0
    cost = float((t.get("cost_usd") or {}).get("total", 0.0))
    est_cost = float((estimate.get("cost_usd") or {}).get("total", 0.0))
    est_time = float(estimate.get("duration_s", 0.0))
    status = str(t.get("status", ""))
    return "".join(
        [
            h.cell(t["table"]),
            h.cell(status, cls=f"state-{status}"),
            h.cell(f"{t.get('files_copied', 0):,}", number=t.get("files_copied", 0)),
            h.cell(f"{t.get('files_verified', 0):,}", number=t.get("files_verified", 0)),
            h.cell(h.size(t.get("bytes_copied", 0)), number=t.get("bytes_copied", 0)),
            h.cell(f"{requests:,}", number=requests),
            h.cell(f"{est_requests:,}" if estimate else "n/a", number=est_requests),
            *(
                h.cell(h.duration(float(phases[p])) if p in phases else "", number=float(phases.get(p, 0.0)))
                for p in ("plan", "copy", "validate")
            ),
            h.cell(h.duration(est_time) if estimate else "n/a", number=est_time),
            h.cell(h.usd(cost) if t.get("cost_usd") else "n/a", number=cost),
            h.cell(h.usd(est_cost) if estimate else "n/a", number=est_cost),
            _error_cell(t.get("error")),
        ]
    )


SHORT = 160  # characters of a message shown before its <details>


def _error_of(error: Any) -> Mapping[str, Any]:
    """An outcome's error in its shape ({type, message, step, hint?, log_group?, ...}); a report
    written before errors had one holds text."""
    if isinstance(error, Mapping):
        return error
    return {"type": "error", "message": str(error or ""), "step": ""}


def _message(error: Mapping[str, Any]) -> str:
    """The message, wrapped; a long one cut, with the whole of it on demand (<details>)."""
    message = str(error.get("message") or "")
    if len(message) <= SHORT:
        return escape(message)
    return (
        f"{escape(message[:SHORT].rstrip())}&hellip;<details><summary>full message "
        f'({len(message):,} characters)</summary><pre class="message">{escape(message)}</pre></details>'
    )


def _errors(failed: list[Mapping[str, Any]]) -> str:
    """report.html's Errors: each table's error type, the step it failed in, its message (whole on
    demand), what to do, and a link to the step's log."""
    items = []
    for t in failed:
        error = _error_of(t.get("error"))
        step = f" in {escape(str(error['step']))}" if error.get("step") else ""
        hint = (
            f'<div class="hint">What to do: {escape(str(error["hint"]))}</div>' if error.get("hint") else ""
        )
        link = h.log_link(error)
        items.append(
            f'<li class="bad error"><b>{escape(str(t["table"]))}</b> '
            f'<span class="kind">{escape(str(t.get("status", "")))}</span> '
            f"{escape(str(error.get('type', '')))}{step}: {_message(error)}{hint}"
            f"{f'<div>{link}</div>' if link else ''}</li>"
        )
    return f'<ul class="findings">{"".join(items)}</ul>' if items else '<p class="ok">None.</p>'


def _error_cell(error: Any) -> str:
    if not error:
        return '<td class="error"></td>'
    shape = _error_of(error)
    message = " ".join(str(shape.get("message") or "").split())
    short = message if len(message) <= SHORT else message[:SHORT].rstrip() + "…"
    shown = escape(f"{shape.get('type')}: {short}")
    return f'<td class="error" title="{escape(message[:1000])}">{shown}</td>'


def _request_kinds(tables: list[Mapping[str, Any]]) -> str:
    kinds: dict[str, int] = {}
    for t in tables:
        for kind, n in (t.get("requests") or {}).items():
            kinds[kind] = kinds.get(kind, 0) + int(n)
    chart = h.bars_chart("kinds-chart", [(k, float(v)) for k, v in kinds.items()], lambda v: f"{v:,.0f}")
    return "<h2>S3 requests by kind (the run's own clients)</h2>" + chart
