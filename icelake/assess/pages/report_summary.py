"""What report.html and report.json say of a run's tables as a whole (issue 48): why tables were not
migrated and what the run warned of, grouped by kind; and what stands out: the tables furthest
from their estimate (requests and time), the slowest, and counts by state and by how copies were
verified. Reads outcomes as report.json holds them (dicts), so a report renders from its JSON."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from icelake.assess.pages import html as h
from icelake.assess.pages.kinds import KindSummary, by_kind

STANDOUT = 10  # tables each "what stands out" list names

Outcome = Mapping[str, Any]

# Statuses that name why a table was left alone; for a failure, its error's type says why.
_BY_STATUS = ("diverged", "source_dropped", "busy", "stranded", "damaged")

# A run's warning (text) -> its kind, by words each kind's text holds (icelake/workflow/steps/shared.py,
# icelake/aws/lake_formation.py).
_WARNING_KINDS = (
    ("is an earlier target of", "earlier_target"),
    ("target.lake_formation.principal_map", "unmapped_principal"),
    ("data cells filter", "data_filter"),
)


def warning_kind(text: str) -> str:
    return next((kind for words, kind in _WARNING_KINDS if words in text), "other")


def outcome_kinds(
    tables: Sequence[Outcome], failed: Sequence[str]
) -> tuple[dict[str, KindSummary], dict[str, KindSummary]]:
    """(warnings_by_kind, blockers_by_kind) of a run's outcomes: a blocker is what left a table in
    one of the `failed` states, by that state or (failed, rolled back) by its error's type."""
    warnings = by_kind(
        (str(t["table"]), warning_kind(str(w)), str(w)) for t in tables for w in t.get("warnings") or []
    )
    hints: dict[str, str] = {}
    found = []
    for t in tables:
        status = str(t.get("status", ""))
        if status not in failed:
            continue
        raw = t.get("error")
        error: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        kind = status if status in _BY_STATUS or not error.get("type") else str(error["type"])
        message = str(error.get("message") or t.get("error") or status)
        if error.get("hint"):
            hints.setdefault(kind, str(error["hint"]))
        found.append((str(t["table"]), kind, message))
    return warnings, by_kind(found, hints)


def _actual_seconds(t: Outcome) -> float:
    return float(t.get("seconds") or sum((t.get("duration_s") or {}).values()))


def requests_off(t: Outcome) -> float | None:
    estimated = h.requests_total((t.get("estimate") or {}).get("requests"))
    return (h.requests_total(t.get("requests")) - estimated) / estimated if estimated else None


def _phases_seconds(t: Outcome) -> float:
    """What the estimate's time covers: the table's Plan, Copy and Validate (or Rollback), each as
    its step counted it; `seconds` alone is the copy's, a re-run's fraction of a second."""
    return float(sum((t.get("duration_s") or {}).values()) or t.get("seconds") or 0.0)


def _time_off(t: Outcome) -> float | None:
    estimated = float((t.get("estimate") or {}).get("duration_s", 0.0))
    return (_phases_seconds(t) - estimated) / estimated if estimated else None


def verification(t: Outcome) -> str:
    """How a table's copies were verified: all end to end (checksum or MD5 ETag), some by size only,
    or nothing copied."""
    copied, verified = int(t.get("files_copied", 0)), int(t.get("files_verified", 0))
    if copied == 0:
        return "nothing copied"
    return "every copy verified end to end" if verified >= copied else "some copies checked by size only"


def furthest(
    tables: Sequence[Outcome], off: Callable[[Outcome], float | None], count: int = STANDOUT
) -> list[tuple[Outcome, float]]:
    """The `count` tables furthest from their estimate by `off` (relative), furthest first."""
    scored = [(t, d) for t in tables if (d := off(t)) is not None]
    return sorted(scored, key=lambda p: (-abs(p[1]), str(p[0]["table"])))[:count]


def _listing(title: str, rows: list[tuple[str, str]], headers: tuple[str, str]) -> str:
    """A collapsed list: its title and the first row in the summary line, every row opened."""
    if not rows:
        return ""
    body = "".join(f"<tr><td>{escape(a)}</td><td>{escape(b)}</td></tr>" for a, b in rows)
    return (
        f'<details class="kind-line"><summary>{escape(title)}: {escape(rows[0][0])} '
        f"({escape(rows[0][1])})</summary><table><thead><tr><th>{escape(headers[0])}</th>"
        f"<th>{escape(headers[1])}</th></tr></thead><tbody>{body}</tbody></table></details>"
    )


def _percent(t: Outcome, d: float, actual: str, estimated: str) -> tuple[str, str]:
    return str(t["table"]), f"{d:+.0%}: {actual} against {estimated} estimated"


def standout(tables: Sequence[Outcome]) -> str:
    """report.html's "What stands out": counts by state and by how copies were verified, and the
    tables furthest from their estimate (requests, time) and the slowest, each list collapsed."""
    states = Counter(str(t.get("status", "")) for t in tables)
    verified = Counter(verification(t) for t in tables)

    def said(counts: Counter[str]) -> str:
        return " &middot; ".join(f"{escape(k)} <b>{n:,}</b>" for k, n in counts.most_common())

    requests = [
        _percent(
            t,
            d,
            f"{h.requests_total(t.get('requests')):,}",
            f"{h.requests_total(t['estimate']['requests']):,}",
        )
        for t, d in furthest(tables, requests_off)
    ]
    times = [
        _percent(t, d, h.duration(_phases_seconds(t)), h.duration(float(t["estimate"]["duration_s"])))
        for t, d in furthest(tables, _time_off)
    ]
    slowest = sorted(tables, key=lambda t: (-_actual_seconds(t), str(t["table"])))[:STANDOUT]
    return "".join(
        [
            '<h2 id="standout">What stands out</h2>',
            f"<div>By state: {said(states) or 'no table'}</div>",
            f"<div>Copies: {said(verified) or 'no table'}</div>",
            _listing(
                f"{len(requests)} furthest from their estimate in S3 requests", requests, ("table", "off by")
            ),
            _listing(f"{len(times)} furthest from their estimated time", times, ("table", "off by")),
            _listing(
                f"{len(slowest)} slowest",
                [(str(t["table"]), h.duration(_actual_seconds(t))) for t in slowest],
                ("table", "time"),
            ),
        ]
    )
