"""assessment.html's "Rewire at cutover" (rewire.json, icelake/assess/consumers/): what reads the
selected tables, summarised by kind of consumer (read, naming a table, references, unread), then
every reference in a table with a filter (a consumer's name, its kind, a table, a word of the
place), and every consumer icelake could not read with the permission it lacked."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from icelake.assess.pages import estate_html as e
from icelake.assess.pages import html as h

LABELS = {
    "glue_job": "Glue jobs",
    "glue_crawler": "Glue crawlers",
    "athena_named_query": "Athena named queries",
    "athena_prepared_statement": "Athena prepared statements",
    "state_machine": "Step Functions state machines",
    "lambda_function": "Lambda functions",
    "code_file": "code files",
}
_COLUMNS = ["kind", "consumer", "where", "as written", "becomes", "tables"]


def rewire_section(rewire: Mapping[str, Any] | None) -> str:
    """The section, or one line saying the scan was skipped (no rewire.json)."""
    head = '<h2 id="rewire-at-cutover">Rewire at cutover</h2>'
    if rewire is None:
        return head + '<p class="meta">Consumers not scanned (--no-consumers, or consumers.scan false).</p>'
    references = list(rewire.get("references", []))
    unread = list(rewire.get("unread", []))
    by_kind: Mapping[str, Mapping[str, int]] = rewire.get("by_kind", {})
    intro = (
        f'<p class="meta">Each place a job, query, workflow or code file of account '
        f"{escape(str(rewire.get('source_account', '')))} names one of the {int(rewire.get('tables', 0)):,} "
        "selected tables or their S3 locations, and what it becomes on the target: change each at "
        "cutover, in its owner's pipeline (icelake changes none). rewire.json holds the same list.</p>"
    )
    summary = h.table(
        ["consumers", "read", "naming a table", "references", "unread", "in the list"],
        (
            h.cell(LABELS.get(kind, kind))
            + "".join(h.cell(f"{int(c.get(k, 0)):,}", number=int(c.get(k, 0))) for k in _COUNTS)
            + f'<td><button type="button" data-for="rewire" data-filter="{escape(kind)}">show</button></td>'
            for kind, c in by_kind.items()
        ),
        numeric=range(1, 5),
        tid="rewire-kinds",
    )
    rows = (
        e.Row(
            _row(r),
            str(r["consumer"]["name"]),
            [r["consumer"]["kind"], str(r.get("where", "")), *r.get("tables", [])],
        )
        for r in references
    )
    table = (
        e.paged_table(_COLUMNS, rows, numeric=(), tid="rewire")
        if references
        else ('<p class="ok">No consumer read names a selected table.</p>')
    )
    return head + intro + summary + table + _unread(unread)


_COUNTS = ("read", "referencing", "references", "unread")


def _row(r: Mapping[str, Any]) -> str:
    consumer = r["consumer"]
    name = str(consumer["name"]) + (f" ({consumer['workgroup']})" if consumer.get("workgroup") else "")
    becomes = r.get("becomes")
    return "".join(
        [
            h.cell(consumer["kind"]),
            h.cell(name, title=str(consumer.get("arn") or "")),
            h.cell(r.get("where", "")),
            f"<td><code>{escape(str(r['written']))}</code></td>",
            f"<td><code>{escape(str(becomes))}</code></td>"
            if becomes is not None
            else h.cell(r.get("note", ""), cls="warn"),
            h.cell(", ".join(r.get("tables", []))),
        ]
    )


def _unread(unread: list[Mapping[str, Any]]) -> str:
    if not unread:
        return '<p class="ok">Every consumer was read.</p>'
    rows = (
        "".join(
            [
                h.cell(u["consumer"]["kind"]),
                h.cell(u["consumer"]["name"], title=str(u["consumer"].get("arn") or "")),
                h.cell(u.get("what", "")),
                h.cell(u.get("error", ""), cls="bad"),
                h.cell(u.get("permission") or u.get("message", "")),
            ]
        )
        for u in unread
    )
    return (
        f'<h3 id="rewire-unread">Not read ({len(unread):,}): grant the permission, or check these by '
        "hand</h3>"
        + h.table(
            ["kind", "consumer", "what", "error", "permission lacking / message"],
            rows,
            tid="rewire-unread-table",
        )
    )
