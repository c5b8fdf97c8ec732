"""assessment.html and report.html, rendered from the JSON they sit beside (so either can be made
again from its JSON alone: `render_assessment(json.load(...))`)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from icelake.assess.pages import estate_html as e
from icelake.assess.pages import html as h
from icelake.assess.pages.assessment_page import render_assessment
from icelake.assess.pages.objects_page import objects_section
from icelake.assess.pages.report_summary import furthest, outcome_kinds, requests_off, standout, warning_kind

__all__ = ["render_assessment", "render_report"]

_FAILED = ("failed", "rolled_back", "diverged", "source_dropped", "busy", "damaged", "stranded")


def render_report(report: Mapping[str, Any]) -> str:
    """report.html: every table's state, errors and timings, estimated against actual."""
    tables: list[Mapping[str, Any]] = list(report.get("tables", []))
    failed = [t for t in tables if t.get("status") in _FAILED]
    estimated = [t for t in tables if t.get("estimate")]
    subtitle = (
        f"run {escape(str(report.get('run_id', '')))} &middot; "
        f'<span class="{"bad" if failed else "ok"}">{escape(str(report.get("status", "")))}</span>'
    )
    warnings, blockers = _kinds(report, tables)
    body = [
        _run_cards(tables, failed, estimated),
        standout(tables),
        f'<h2 id="blockers">Not migrated, by why ({len(failed):,} table(s))</h2>',
        e.kinds(blockers, "bad"),
        f'<h2 id="warnings">Warnings by kind ({len(warnings)})</h2>',
        e.kinds(warnings, "warn"),
        f'<h2 id="tables-title">Tables ({len(tables):,})</h2>',
        _outcome_table(tables),
        f'<h2 id="errors">Errors ({len(failed):,})</h2>',
        _errors(failed),
        _stranded(tables),
        _damaged_files(tables),
        _athena_names(tables),
        objects_section(report),
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


def _damaged_files(tables: list[Mapping[str, Any]]) -> str:
    """Each file a verify or repair found damaged or missing, and whether it was repaired (none:
    nothing is shown)."""
    rows = [
        "".join(
            [
                h.cell(t["table"]),
                h.cell(path),
                h.cell("repaired", cls="ok")
                if path in set(t.get("repaired_files") or [])
                else h.cell("damaged", cls="bad"),
            ]
        )
        for t in tables
        for path in t.get("damaged_files") or []
    ]
    if not rows:
        return ""
    return f'<h2 id="damaged">Damaged files ({len(rows)})</h2>' + h.table(
        ["table", "file", "state"], rows, tid="damaged-files"
    )


def _athena_names(tables: list[Mapping[str, Any]]) -> str:
    """Each table that went into S3 Tables, by the name analysts type in Athena (none: nothing)."""
    rows = ["".join([h.cell(t["table"]), h.cell(t["athena_name"])]) for t in tables if t.get("athena_name")]
    if not rows:
        return ""
    return (
        f'<h2 id="athena-names">In Athena ({len(rows)})</h2><p class="meta">Tables in a table bucket are '
        "read through the s3tablescatalog federated catalog, by these names.</p>"
        + h.table(["table", "Athena name"], rows, tid="athena-names-table")
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


def _kinds(
    report: Mapping[str, Any], tables: list[Mapping[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """report.json's warnings_by_kind and blockers_by_kind, or made from its outcomes (a report
    written before it held them)."""
    if "warnings_by_kind" in report and "blockers_by_kind" in report:
        return dict(report["warnings_by_kind"]), dict(report["blockers_by_kind"])
    warnings, blockers = outcome_kinds(tables, _FAILED)
    return (
        {k: v.model_dump() for k, v in warnings.items()},
        {k: v.model_dump() for k, v in blockers.items()},
    )


_OUTCOME_COLUMNS = [
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
]


def _outcome_table(tables: list[Mapping[str, Any]]) -> str:
    """Every table's outcome, one row each (`_outcome_row`), 50 at a time; the filter matches its
    name, state, engines, error type and kinds of warning."""
    rows = (
        e.Row(
            _outcome_row(t),
            str(t["table"]),
            [
                str(t.get("status", "")),
                *(t.get("engines") or {}).values(),
                str((t.get("error") or {}).get("type", "")) if isinstance(t.get("error"), Mapping) else "",
                *(warning_kind(str(w)) for w in t.get("warnings") or []),
            ],
        )
        for t in tables
    )
    return e.paged_table(_OUTCOME_COLUMNS, rows, numeric=range(2, 13), tid="tables")


CHARTED = 20  # tables the estimated-against-actual charts draw: beyond, the furthest from estimate


def _estimated_against_actual(estimated: list[Mapping[str, Any]]) -> str:
    """The S3 requests and the cost of each table with an estimate, estimated against actual; of
    more than CHARTED tables, the CHARTED furthest from their estimate in requests."""
    note = ""
    if len(estimated) > CHARTED:
        note = (
            f'<p class="meta">The {CHARTED} of {len(estimated):,} tables furthest from their estimate in '
            "requests; every table's figures are in the table of tables.</p>"
        )
        estimated = [t for t, _ in furthest(estimated, requests_off, CHARTED)]
    return "".join(
        [
            "<h2>S3 requests: estimated against actual</h2>",
            note,
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
            # the estimate's range (low to high, ThroughputModel.bounds), not a single number
            h.cell(
                h.duration_range(est_time, estimate.get("duration_range_s")) if estimate else "n/a",
                number=est_time,
                title=_phases_estimated(estimate),
            ),
            h.cell(h.usd(cost) if t.get("cost_usd") else "n/a", number=cost),
            h.cell(h.usd(est_cost) if estimate else "n/a", number=est_cost),
            _error_cell(t.get("error")),
        ]
    )


def _phases_estimated(estimate: Mapping[str, Any]) -> str:
    """The estimate by phase, for the estimated time's tooltip."""
    phases = estimate.get("duration_by_phase") or {}
    return ", ".join(f"{p} {h.duration(float(v))}" for p, v in phases.items())


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
