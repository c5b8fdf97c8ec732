"""`icelake assess --request` over an estate of many tiny tables on the embedded AWS (issue 48):
tables assessed side by side give the same assessment as one at a time, the progress is a few
lines (not one per table), and assessment.json groups warnings and blockers by kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from icelake.cli import app
from tests.estate import foreign_target, tiny_tables
from tests.lake import Lake

pytestmark = pytest.mark.slow

TABLES = 24


def _assess(request: Path, out: Path, concurrency: int) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(
        app, ["assess", "--request", str(request), "--out", str(out), "--concurrency", str(concurrency)]
    )
    return result.exit_code, json.loads((out / "assessment.json").read_text()), result.stderr


def test_an_estate_assessed_side_by_side_is_the_one_assessed_in_turn(lake: Lake, tmp_path: Path) -> None:
    # Given 25 tiny tables, one of them with a target table icelake did not create
    names = tiny_tables(lake, TABLES)
    foreign_target(lake, "bulk", "t0003")
    request = tmp_path / "request.json"
    body = lake.request("unused", selection={"databases": ["bulk"]})
    body.pop("run_id")
    request.write_text(json.dumps(body))

    # When the estate is assessed one table at a time, then eight at a time
    code_1, one, log_1 = _assess(request, tmp_path / "one", 1)
    code_8, eight, log_8 = _assess(request, tmp_path / "eight", 8)

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

    # ... and the warnings and blockers are grouped by kind, each with its tables
    assert one["warnings_by_kind"]["commit_rate"]["count"] == TABLES + 1
    assert one["warnings_by_kind"]["commit_rate"]["tables"] == names
    blocked = one["blockers_by_kind"]["target_not_ours"]
    assert blocked["count"] == 1 and blocked["tables"] == ["bulk.t0003"] and blocked["message"]
