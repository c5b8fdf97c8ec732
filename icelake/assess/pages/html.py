"""The two pages people read: assessment.html (before a migration) and report.html (after a run).

Each is one self-contained file: inline CSS, charts drawn here as inline SVG, and a few lines of
inline script that sort a table by a clicked column. Nothing is fetched: a page opens from a file,
an S3 console download or an e-mail attachment alike. Every value is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from icelake.assess.estimate.cost import COST_KEYS
from icelake.assess.pages.estate_html import BY_COLUMN_JS
from icelake.assess.pages.estate_html import CSS as ESTATE_CSS
from icelake.aws.request_count import REQUEST_KINDS

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2430;
max-width:1280px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde3ea}
.meta{color:#5b6776;margin-bottom:16px}.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{border:1px solid #dde3ea;border-radius:6px;padding:8px 14px;min-width:130px}
.card b{display:block;font-size:20px}.bad{color:#b42318}.warn{color:#9a6700}.ok{color:#1a7f37}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{padding:4px 8px;border-bottom:1px solid #eef1f4;
text-align:left;vertical-align:top;overflow-wrap:normal;word-break:keep-all}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.wide{overflow-x:auto}.wide td:first-child{min-width:11em}
th{background:#f6f8fa;cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort]::after{content:" \\2195";color:#8c959f}
ul.findings li{margin:4px 0}
.kind{font-family:ui-monospace,monospace;font-size:12px;background:#f6f8fa;padding:1px 5px;
border-radius:4px}
svg text{font:11px system-ui,sans-serif;fill:#1d2430}.chart{margin:8px 0}code{font-size:12px}
.state-migrated,.state-in_sync,.state-promoted,.state-dry_run{color:#1a7f37}
.state-rolled_back,.state-failed,.state-diverged,.state-busy,.state-source_dropped,.state-stranded{color:#b42318}
.findings li,li.error{overflow-wrap:anywhere}td.error{min-width:160px;max-width:360px}
pre.message{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;padding:6px 8px;
border-radius:4px;font-size:12px;margin:4px 0}.hint{color:#5b6776}
"""

# Sorts a table by the clicked header: numbers by their data-v value, text otherwise.
_SORT_JS = """
(function(){
var byColumn=BY_COLUMN;
document.querySelectorAll("table.sortable").forEach(function(t){
  t.querySelectorAll("th").forEach(function(th,i){
    th.addEventListener("click",function(){
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      var up=th.getAttribute("aria-sort")!=="ascending";
      rows.sort(byColumn(i,up));
      t.querySelectorAll("th").forEach(function(h){h.removeAttribute("aria-sort");});
      th.setAttribute("aria-sort",up?"ascending":"descending");
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
})();
""".replace("BY_COLUMN", BY_COLUMN_JS)

_COLORS = ("#2f6feb", "#8250df", "#1a7f37", "#bf8700", "#cf222e", "#0a7ea4", "#6e7781")


def page(title: str, subtitle: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        # No request may leave the page: nothing here loads anything, and the policy says so.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(title)}</title><style>{_CSS}{ESTATE_CSS}</style></head><body>"
        f'<h1>{escape(title)}</h1><div class="meta">{subtitle}</div>{body}'
        f"<script>{_SORT_JS}</script></body></html>\n"
    )


def size(n: float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} TiB"


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:,.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:,.1f} min"
    return f"{seconds / 3600:,.1f} h"


def duration_range(seconds: float, bounds: Sequence[float] | None) -> str:
    """An estimate as its range (low to high, ThroughputModel.bounds); the point alone when the
    estimate has none."""
    if not bounds:
        return duration(seconds)
    return f"{duration(bounds[0])} to {duration(bounds[1])}"


def usd(value: float) -> str:
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def cards(items: Iterable[tuple[str, str, str]]) -> str:
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><b class="{cls}">{escape(value)}</b>{escape(label)}</div>'
            for label, value, cls in items
        )
        + "</div>"
    )


# Where a name may wrap: after a dot a letter follows (not inside a number: `$0.0003`), or after
# an underscore or a slash (`sales.<wbr>customers`, `rolled_<wbr>back`); a cell never breaks
# inside a token (issue 56).
_WRAP_AFTER = re.compile(r"(?<=\.)(?=[A-Za-z])|(?<=[_/])(?=[0-9A-Za-z])")


