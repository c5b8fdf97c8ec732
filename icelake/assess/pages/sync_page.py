"""assessment.html's sections on the syncs until cutover (icelake/assess/estimate/sync_window.py): the sync
window's price (syncs, requests, cost; a bar per table) and the cutover's write freeze beside the
full copy's time (a bar per table, and a row of figures each). Inline SVG, as every chart here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from icelake.assess.pages import html as h

SHOWN = 10  # tables drawn in each chart (the costliest, the longest freezes)


def sync_sections(data: Mapping[str, Any]) -> str:
    tables = [t for t in data.get("tables", []) if t.get("sync_window")]
    if not tables:
        return ""
    return _window(tables, data.get("totals", {}), data.get("model", {})) + _freeze(tables)


def _window(tables: Sequence[Mapping[str, Any]], totals: Mapping[str, Any], model: Mapping[str, Any]) -> str:
    costliest = sorted(tables, key=lambda t: -_total(t["sync_window"]["cost_usd"]))
    syncs = sum(float(t["sync_window"]["syncs"]) for t in tables)
    requests = h.requests_total(totals.get("sync_window_requests"))
    cost = float((totals.get("sync_window_cost_usd") or {}).get("total", 0.0))
    more = f" (the {SHOWN} costliest drawn)" if len(tables) > SHOWN else ""
    return (
        "<h2>Sync window until cutover</h2>"
        f'<p class="meta" id="sync-window">Each table synced on '
        f"{escape(str(model.get('sync_interval', '')))} for {escape(str(model.get('sync_days', '')))} "
        f"day(s) (--sync-interval, --sync-days): {syncs:,.0f} incremental syncs, {requests:,} S3 "
        f"requests, {h.usd(cost)} in all, from each table's commit rate; a sync reads and copies what "
        f"was committed since the last one.{more}</p>"
        + h.bars_chart(
            "sync-chart", [(str(t["table"]), _total(t["sync_window"]["cost_usd"])) for t in costliest[:SHOWN]]
        )
    )


def _freeze(tables: Sequence[Mapping[str, Any]]) -> str:
    frozen = [t for t in tables if t.get("cutover")]
    longest = sorted(frozen, key=lambda t: -float(t["cutover"]["freeze_s"]))[:SHOWN]
    rows = [_freeze_row(t) for t in longest]
    return (
        "<h2>Cutover: how long writers stop</h2>"
        '<p class="meta">The freeze is the last sync (the commits one sync interval brings), Register '
        "and the proof that the source did not move; plan the switch window from it "
        "(docs/runbook.md, Cutover). The full copy's time is beside it.</p>"
        + h.bars_chart(
            "freeze-chart", [(str(t["table"]), float(t["cutover"]["freeze_s"])) for t in longest], h.duration
        )
        + h.table(
            ["table", "freeze", "full copy", "commits", "files", "by step"],
            rows,
            numeric=[1, 2, 3, 4],
            tid="freeze",
        )
    )


STEP_NAMES = {"rest": "Inventory and Report"}  # the freeze's steps as the page names them


def _freeze_row(t: Mapping[str, Any]) -> str:
    c = t["cutover"]
    full = c["full_copy_s"]
    steps = ", ".join(
        f"{STEP_NAMES.get(k, k)} {h.duration(float(v))}" for k, v in c.get("freeze_by_step", {}).items()
    )
    return (
        h.cell(t["table"])
        + h.cell(h.duration_range(float(c["freeze_s"]), c.get("freeze_range_s")), number=c["freeze_s"])
        + h.cell(h.duration_range(float(full), c.get("full_copy_range_s")), number=full)
        + h.cell(f"{c.get('commits', 0):,}", number=c.get("commits", 0))
        + h.cell(f"{c.get('files', 0):,}", number=c.get("files", 0))
        + h.cell(steps)
    )


def _total(cost: Mapping[str, float]) -> float:
    return float(cost.get("total", 0.0))
