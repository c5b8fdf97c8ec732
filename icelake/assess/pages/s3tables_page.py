"""assessment.html's "In the table bucket" section (target.kind s3tables): each table bucket's
unreferenced-file removal, and per table its name in Athena, whether Plan creates it, what it keeps
after cutover and what its first compaction costs (icelake/assess/gather/table_bucket.py)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from icelake.assess.pages import estate_html as e
from icelake.assess.pages import html as h

_COLUMNS = ["table", "in Athena", "table now", "keeps after cutover", "compaction", "first compaction"]


def s3tables_section(data: Mapping[str, Any]) -> str:
    """The section, or "" when no table goes to a table bucket."""
    tables = [t for t in data.get("tables", []) if t.get("s3tables")]
    if not tables:
        return ""
    buckets = {
        b["arn"]: b for t in tables if (b := (t["s3tables"].get("table_bucket") or {})) and b.get("arn")
    }
    removal = "".join(
        f"<li><code>{escape(arn)}</code> ({escape(str(b.get('region', '')))}): "
        f"{escape(str(b.get('said', '')))}</li>"
        for arn, b in sorted(buckets.items())
    )
    return (
        f'<h2 id="s3tables">In the table bucket ({len(tables):,} table(s))</h2>'
        '<p class="meta">Analysts reach each table in Athena by the name below (the s3tablescatalog '
        "catalog). S3 Tables' maintenance is off while icelake syncs a table, and set at cutover as "
        "shown: from options.s3tables_maintenance, else from the source's own retention properties. "
        "Files a table no longer references (a rolled back run's, a sync's pruned ones: a table bucket "
        "takes no DeleteObject) are left to the bucket's unreferenced-file removal:</p>"
        f"<ul>{removal}</ul>"
        + e.paged_table(_COLUMNS, (_row(t) for t in tables), numeric=[5], tid="s3tables-tables")
    )


def _row(t: Mapping[str, Any]) -> e.Row:
    s = t["s3tables"]
    usd = s.get("first_compaction_usd")
    cells = "".join(
        [
            h.cell(t["table"]),
            h.cell(s.get("athena_name", "")),
            h.cell(
                "exists (icelake's)" if s.get("exists") else "created by Plan",
                title=t.get("target_location", ""),
            ),
            h.cell(s.get("keeps", "")),
            h.cell(s.get("compaction", "")),
            h.cell(
                h.usd(usd) if usd is not None else "n/a",
                number=float(usd or 0.0),
                title=s.get("first_compaction", ""),
            ),
        ]
    )
    return e.Row(cells, str(t["table"]), [str(s.get("athena_name", ""))])