def breakable(text: str) -> str:
    """`text` escaped, with a line-break opportunity (<wbr>) after each dot, underscore and slash
    inside a name: a narrow column wraps a long name there, and nowhere else in a token."""
    return _WRAP_AFTER.sub("<wbr>", escape(text))


def cell(value: Any, *, number: float | None = None, cls: str = "", title: str = "") -> str:
    """A table cell; `number` makes it sort as that number and align right; `title`: its tooltip.
    Text wraps at spaces and where `breakable` allows, never inside a token."""
    tip = f' title="{escape(title)}"' if title else ""
    if number is None:
        return f'<td class="{cls}"{tip}>{breakable(str(value))}</td>'
    return f'<td class="n {cls}" data-v="{number}"{tip}>{escape(str(value))}</td>'


def table(headers: Sequence[str], rows: Iterable[str], *, numeric: Iterable[int] = (), tid: str = "") -> str:
    right = set(numeric)
    head = "".join(f'<th class="{"n" if i in right else ""}">{escape(h)}</th>' for i, h in enumerate(headers))
    ident = f' id="{escape(tid)}"' if tid else ""
    body = "".join(f"<tr>{row}</tr>" for row in rows)
    table = f'<table class="sortable"{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return f'<div class="wide">{table}</div>'  # a table wider than the page scrolls in its own box


def findings(items: Iterable[tuple[str, Mapping[str, Any]]], css: str) -> str:
    """(table, finding) pairs as a list; every object a finding names is in a <details>."""
    out = []
    for table_name, finding in items:
        objects = finding.get("objects") or []
        more = ""
        if objects:
            listed = "".join(f"<li><code>{escape(o)}</code></li>" for o in objects)
            count = finding.get("count") or len(objects)
            more = f"<details><summary>{count} object(s)</summary><ul>{listed}</ul></details>"
        out.append(
            f'<li class="{css}"><b>{escape(table_name)}</b> '
            f'<span class="kind">{escape(finding["kind"])}</span> '
            f"{escape(finding['message'])}{more}</li>"
        )
    return f'<ul class="findings">{"".join(out)}</ul>' if out else '<p class="ok">None.</p>'


def lanes_chart(lanes: Sequence[Mapping[str, Any]], concurrency: int, total: float) -> str:
    """Each table's estimated time as a bar on its Map lane (a Gantt chart)."""
    if not lanes:
        return '<p class="meta">No table to lay out.</p>'
    width, label_w, row_h = 900, 60, 26
    count = max(concurrency, 1 + max(int(lane["lane"]) for lane in lanes))
    height = row_h * count + 30
    span = max(total, 1e-9)
    scale = (width - label_w - 10) / span
    parts = [
        f'<svg class="chart" id="lanes-chart" width="{width}" height="{height}" role="img" '
        'aria-label="Map lanes">'
    ]
    for i in range(count):
        parts.append(f'<text x="4" y="{i * row_h + 17}">lane {i + 1}</text>')
    for n, lane in enumerate(lanes):
        x = label_w + lane["start_s"] * scale
        w = max(2.0, (lane["end_s"] - lane["start_s"]) * scale)
        y = int(lane["lane"]) * row_h + 4
        color = _COLORS[n % len(_COLORS)]
        tip = f"{lane['table']}: {duration(lane['end_s'] - lane['start_s'])}"
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 8}" fill="{color}">'
            f"<title>{escape(tip)}</title></rect>"
        )
        if w > 60:
            parts.append(
                f'<text x="{x + 4:.1f}" y="{y + 13}" style="fill:#fff">{escape(lane["table"])}</text>'
            )
    parts.append(f'<text x="{label_w}" y="{height - 6}">0</text>')
    parts.append(f'<text x="{width - 80}" y="{height - 6}">{escape(duration(total))}</text></svg>')
    return "".join(parts)


