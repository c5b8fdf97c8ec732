"""The throughput model is a file: `icelake assess --throughput FILE` and a request's
`options.throughput` set the estimate's parameters, assessment.json records the model used, and a
bad file is refused in one line naming its field (exit 2)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from icelake.assess.pages.html import duration_range
from icelake.cli import app
from icelake.throughput import ThroughputModel, shipped_throughput
from tests.lake import Lake, add_source_table

EMBEDDED = Path(__file__).resolve().parents[2] / "icelake" / "throughput" / "embedded.json"


def _assess(tmp_path: Path, body: dict[str, Any], name: str, *extra: str) -> tuple[int, dict[str, Any]]:
    request = tmp_path / f"{name}-request.json"
    request.write_text(json.dumps(body))
    out = tmp_path / name
    result = CliRunner().invoke(app, ["assess", "--request", str(request), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return result.exit_code, json.loads((out / "assessment.json").read_text())


@pytest.mark.slow
def test_the_model_comes_from_a_file_or_the_request_and_the_assessment_records_it(
    lake: Lake, tmp_path: Path
) -> None:
    # Given a table, and a model ten times slower than the embedded AWS's in every request
    add_source_table(lake, "orders", [[1, 2], [3], [4, 5]])
    body = lake.request("unused")
    body.pop("run_id")
    embedded = shipped_throughput("embedded")
    slow = embedded.model_copy(
        update={"name": "slow", "latency_s": {k: v * 10 for k, v in embedded.latency_s.items()}}
    )
    slow_file = tmp_path / "slow.json"
    slow_file.write_text(slow.model_dump_json())

    # When it is assessed with no model, with the embedded AWS's file, with the slow file, and
    # with the slow model in the request's options
    _, default = _assess(tmp_path, body, "default")
    _, by_file = _assess(tmp_path, body, "embedded", "--throughput", str(EMBEDDED))
    _, by_slow_file = _assess(tmp_path, body, "slow", "--throughput", str(slow_file))
    in_request = {**body, "options": {**body.get("options", {}), "throughput": slow.model_dump()}}
    _, by_request = _assess(tmp_path, in_request, "request")

    # Then each assessment records the model it used, and its estimates follow that model
    assert default["model"]["throughput"] == ThroughputModel().model_dump(mode="json")
    assert by_file["model"]["throughput"] == embedded.model_dump(mode="json")
    assert by_slow_file["model"]["throughput"] == slow.model_dump(mode="json")
    assert by_request["model"]["throughput"] == slow.model_dump(mode="json")

    def copy_s(assessment: dict[str, Any]) -> float:
        return float(assessment["tables"][0]["estimate"]["duration_by_phase"]["copy"])

    start = embedded.lambda_start_s  # the copy's start is not a latency: the rest grows tenfold
    assert copy_s(by_slow_file) - start == pytest.approx(10 * (copy_s(by_file) - start), rel=0.01)
    assert copy_s(by_request) == copy_s(by_slow_file)

    # and each time estimate carries its range (the model's latency spread and start-up ranges),
    # which the page shows
    for assessment in (default, by_file, by_slow_file):
        estimate, run = assessment["tables"][0]["estimate"], assessment["run"]
        low, high = estimate["duration_range_s"]
        assert low < estimate["duration_s"] < high
        assert run["duration_range_s"][0] < run["duration_s"] < run["duration_range_s"][1]
    page = (tmp_path / "embedded" / "assessment.html").read_text()
    table_range = by_file["tables"][0]["estimate"]["duration_range_s"]
    assert duration_range(by_file["tables"][0]["estimate"]["duration_s"], table_range) in page
    assert duration_range(by_file["run"]["duration_s"], by_file["run"]["duration_range_s"]) in page
    # and which rule chose the engine, on the table's engine
    rule = by_file["tables"][0]["engine_rule"]
    assert rule.startswith("thresholds and estimate: under both thresholds (3 files")
    assert f'title="{html.escape(rule)}">lambda</td>' in page


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ('{"latency_s": {"get": "fast"}}', "latency_s.get"),
        ('{"latency_s": {"gets": 0.01}}', "latency_s"),
        ('{"glue_workers": 1}', "glue_workers"),
        ('{"copy_mib_per_s": 100, "threads": 4}', "threads"),
        ("not json", "not a readable JSON throughput model"),
    ],
)
def test_a_bad_model_file_is_refused_in_one_line_naming_the_field(
    tmp_path: Path, content: str, named: str
) -> None:
    # Given a model file with one thing wrong
    model = tmp_path / "model.json"
    model.write_text(content)

    # When a table is assessed with it (refused before anything is read)
    result = CliRunner().invoke(
        app,
        [
            "assess",
            "--metadata",
            "s3://nowhere/lake/t/metadata/00001-x.metadata.json",
            "--target-location",
            "s3://elsewhere/lake/t",
            "--throughput",
            str(model),
            "--out",
            str(tmp_path / "out"),
        ],
    )

    # Then the command exits 2 with one line that names the field, and writes nothing
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("icelake: error: "), result.output
    assert named in lines[0]
    assert not (tmp_path / "out").exists()
