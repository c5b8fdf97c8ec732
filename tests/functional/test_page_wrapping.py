"""No table cell of report.html or assessment.html breaks a word or a number mid-token at 1280 px
(issue 56: `sales.cu|stomers`, `migrat|ed`, `rolled|_back`, `$0.0|003`, `commit_ra|te`). One real
table is assessed and migrated by the workflow's steps on moto; its assessment and its outcome are
then those of an estate of 300 tables with long names, a tenth of them rolled back, and both pages,
as their renderers write them, are measured cell by cell in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from icelake.assess.pages.assessment_page import render_assessment
from icelake.cli import app
from icelake.workflow import steps
from icelake.workflow.client import read_report
from icelake.workflow.inputs import InventoryInput, ReportInput
from tests.browser import cells_broken_mid_token
from tests.functional.test_workflow_steps import _run_table, _worklist
from tests.lake import Lake, add_source_table

pytestmark = pytest.mark.slow

TABLES = 300


def _names() -> list[str]:
    """Long names of the kind a lake has, each unlike the next."""
    kinds = ("customers", "customer_addresses_history", "orders_by_region_and_day", "payments")
    return [f"sales_{i % 7}.{kinds[i % len(kinds)]}_{i:04d}" for i in range(TABLES)]


def _assessed(lake: Lake, tmp_path: Path) -> dict[str, Any]:
    body = lake.request("unused")
    body.pop("run_id")
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    out = tmp_path / "assessed"
    result = CliRunner().invoke(app, ["assess", "--request", str(request), "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    return dict(json.loads((out / "assessment.json").read_text()))


def _estate_report(lake: Lake, outcome: dict[str, Any], tmp_path: Path) -> Path:
    """report.html of a run of 300 tables like `outcome`, every tenth rolled back by an error."""
    outcomes = []
    for i, name in enumerate(_names()):
        one = {**outcome, "table": name, "run_id": "estate-1", "seconds": 1.0 + i / 7}
        if i % 10 == 3:
            one |= {
                "status": "rolled_back",
                "error": {
                    "type": "AccessDenied",
                    "message": f"the target role may not write s3://target-bucket/warehouse/{name}/data",
                    "step": "CopyInLambda",
                    "hint": "grant the target role s3:PutObject on the target prefix",
                },
            }
        outcomes.append(one)
    given = ReportInput.model_validate({"run_id": "estate-1", "outcomes": outcomes})
    summary = steps.report(given, lake.deps)
    assert len(read_report(summary.report_uri)["tables"]) == TABLES
    bucket, _, key = summary.report_html_uri.removeprefix("s3://").partition("/")
    page = tmp_path / "report.html"
    page.write_bytes(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
    return page


def _estate_assessment(assessed: dict[str, Any], tmp_path: Path) -> Path:
    """assessment.html of 300 tables like the one assessed (its warnings: commit_rate, ...)."""
    (table,) = assessed["tables"]
    tables = [{**table, "table": name} for name in _names()]
    kinds = {
        field: {
            kind: {**group, "count": TABLES, "tables": _names()}
            for kind, group in (assessed.get(field) or {}).items()
        }
        for field in ("warnings_by_kind", "blockers_by_kind")
    }
    page = tmp_path / "assessment.html"
    page.write_text(render_assessment({**assessed, **kinds, "tables": tables}))
    return page


def test_no_cell_of_either_page_breaks_a_token_at_1280_px(lake: Lake, tmp_path: Path) -> None:
    # Given a table assessed, then migrated by the workflow's steps
    add_source_table(lake, "customers", [[1, 2], [3]])
    assessed = _assessed(lake, tmp_path)
    inv = steps.inventory(
        InventoryInput.model_validate({"request": lake.request("run-1"), "execution_name": "x"}),
        lake.deps,
    )
    (outcome,) = [_run_table(lake, item) for item in _worklist(lake, inv)]
    assert outcome["status"] == "migrated" and outcome["estimate"]

    # When an estate of 300 such tables is reported and assessed
    report = _estate_report(lake, outcome, tmp_path)
    assessment = _estate_assessment(assessed, tmp_path)

    # Then every cell of both pages breaks its lines only after a space, '.', '_' or '/'
    assert cells_broken_mid_token(report, "report-wrapping") == []
    assert cells_broken_mid_token(assessment, "assessment-wrapping") == []
