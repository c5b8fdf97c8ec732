"""report.json and report.html of a run of many tables (issue 48), written by the real Report step
from outcomes made from a real run's (the module fixture of test_report_results: the real ASL on
the embedded AWS), then read in headless Chromium at 1280 px: why tables were not migrated and what
the run warned of, grouped by kind; what stands out; the table of tables right after, with its
filter and pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from icelake.workflow import steps
from icelake.workflow.client import read_report
from icelake.workflow.inputs import ReportInput
from tests.browser import explore
from tests.functional.test_report_results import RealRun, _entry, _export, _worklist, real

pytestmark = pytest.mark.slow
__all__ = ["real"]  # the module fixture, one real run for this module

TABLES = 300


def _outcome(template: dict[str, Any], i: int, name: str) -> dict[str, Any]:
    """Table i of the run: every 30th rolled back (an AccessDenied in Copy), every 50th diverged,
    every 20th with an earlier target left in place; each a little slower than the one before."""
    outcome = {**template, "run_id": "estate-1", "table": name, "seconds": 1.0 + i / 10}
    if i % 30 == 7:
        outcome |= {
            "status": "rolled_back",
            "error": {
                "type": "AccessDenied",
                "message": f"the target role may not write s3://target/{name}/data",
                "step": "CopyInLambda",
                "hint": "grant the target role s3:PutObject on the target prefix",
            },
        }
    elif i % 50 == 11:
        outcome |= {
            "status": "diverged",
            "error": {"type": "diverged", "message": "a foreign commit", "step": "Plan"},
        }
    if i % 20 == 3:
        outcome["warnings"] = [
            f"bulk.old_{i} is an earlier target of {name} (its target name has changed since); it was left "
            "as it is (icelake created it): drop it when nothing reads it any more"
        ]
    if i == 123:  # the one furthest from its estimate in requests
        outcome["requests"] = {**template["requests"], "get": template["requests"]["get"] + 500}
    return outcome


def test_a_run_of_300_tables_reads_at_a_glance(real: RealRun, tmp_path: Path) -> None:
    # Given 300 outcomes exported by the Map
    template = real.report["tables"][0]
    assert template["status"] == "migrated" and template["estimate"], template
    names = [f"bulk.t{i:04d}" for i in range(TABLES)]
    outcomes = [_outcome(template, i, name) for i, name in enumerate(names)]
    entries = [_entry(real, i, o["table"], "SUCCEEDED", o) for i, o in enumerate(outcomes)]
    payload = _export(real, "estate-1", {"SUCCEEDED": [entries]})
    payload.update(_worklist(real, "estate-1", names))

    # When the Report step runs
    summary = steps.report(ReportInput.model_validate(payload), real.lake.deps)

    # Then report.json groups why tables were not migrated, and the warnings, by kind
    report = read_report(summary.report_uri)
    denied = [n for i, n in enumerate(names) if i % 30 == 7]
    diverged = [n for i, n in enumerate(names) if i % 50 == 11 and i % 30 != 7]
    earlier = [n for i, n in enumerate(names) if i % 20 == 3]
    blockers = report["blockers_by_kind"]
    assert list(blockers) == ["AccessDenied", "diverged"]
    assert blockers["AccessDenied"]["count"] == len(denied) and blockers["AccessDenied"]["tables"] == denied
    assert blockers["AccessDenied"]["hint"] == "grant the target role s3:PutObject on the target prefix"
    assert blockers["diverged"]["tables"] == diverged
    assert report["warnings_by_kind"]["earlier_target"]["tables"] == earlier

    # ... and report.html opens with them, what stands out, then the table of tables
    bucket, _, key = summary.report_html_uri.removeprefix("s3://").partition("/")
    page = tmp_path / "report.html"
    page.write_bytes(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
    seen = explore(page, "report-estate", "bulk.t0123")
    assert seen.console_errors == [] and seen.requests == [page.resolve().as_uri()]
    assert seen.table_top < 1500, seen.table_top
    lines = seen.kind_lines
    assert any(
        line.startswith("10 furthest from their estimate in S3 requests: bulk.t0123") for line in lines
    )
    assert any(line.startswith("10 slowest: bulk.t0299") for line in lines), lines
    assert any(f"{len(denied)} table(s) AccessDenied" in line for line in lines), lines
    assert any(f"{len(earlier)} table(s) earlier_target" in line for line in lines), lines
    assert seen.first_page == names[:50] and seen.pager.startswith(f"rows 1–50 of {TABLES}")
    assert seen.second_page == names[50:100]
    assert seen.filtered == ["bulk.t0123"]
    assert seen.sorted_first == names[-1]
    text = json.dumps(report)
    assert len(page.read_bytes()) < 4 * len(text)  # the page grows with the report, no faster
