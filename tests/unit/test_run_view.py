"""What `icelake migrate start` and `status` print of a run of 1,000 tables (issue 48): on a
terminal one live display redrawn in place, not a line per table per state; a line per state
change with --verbose or off a terminal; and a final table of the failed and unusual tables with
the rest as one count line. The statuses are what `follow` polls from the ledger, as it would see
1,000 tables go through their states."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from icelake.run_view import FULL_TABLE, RunView, report_table, run_table
from icelake.workflow.client import RunStatus

TABLES = 1000
STATES = ("PLANNED", "COPYING", "REGISTERED", "VALIDATED")


def _polls() -> list[RunStatus]:
    """Five polls: each moves every table one state on; the last ends 20 tables ROLLED_BACK."""
    names = [f"bulk.t{i:04d}" for i in range(TABLES)]
    polls = [RunStatus("big-1", "RUNNING", dict.fromkeys(names, state)) for state in STATES]
    last = {n: ("ROLLED_BACK" if i % 50 == 0 else "VALIDATED") for i, n in enumerate(names)}
    return [*polls, RunStatus("big-1", "RUNNING", last)]


def _shown(terminal: bool, verbose: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=120)
    with RunView(console, "big-1", verbose=verbose) as view:
        for status in _polls():
            view(status)
            view(status)  # polled again, nothing changed
    return out.getvalue()


def test_a_terminal_shows_one_live_display_of_counts_and_failures() -> None:
    shown = _shown(terminal=True, verbose=False)
    final = shown.rsplit("run big-1", 1)[-1]  # the display as last drawn (it is redrawn in place)
    assert "1,000 of 1,000 table(s) ended" in final and "a minute" in final
    assert "rolled_back 20 · validated 980" in final
    assert "failed: bulk.t0000, bulk.t0050" in final and "and 10 more" in final
    assert "[icelake]" not in shown  # no line per table
    assert shown.count("\n") < 200, shown.count("\n")


def test_verbose_or_off_a_terminal_is_a_line_per_state_change() -> None:
    for terminal, verbose in ((False, False), (True, True)):
        lines = _shown(terminal, verbose).splitlines()
        assert len(lines) == 4 * TABLES + 20  # four states each, then 20 roll back
        assert lines[0] == "[icelake] big-1 bulk.t0000: PLANNED"


def _outcome(i: int) -> dict[str, Any]:
    failed = i % 100 == 0
    return {
        "table": f"bulk.t{i:04d}",
        "status": "rolled_back" if failed else "migrated",
        "files_copied": 2,
        "files_verified": 2,
        "bytes_copied": 1800,
        "files_rewritten": 5,
        "files_skipped": 0,
        "snapshots_validated": 2,
        "error": {"type": "AccessDenied", "message": "no", "step": "CopyInLambda"} if failed else None,
        "warnings": ["bulk.old is an earlier target of it"] if i == 7 else [],
    }


def _rows(table: Any) -> list[str]:
    return list(table.columns[0]._cells)


def test_the_final_table_shows_failed_and_unusual_tables_first_and_counts_the_rest() -> None:
    report = {"run_id": "big-1", "status": "partial", "tables": [_outcome(i) for i in range(TABLES)]}
    rows = _rows(report_table(report))
    assert rows[:10] == [f"bulk.t{i:04d}" for i in range(0, TABLES, 100)]  # failed first
    assert rows[10] == "bulk.t0007"  # then a warning
    assert rows[11:] == ["… 989 more"] and list(report_table(report).columns[1]._cells)[11] == "989 migrated"

    small = {**report, "tables": report["tables"][:FULL_TABLE]}
    rows = _rows(report_table(small))
    assert len(rows) == FULL_TABLE and rows[:2] == ["bulk.t0000", "bulk.t0007"]


def test_status_of_a_big_run_not_ended_is_its_counts() -> None:
    out = io.StringIO()
    Console(file=out, width=120).print(run_table(_polls()[-1]))
    assert "rolled_back 20 · validated 980" in out.getvalue() and out.getvalue().count("\n") <= 4