def bars_chart(chart_id: str, values: Sequence[tuple[str, float]], fmt: Any = usd) -> str:
    """Horizontal bars, one per (label, value)."""
    if not values:
        return ""
    width, label_w, row_h = 700, 170, 22
    top = max((v for _, v in values), default=0.0) or 1.0
    height = row_h * len(values) + 6
    parts = [f'<svg class="chart" id="{escape(chart_id)}" width="{width}" height="{height}" role="img">']
    for i, (label, value) in enumerate(values):
        w = max(1.0, value / top * (width - label_w - 110))
        y = i * row_h + 3
        parts.append(f'<text x="4" y="{y + 13}">{escape(label)}</text>')
        parts.append(
            f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{row_h - 7}" '
            f'fill="{_COLORS[i % len(_COLORS)]}"><title>{escape(label)}: {escape(fmt(value))}</title></rect>'
        )
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 13}">{escape(fmt(value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def paired_bars_chart(chart_id: str, rows: Sequence[tuple[str, float, float]], fmt: Any) -> str:
    """Two bars per row: estimated (light) and actual (dark)."""
    if not rows:
        return ""
    width, label_w, row_h = 760, 170, 34
    top = max(max(e, a) for _, e, a in rows) or 1.0
    height = row_h * len(rows) + 24
    usable = width - label_w - 130
    parts = [f'<svg class="chart" id="{escape(chart_id)}" width="{width}" height="{height}" role="img">']
    for i, (label, estimated, actual) in enumerate(rows):
        y = i * row_h + 3
        parts.append(f'<text x="4" y="{y + 18}">{escape(label)}</text>')
        for j, (value, color, name) in enumerate(
            ((estimated, "#9ec5fe", "estimated"), (actual, "#2f6feb", "actual"))
        ):
            w = max(1.0, value / top * usable)
            parts.append(
                f'<rect class="bar" x="{label_w}" y="{y + j * 13}" width="{w:.1f}" height="11" '
                f'fill="{color}">'
                f"<title>{escape(label)} {name}: {escape(fmt(value))}</title></rect>"
                f'<text x="{label_w + w + 6:.1f}" y="{y + j * 13 + 10}">{name} {escape(fmt(value))}</text>'
            )
    parts.append(f'<text x="4" y="{height - 4}">light: estimated, dark: actual</text></svg>')
    return "".join(parts)


def commits_chart(chart_id: str, name: str, daily: Sequence[int]) -> str:
    """Commits per day over the last 30 days (oldest left)."""
    width, height, pad = 320, 70, 14
    top = max(daily, default=0) or 1
    step = (width - 2 * pad) / max(1, len(daily))
    parts = [
        f'<svg class="chart commits" id="{escape(chart_id)}" width="{width}" height="{height + 16}" '
        'role="img">'
    ]
    for i, n in enumerate(daily):
        h = n / top * (height - 10)
        parts.append(
            f'<rect class="bar" x="{pad + i * step:.1f}" y="{height - h:.1f}" width="{max(step - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="#8250df"><title>{30 - i} day(s) ago: {n} commit(s)</title></rect>'
        )
    parts.append(
        f'<text x="{pad}" y="{height + 13}">{escape(name)}: 30 days ago to today, peak {top}/day</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def requests_total(requests: Mapping[str, int] | None) -> int:
    return sum((requests or {}).get(k, 0) for k in REQUEST_KINDS)


def cost_rows(cost: Mapping[str, float]) -> list[tuple[str, float]]:
    return [(k, float(cost.get(k, 0.0))) for k in COST_KEYS if k != "total"]


def log_link(error: Mapping[str, Any]) -> str:
    """A link to the log that holds an error whole (CloudWatch Logs in the console), filtered on
    its request id when the error names one; '' when it names no log group."""
    group = error.get("log_group")
    if not group:
        return ""
    region = error.get("region")

    def console(text: str) -> str:  # the console's own escaping of its #fragment
        return quote(text, safe="").replace("%", "$25")

    url = (
        f"https://{region + '.' if region else ''}console.aws.amazon.com/cloudwatch/home"
        f"{'?region=' + region if region else ''}#logsV2:log-groups/log-group/{console(group)}"
    )
    request = error.get("request_id")
    if request:
        url += "/log-events$3FfilterPattern$3D" + console(f'"{request}"')
    said = f"{group}{', request ' + request if request else ''}"
    return f'<a href="{escape(url)}" rel="noreferrer">log: {escape(said)}</a>'
