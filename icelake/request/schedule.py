"""How often a sync runs: an EventBridge schedule expression (the deployment's `sync_schedule`, or
a request's `options.sync_interval` for an assessment) as the seconds between two syncs, which
the assessment prices the sync window and the cutover's freeze from (icelake/assess/estimate/sync_window.py).

`rate(N unit)` is exact. A `cron(...)` expression is read as its firings over a week: its minutes
and hours fields enumerated (`*`, `a`, `a,b`, `a-b`, `*/n`, `a-b/n`), its day-of-week field (a
list, a range or names) when day-of-month is `?`, every day otherwise; the interval is the week
over those firings, their average (a cron that fires unevenly, or on a few days of a month, is
averaged, not followed).
"""

from __future__ import annotations

import re

DEFAULT_SYNC_SCHEDULE = "rate(1 day)"  # the deployment's default sync_schedule (cdk/config.py)
SCHEDULE = re.compile(r"^(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(\S+( \S+){5}\))$")
_UNIT_S = {"minute": 60, "hour": 3600, "day": 86_400}
_DAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
WEEK_S = 7 * 86_400


def interval_seconds(expression: str) -> float:
    """The seconds between two runs of `expression` (see the module's docstring); ValueError
    naming what is wrong with it."""
    text = expression.strip()
    if not SCHEDULE.match(text):
        raise ValueError(
            f"{expression!r} is not a schedule expression: use rate(N minutes|hours|days), such as "
            "'rate(1 hour)', or cron(minutes hours day-of-month month day-of-week year)"
        )
    if text.startswith("rate("):
        number, unit = text[5:-1].split()
        if int(number) < 1:
            raise ValueError(f"{expression!r}: a rate is at least 1 {unit.rstrip('s')}")
        return float(int(number) * _UNIT_S[unit.rstrip("s")])
    minutes, hours, day_of_month, _month, day_of_week, _year = text[5:-1].split()
    days = 7 if day_of_month != "?" or day_of_week in ("*", "?") else len(_values(day_of_week, 1, 7))
    runs = len(_values(minutes, 0, 59)) * len(_values(hours, 0, 23)) * days
    return WEEK_S / runs


def _values(field: str, low: int, high: int) -> set[int]:
    """The values a cron field names within [low, high]."""
    out: set[int] = set()
    for part in field.upper().split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        base = base.split("#")[0].rstrip("L")  # 'nth weekday' and 'last': one day of the week
        for name, number in _DAYS.items():
            base = base.replace(name, str(number))
        if base in ("*", "?", ""):
            start, end = low, high
        elif "-" in base:
            first, last = base.split("-")
            start, end = int(first), int(last)
        else:
            start = int(base)
            end = high if step_text else start
        out.update(v for v in range(start, end + 1, step) if low <= v <= high)
    if not out or step < 1:
        raise ValueError(f"cron field {field!r} names no value between {low} and {high}")
    return out
