"""What assessment.html and report.html show of an estate of any size (issue 48): warnings and
blockers grouped by kind, one collapsed line each, and the table of tables with a filter box, a
click to sort and 50 rows a page. Drawn by inline script on rows already in the page, so a page
stays one file that fetches nothing, and its size grows with the tables, no faster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

PAGE_ROWS = 50
NAMES_SHOWN = 200  # table names a kind lists before "and N more" (the filter finds every one)

# The order of two rows by column i (ascending when `up`): numbers by their data-v value, text
# otherwise; both pages' tables sort with it.
BY_COLUMN_JS = """function(i,up){return function(a,b){
  var x=a.cells[i].getAttribute("data-v"),y=b.cells[i].getAttribute("data-v");
  if(x!==null&&y!==null){return (parseFloat(x)-parseFloat(y))*(up?1:-1);}
  return a.cells[i].textContent.localeCompare(b.cells[i].textContent)*(up?1:-1);
};}"""

# Filters, sorts and pages every table.paged: the box matches a table's name exactly first, else
# every word as part of its name, engine, state or kinds; 50 rows a page.
_SCRIPT = """
(function(){
var byColumn=BY_COLUMN;
document.querySelectorAll("table.paged").forEach(function(t){
  if(t.classList.contains("ready")){return;}
  var body=t.tBodies[0],all=Array.prototype.slice.call(body.rows),shown=all,page=0,size=ROWS;
  var box=document.getElementById(t.id+"-filter"),pager=document.getElementById(t.id+"-pager");
  var prev=pager.querySelector(".prev"),next=pager.querySelector(".next"),count=pager.querySelector(".count");
  function draw(){
    var pages=Math.max(1,Math.ceil(shown.length/size));if(page>=pages){page=pages-1;}
    var lo=page*size,hi=Math.min(shown.length,lo+size),on=new Set(shown.slice(lo,hi));
    all.forEach(function(r){r.hidden=!on.has(r);});
    count.textContent=shown.length?"rows "+(lo+1)+"\\u2013"+hi+" of "+shown.length+
      (shown.length<all.length?" (of "+all.length+")":"")+", page "+(page+1)+" of "+pages:"no table matches";
    prev.disabled=page===0;next.disabled=page>=pages-1;
  }
  function filter(){
    var q=box.value.trim().toLowerCase(),words=q.split(/\\s+/).filter(Boolean);
    var exact=all.filter(function(r){return r.getAttribute("data-name").toLowerCase()===q;});
    shown=!q?all:exact.length?exact:all.filter(function(r){var f=r.getAttribute("data-f");
      return words.every(function(w){return f.indexOf(w)>=0;});});
    page=0;draw();
  }
  box.addEventListener("input",filter);
  prev.addEventListener("click",function(){page-=1;draw();});
  next.addEventListener("click",function(){page+=1;draw();});
  t.querySelectorAll("th").forEach(function(th,i){
    th.addEventListener("click",function(){
      var up=th.getAttribute("aria-sort")!=="ascending";
      all.sort(byColumn(i,up));
      t.querySelectorAll("th").forEach(function(h){h.removeAttribute("aria-sort");});
      th.setAttribute("aria-sort",up?"ascending":"descending");
      all.forEach(function(r){body.appendChild(r);});
      filter();
    });
  });
  document.querySelectorAll("button[data-for='"+t.id+"']").forEach(function(b){
    b.addEventListener("click",function(){box.value=b.getAttribute("data-filter");filter();
      box.scrollIntoView();});
  });
  t.classList.add("ready");filter();
});
})();
""".replace("ROWS", str(PAGE_ROWS)).replace("BY_COLUMN", BY_COLUMN_JS)

CSS = """
table.paged:not(.ready) tbody tr:nth-child(n+51){display:none}
.filter{display:flex;gap:8px;align-items:center;margin:6px 0}.filter input{width:340px;padding:4px 6px}
.pager{display:flex;gap:8px;align-items:center;margin:4px 0;color:#5b6776}
details.kind-line{margin:2px 0;padding:3px 6px;border:1px solid #eef1f4;border-radius:4px}
details.kind-line summary{cursor:pointer}details.kind-line .names{color:#5b6776;font-size:12px}
.standout{display:flex;gap:18px;flex-wrap:wrap}.standout table{width:auto}
"""


@dataclass(frozen=True)
class Row:
    """One table's row: its cells, its name, and the words the filter box matches."""

    cells: str
    name: str
    words: Sequence[str] = ()


def kinds(by_kind: Mapping[str, Mapping[str, Any]], css: str, tid: str = "tables") -> str:
    """One collapsed line per kind: its count of tables and what it means; opened, what to do and
    the tables (the first NAMES_SHOWN, and a button that filters the table of tables to all)."""
    if not by_kind:
        return '<p class="ok">None.</p>'
    lines = []
    for kind, summary in by_kind.items():
        names = [str(n) for n in summary.get("tables", [])]
        listed = ", ".join(escape(n) for n in names[:NAMES_SHOWN])
        more = f" and {len(names) - NAMES_SHOWN:,} more" if len(names) > NAMES_SHOWN else ""
        hint = f"<div>What to do: {escape(str(summary['hint']))}</div>" if summary.get("hint") else ""
        lines.append(
            f'<details class="kind-line"><summary><span class="{css}"><b>{int(summary.get("count", 0)):,}'
            f'</b></span> table(s) <span class="kind">{escape(kind)}</span> '
            f"{escape(str(summary.get('message', '')))}</summary>{hint}"
            f'<div class="names">{listed}{more} <button type="button" data-for="{escape(tid)}" '
            f'data-filter="{escape(kind)}">show these tables</button></div></details>'
        )
    return "".join(lines)


def paged_table(headers: Sequence[str], rows: Iterable[Row], *, numeric: Iterable[int], tid: str) -> str:
    """The table of tables: a filter box, the rows (50 shown at a time), a pager, and its script."""
    right = set(numeric)
    head = "".join(f'<th class="{"n" if i in right else ""}">{escape(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        f'<tr data-name="{escape(r.name)}" data-f="{escape(" ".join([r.name, *r.words]).lower())}">'
        f"{r.cells}</tr>"
        for r in rows
    )
    return (
        f'<div class="filter"><label for="{tid}-filter">Filter</label><input id="{tid}-filter" '
        'type="search" placeholder="a table name, an engine, a state or a kind of warning">'
        '<span class="meta">click a column to sort</span></div>'
        f'<div class="wide"><table class="paged" id="{tid}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
        f'<div class="pager" id="{tid}-pager"><button type="button" class="prev">&lsaquo; previous</button>'
        '<span class="count"></span><button type="button" class="next">next &rsaquo;</button></div>'
        f"<script>{_SCRIPT}</script>"
    )


def kinds_of(findings: Iterable[Mapping[str, Any]]) -> list[str]:
    """The kinds of a table's findings, each once, in order."""
    return list(dict.fromkeys(str(f.get("kind", "")) for f in findings))
