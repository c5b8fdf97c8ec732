"""`icelake assess --request` over an estate of many tiny tables on the embedded AWS (issue 48):
tables assessed side by side give the same assessment as one at a time, the progress is a few
lines (not one per table), assessment.json groups warnings and blockers by kind, and
assessment.html, in headless Chromium at 1280 px, opens with that summary and the table of
tables, which filters, sorts and pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from icelake.cli import app
from tests.browser import explore
from tests.estate import foreign_target, tiny_tables
from tests.lake import Lake

pytestmark = pytest.mark.slow

TABLES = 51  # and the seed table: 52, more than a page (50 rows) of the table of tables


def _assess(request: Path, out: Path, concurrency: int) -> tuple[int, dict[str, Any], str, str]:
    result = CliRunner().invoke(
        app, ["assess", "--request", str(request), "--out", str(out), "--concurrency", str(concurrency)]
    )
    return result.exit_code, json.loads((out / "assessment.json").read_text()), result.stderr, result.stdout


def test_an_estate_assessed_side_by_side_is_the_one_assessed_in_turn(lake: Lake, tmp_path: Path) -> None:
    # Given 52 tiny tables, one of them with a target table icelake did not create
    names = tiny_tables(lake, TABLES)
    foreign_target(lake, "bulk", "t0003")
    request = tmp_path / "request.json"
    body = lake.request("unused", selection={"databases": ["bulk"]})
    body.pop("run_id")
    request.write_text(json.dumps(body))

    # When the estate is assessed one table at a time, then eight at a time
    code_1, one, log_1, _ = _assess(request, tmp_path / "one", 1)
    code_8, eight, log_8, printed = _assess(request, tmp_path / "eight", 8)

    # Then both say the same of every table, in the selection's order (only the time differs)
    assert code_1 == code_8 == 1  # one table is blocked
    assert [t["table"] for t in one["tables"]] == names
    one.pop("generated_at"), eight.pop("generated_at")
    assert one == eight
    # ... each table's own requests counted on the clients it borrowed, none of another's
    requests = {json.dumps(t["estimate"]["requests"], sort_keys=True) for t in one["tables"] if t["estimate"]}
    assert len(requests) == 1, requests  # the tables are alike, so are their requests

    # ... the progress is at most a line a tenth of the estate, with the counts by outcome
    for log in (log_1, log_8):
        lines = [line for line in log.splitlines() if line.startswith("[icelake] assessed")]
        assert 1 <= len(lines) <= 11, log
        assert lines[-1].endswith(f": 0 ok, {TABLES} warnings, 1 blocked"), lines[-1]

    # ... the terminal's table names the blocked table and counts the rest in one line
    rows = [line for line in printed.splitlines() if "bulk." in line or "more" in line]
    assert len(rows) == 2 and "bulk.t0003" in rows[0] and f"{TABLES} more" in rows[1], printed

    # ... and the warnings and blockers are grouped by kind, each with its tables
    assert one["warnings_by_kind"]["commit_rate"]["count"] == TABLES + 1
    assert one["warnings_by_kind"]["commit_rate"]["tables"] == names
    blocked = one["blockers_by_kind"]["target_not_ours"]
    assert blocked["count"] == 1 and blocked["tables"] == ["bulk.t0003"] and blocked["message"]

    # ... and the page opens with the summary and the table of tables within the first 1,500 px
    page = tmp_path / "eight" / "assessment.html"
    seen = explore(page, "assessment-estate", "bulk.t0003")
    assert seen.console_errors == [] and seen.requests == [page.resolve().as_uri()]
    assert seen.table_top < 1500, seen.table_top
    assert len(seen.kind_lines) == 2, seen.kind_lines  # one line per kind, collapsed
    assert (
        "1 table(s) target_not_ours" in seen.kind_lines[0]
        and f"{TABLES + 1} table(s) commit_rate" in seen.kind_lines[1]
    )
    assert "What to do: Choose another target name" in seen.kind_opened and "bulk.t0003" in seen.kind_opened
    # ... 50 rows a page, the rest on the next
    total = TABLES + 1
    assert seen.first_page == names[:50] and seen.pager.startswith(f"rows 1–50 of {total}")
    assert seen.second_page == names[50:] and seen.second_pager.startswith(f"rows 51–{total} of {total}")
    # ... a table's name filters to that table, a kind's button to its tables
    assert seen.filtered == ["bulk.t0003"] and seen.by_kind == ["bulk.t0003"]
    assert seen.sorted_first == names[-1]  # the first column, clicked twice: descending
