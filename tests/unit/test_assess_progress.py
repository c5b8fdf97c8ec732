"""How far `icelake assess` is over an estate (issue 48): on a terminal a bar with the counts by
outcome, redrawn in place; off one a line at each tenth of the tables; never a line per table."""

from __future__ import annotations

import io

from rich.console import Console

from icelake.assess.cli import Tally
from icelake.assess.schema import Finding, TableAssessment

TABLES = 300


def _assessed(i: int) -> TableAssessment:
    blockers = [Finding(kind="target_not_ours", message="theirs")] if i % 100 == 0 else []
    warnings = [Finding(kind="commit_rate", message="busy")] if i % 3 == 0 else []
    return TableAssessment(
        table=f"bulk.t{i:04d}",
        source_metadata_location=f"s3://source/bulk/t{i:04d}/metadata/v1.metadata.json",
        target_location=f"s3://target/bulk/t{i:04d}",
        planned=True,
        blockers=blockers,
        warnings=warnings,
    )


def _shown(terminal: bool) -> str:
    out = io.StringIO()
    with Tally(Console(file=out, force_terminal=terminal, width=120)) as tally:
        for done in range(1, TABLES + 1):
            tally(_assessed(done - 1), done, TABLES)
    return out.getvalue()


def test_a_terminal_shows_one_bar_with_the_counts_by_outcome() -> None:
    shown = _shown(terminal=True)
    assert "300/300" in shown and "198 ok, 99 warnings, 3 blocked" in shown, shown[-400:]
    assert (
        "[icelake]" not in shown and "bulk.t" not in shown and shown.count("\n") < 20
    )  # no line per tenth or table


def test_off_a_terminal_a_line_a_tenth() -> None:
    lines = _shown(terminal=False).splitlines()
    assert len(lines) == 10, lines
    assert lines[0].startswith("[icelake] assessed 30/300 table(s) in ")
    assert lines[-1].endswith(": 198 ok, 99 warnings, 3 blocked")
