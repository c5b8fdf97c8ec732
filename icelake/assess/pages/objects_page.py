"""'Views and other objects': every catalog entry of the selection that is not an Iceberg table,
with its kind, what icelake does with it and, when it is not carried, why and what to do (the
`objects` of assessment.json and report.json; icelake/objects/)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from icelake.assess.pages import html as h
from icelake.objects.kinds import label
from icelake.objects.model import NOT_CARRIED

_ACTIONS = {"migrated": "migrated", "carried": "carried to the target", "not_moved": "not moved"}


def objects_section(data: Mapping[str, Any]) -> str:
    """The section, or nothing when the selection holds only Iceberg tables (or the JSON predates
    the field)."""
    objects = [o for o in data.get("objects", []) if o.get("kind") != "iceberg_table"]
    if not objects:
        return ""
    counts = data.get("objects_by_kind") or {}
    summary = ", ".join(f"{n:,} {label(k, plural=n != 1)}" for k, n in counts.items())
    rows = [_row(o) for o in sorted(objects, key=lambda o: (o.get("action") != "carried", o["name"]))]
    return (
        f'<h2 id="objects">Views and other objects ({len(objects):,})</h2>'
        f'<p class="meta">Every entry of the selected databases: {escape(summary)}. icelake moves '
        "Iceberg tables; it carries views (their SQL renamed to the target's names) and resource "
        "links, and names every other table with what to do.</p>"
        + h.table(["entry", "kind", "icelake", "target", "status", "why, what to do"], rows, tid="objects")
    )


def _row(o: Mapping[str, Any]) -> str:
    status = str(o.get("status", ""))
    bad = status in NOT_CARRIED or o.get("action") == "not_moved"
    return "".join(
        [
            h.cell(o["name"]),
            h.cell(label(str(o.get("kind", "")))),
            h.cell(_ACTIONS.get(str(o.get("action")), o.get("action"))),
            h.cell(o.get("target") or ""),
            h.cell(status, cls="warn" if bad else "ok"),
            h.cell(o.get("message") or ""),
        ]
    )
