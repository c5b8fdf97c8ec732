"""What `icelake migrate start` and `status` show of a run, for a run of any size (issue 48).

While it runs: on a terminal, one live display (counts by state, tables ended a minute, the failed
ones by name), redrawn in place; with --verbose or off a terminal (logs, CI), one line per state
change, as before. When it ends: the failed and unusual tables first, and the others as one count
line once there are more than FULL_TABLE tables. Below the command modules (as console.py is)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, get_args

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from icelake.cli_path import human_bytes
from icelake.workflow.client import RunStatus
from icelake.workflow.models import OutcomeStatus

FULL_TABLE = 50  # tables listed one a row; beyond, the usual ones are one count line
NAMED = 10  # failed tables the live display names
# Outcomes that are what a run is for; every other one (failed, rolled back, diverged, stranded,
# ...: new ones too) is shown first, by name.
USUAL = ("migrated", "in_sync", "promoted", "dry_run", "verified")
# Ledger states in which a table's run has ended: its outcome's status in upper case, except a
# validated table's (icelake/workflow/steps/validating.py) and a carried one's.
ENDED = {s.upper() for s in get_args(OutcomeStatus)} | {"VALIDATED", "CARRIED"}
FAILED = {s.upper() for s in get_args(OutcomeStatus) if s not in USUAL}


class RunView:
    """Follows a run's status (`icelake.workflow.client.follow` calls it with each poll)."""

    def __init__(self, console: Console, run_id: str, *, verbose: bool = False) -> None:
        self.console, self.run_id = console, run_id
        self.live = console.is_terminal and not verbose
        self.started = time.monotonic()
        self.last: dict[str, str] = {}
        self._display: Live | None = None

    def __enter__(self) -> RunView:
        if self.live:
            self._display = Live(console=self.console, refresh_per_second=2, transient=False)
            self._display.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._display is not None:
            self._display.__exit__(None, None, None)

    def __call__(self, status: RunStatus) -> None:
        if self._display is not None:
            self._display.update(progress(status, time.monotonic() - self.started))
            return
        for name, state in sorted(status.tables.items()):
            if self.last.get(name) != state:
                self.console.print(f"[icelake] {self.run_id} {name}: {state}", highlight=False, markup=False)
        self.last = dict(status.tables)


def progress(status: RunStatus, seconds: float | None = None) -> RenderableType:
    """A run as it goes: its tables by state, how many ended a minute (`seconds` since following
    began), and the failed ones by name (the first NAMED)."""
    states = Counter(status.tables.values())
    ended = sum(n for state, n in states.items() if state in ENDED)
    head = (
        f"run {status.run_id}: {status.execution_status}, {ended:,} of {len(status.tables):,} table(s) ended"
    )
    if seconds:
        head += f" in {seconds / 60:,.1f} min, {ended / max(seconds, 1e-9) * 60:,.1f} a minute"
    by_state = " · ".join(f"{state.lower()} {n:,}" for state, n in sorted(states.items())) or "no table yet"
    failed = sorted(name for name, state in status.tables.items() if state in FAILED)
    lines: list[RenderableType] = [Text(head, style="bold"), Text(f"by state: {by_state}")]
    if failed:
        more = f" and {len(failed) - NAMED:,} more" if len(failed) > NAMED else ""
        lines.append(Text(f"failed: {', '.join(failed[:NAMED])}{more}", style="red"))
    return Group(*lines)


def run_table(status: RunStatus) -> RenderableType:
    """A run that has not ended, once (`icelake migrate status`): every table's state, or the
    summary of `progress` once there are more than FULL_TABLE."""
    if len(status.tables) > FULL_TABLE:
        return progress(status)
    table = Table(title=f"Run {status.run_id}: {status.execution_status}")
    table.add_column("table")
    table.add_column("state")
    for name, state in sorted(status.tables.items()):
        table.add_row(name, state)
    return table


def unusual(t: Mapping[str, Any]) -> bool:
    """A table to show by name: it did not end as planned, or ended with an error or a warning."""
    return str(t.get("status")) not in USUAL or bool(t.get("error")) or bool(t.get("warnings"))


def report_table(report: Mapping[str, Any]) -> Table:
    """The run's outcome: the failed tables first, then the unusual, then the rest; of more than
    FULL_TABLE tables the rest are one line that counts them by state."""
    tables: Sequence[Mapping[str, Any]] = report.get("tables", [])
    order = sorted(tables, key=lambda t: (str(t.get("status")) in USUAL, not unusual(t), str(t["table"])))
    shown = order if len(order) <= FULL_TABLE else [t for t in order if unusual(t)]
    table = Table(title=f"Run {report.get('run_id')}: {report.get('status')}")
    for col in _COLUMNS:
        table.add_column(col)
    for t in shown:
        table.add_row(*_row(t))
    rest = Counter(str(t.get("status")) for t in order[len(shown) :])
    if rest:
        said = ", ".join(f"{n:,} {state}" for state, n in rest.most_common())
        table.add_row(f"… {sum(rest.values()):,} more", said, *([""] * (len(_COLUMNS) - 2)))
    return table


_COLUMNS = (
    "table",
    "status",
    "files copied",
    "verified",
    "bytes copied",
    "rewritten",
    "skipped",
    "pruned",
    "snapshots",
    "error",
)


def _row(t: Mapping[str, Any]) -> Iterable[str]:
    return (
        str(t["table"]),
        str(t["status"]),
        str(t["files_copied"]),
        str(t.get("files_verified", 0)),
        human_bytes(int(t["bytes_copied"])),
        str(t["files_rewritten"]),
        str(t["files_skipped"]),
        str(t.get("files_pruned", 0)),
        str(t["snapshots_validated"]),
        error_text(t.get("error")) or "; ".join(str(w) for w in t.get("warnings") or [])[:300],
    )


def error_text(error: object) -> str:
    """A table's error in the CLI's table: its type and message on one line (report.json and
    report.html hold the whole message and hint)."""
    if not error:
        return ""
    if not isinstance(error, dict):  # a report written before errors had their shape
        return " ".join(str(error).split())[:300]
    text = " ".join(
        f"{error.get('type', 'Error')} in {error.get('step', '?')}: {error.get('message', '')}".split()
    )
    return text if len(text) <= 300 else text[:299] + "…"
