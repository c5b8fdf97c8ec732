"""`icelake ingest run`: the local API, embedded AWS and local Spark, end to end, from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from icelake.cli import app


@pytest.mark.spark
@pytest.mark.slow
def test_ingest_run_prints_one_summary_per_run(spark: Any, tmp_path: Path) -> None:
    args = ["ingest", "run", "--runs", "2", "--records", "20", "--page-size", "8", "--change-rate", "0.2"]
    args += ["--table", "cli_ingest.demo.customers", "--warehouse", str(tmp_path / "wh"), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summaries = json.loads(result.stdout.strip().splitlines()[-1])
    assert [s["status"] for s in summaries] == ["SUCCEEDED", "SUCCEEDED"]
    first, second = summaries
    assert (first["records_fetched"], first["inserted"], first["current_rows"]) == (20, 20, 20)
    # 20% of 20 keys: 4 changed, 2 deleted, 4 inserted (+1 stale duplicate served)
    assert (second["records_fetched"], second["inserted"], second["closed"], second["deleted"]) == (
        23,
        8,
        4,
        2,
    )
    assert second["current_rows"] == 22 and second["total_rows"] == 28


def test_ingest_run_refuses_a_bad_table_name() -> None:
    result = CliRunner().invoke(app, ["ingest", "run", "--table", "no_catalog"])
    assert result.exit_code == 2
