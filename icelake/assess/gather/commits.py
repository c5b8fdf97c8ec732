"""A table's commit rates, from its snapshots' timestamps and summaries, and the warning a table
that keeps committing gets: it needs incremental syncs until its writers stop."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from icelake.assess.schema import Finding
from icelake.migrate import metadata_json as mj

WINDOW = timedelta(days=30)  # the commit rates' longest window: what the sync window is priced from


@dataclass(frozen=True)
class CommitHistory:
    """Commit rates from the snapshots' timestamps and summaries."""

    per_day_7: float
    per_day_30: float
    bytes_7: float
    bytes_30: float
    daily: list[int]
    files_7: float = 0.0  # data and delete files added a day (the summaries' added-*-files)
    files_30: float = 0.0

    def fields(self) -> dict[str, Any]:
        return {
            "commits_per_day": {"7d": self.per_day_7, "30d": self.per_day_30},
            "bytes_added_per_day": {"7d": self.bytes_7, "30d": self.bytes_30},
            "files_added_per_day": {"7d": self.files_7, "30d": self.files_30},
            "daily_commits": self.daily,
        }

    def busiest(self) -> tuple[float, float, float]:
        """(commits, files, bytes) a day over the window, 7 or 30 days, that commits more: the
        rate the sync window is priced at, as the commit_rate warning counts it."""
        if self.per_day_7 >= self.per_day_30:
            return self.per_day_7, self.files_7, self.bytes_7
        return self.per_day_30, self.files_30, self.bytes_30


def commit_history(meta: mj.Metadata, now: datetime) -> CommitHistory:
    daily = [0] * 30
    commits = {7: 0, 30: 0}
    added_bytes = {7: 0, 30: 0}
    files_added = {7: 0, 30: 0}
    for snapshot in meta.get("snapshots") or []:
        when = datetime.fromtimestamp(int(snapshot.get("timestamp-ms", 0)) / 1000, UTC)
        age = now - when
        if age < timedelta(0) or age >= WINDOW:
            continue
        daily[29 - age.days] += 1
        size = _summary_int(snapshot, "added-files-size")
        files = added_files(snapshot)
        for days in (7, 30):
            if age < timedelta(days=days):
                commits[days] += 1
                added_bytes[days] += size
                files_added[days] += files
    return CommitHistory(
        per_day_7=round(commits[7] / 7, 3),
        per_day_30=round(commits[30] / 30, 3),
        bytes_7=round(added_bytes[7] / 7, 1),
        bytes_30=round(added_bytes[30] / 30, 1),
        daily=daily,
        files_7=round(files_added[7] / 7, 3),
        files_30=round(files_added[30] / 30, 3),
    )


def added_files(snapshot: dict[str, Any]) -> int:
    """The data and delete files a snapshot added, from its summary (0 where it does not say)."""
    return _summary_int(snapshot, "added-data-files") + _summary_int(snapshot, "added-delete-files")


def _summary_int(snapshot: dict[str, Any], key: str) -> int:
    try:
        return int((snapshot.get("summary") or {}).get(key, 0))
    except (TypeError, ValueError):
        return 0


def commit_rate_warning(history: CommitHistory, duration_s: float, sync_days: float) -> Finding | None:
    """A table that keeps committing between its copy and the cutover needs incremental syncs
    (each copies only what was added) until writers stop: at least one commit expected in the
    sync window."""
    rate = max(history.per_day_7, history.per_day_30)
    window = rate * sync_days
    if window < 1:
        return None
    during = rate * duration_s / 86_400
    return Finding(
        kind="commit_rate",
        message=f"the table keeps committing ({a_day(history.per_day_7)} over the last 7 days, "
        f"{a_day(history.per_day_30)} over 30): {count(window, 'commit')} in a {sync_days:g}-day sync "
        f"window; {count(during)} expected "
        "during the copy. Plan incremental syncs (mode incremental, or the scheduled sync) until "
        "writers stop, then icelake migrate cutover",
    )


def count(n: float, noun: str = "") -> str:
    """An expected count as a person says it: 'fewer than 1', 'about 4 commits', 'about 1,200
    commits'; never a float."""
    if n < 1:
        said = "fewer than 1"
    else:
        rounded = round(n) if n < 100 else round(n, -1) if n < 1000 else round(n, -2)
        said = f"about {rounded:,.0f}"
        noun = noun + ("s" if noun and rounded != 1 else "")
    return f"{said} {noun}" if noun else said


def a_day(rate: float) -> str:
    """A daily rate as a person says it: 'about 3 commits a day', 'about 1 commit every 5 days'."""
    if rate <= 0:
        return "no commits"
    if rate >= 0.75:
        return f"{count(rate, 'commit')} a day"
    return f"about 1 commit every {round(1 / rate):,} days"
