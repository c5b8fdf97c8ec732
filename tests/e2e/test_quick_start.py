"""The README's local quick start, verbatim: `icelake local up --with-lake` in one shell, the
`export` line it prints, then `icelake assess --request tests/events/migrate_request.json` and
`icelake migrate start --request tests/events/migrate_request.json` in another. Every table of the
source database `sales` must end migrated, and the run must account for itself as the assessment
estimated: each table's S3 requests within 20 % of the estimate, its copies exactly. Both pages,
assessment.html and the run's report.html, are read in a real browser."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import boto3
import pytest

from tests.browser import assert_readable, load

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
REQUEST = "tests/events/migrate_request.json"
S3TABLES_REQUEST = "tests/events/migrate_request_s3tables.json"  # the same tables into a table bucket


def _icelake() -> str:
    return shutil.which("icelake", path=os.path.dirname(sys.executable)) or "icelake"


def _icelake_in(shell: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """An icelake command in the user's second shell."""
    return subprocess.run(
        [_icelake(), *args], capture_output=True, text=True, env=shell, cwd=REPO, timeout=600, check=False
    )


def _clean_env() -> dict[str, str]:
    """The user's shell: no endpoint or credentials of the test session."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


def test_the_readme_quick_start_migrates_the_sample_tables(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    quick_start = readme[readme.index("## Quick start") :]
    assert "icelake local up --with-lake" in quick_start
    assess_line = "icelake assess --request tests/events/migrate_request.json --out assessment/"
    start_line = "icelake migrate start --request tests/events/migrate_request.json"
    assert quick_start.index(assess_line) < quick_start.index(start_line)  # assess comes first

    env = {**_clean_env(), "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [_icelake(), "local", "up", "--with-lake", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=REPO,
    )
    assert server.stdout is not None
    printed: list[str] = []
    try:
        timer = threading.Timer(300, server.kill)  # never hang the suite on a server that did not start
        timer.start()
        for line in server.stdout:
            printed.append(line.rstrip())
            if line.startswith("Ctrl-C stops it"):
                break
        timer.cancel()
        exports = next(line for line in printed if line.strip().startswith("export "))
        shell = {**_clean_env()}
        for assignment in shlex.split(exports.strip())[1:]:
            key, _, value = assignment.partition("=")
            shell[key] = value
        assert any("sales.customers" in line and "sales.orders" in line for line in printed), printed

        out = tmp_path / "assessment"
        assessed = _icelake_in(shell, "assess", "--request", REQUEST, "--out", str(out), "--json")
        assert assessed.returncode == 0, assessed.stdout + assessed.stderr
        summary = json.loads(assessed.stdout)
        assert summary["assessment_html_uri"] == (out / "assessment.html").resolve().as_uri()
        assessment = json.loads((out / "assessment.json").read_text())
        estimates = {t["table"]: t for t in assessment["tables"]}
        assert set(estimates) == {"sales.orders", "sales.customers"}
        assert not any(t["blockers"] for t in assessment["tables"])

        started = _icelake_in(shell, "migrate", "start", "--request", REQUEST)
        assert started.returncode == 0, started.stdout + started.stderr
        output = started.stdout + started.stderr
        assert "Traceback" not in output
        for table in ("sales.orders", "sales.customers"):
            assert any(table in line and "migrated" in line for line in output.splitlines()), output
        run_id = next(line for line in output.splitlines() if line.startswith("started ")).rsplit(":", 1)[1]
        shown = _icelake_in(shell, "migrate", "status", run_id, "--json")
        assert shown.returncode == 0, shown.stderr
        report = json.loads(shown.stdout)
        _the_run_is_as_estimated(report, estimates)
        _both_pages_read_in_a_browser(report, out, shell, tmp_path)

        _into_the_table_bucket(quick_start, shell)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


def _into_the_table_bucket(quick_start: str, shell: dict[str, str]) -> None:
    """The quick start's other line: the same tables into the sample's S3 Tables table bucket."""
    assert f"icelake migrate start --request {S3TABLES_REQUEST}" in quick_start
    into_bucket = _icelake_in(shell, "migrate", "start", "--request", S3TABLES_REQUEST)
    output = into_bucket.stdout + into_bucket.stderr
    assert into_bucket.returncode == 0 and "Traceback" not in output, output
    for table in ("sales.orders", "sales.customers"):
        assert any(table in line and "migrated" in line for line in output.splitlines()), output


def _the_run_is_as_estimated(report: dict[str, object], estimates: dict[str, dict[str, object]]) -> None:
    """Each table's own account (requests its steps' clients counted) against the assessment."""
    tables = report["tables"]
    assert isinstance(tables, list) and len(tables) == 2
    for outcome in tables:
        estimate = estimates[outcome["table"]]["estimate"]
        counted, predicted = outcome["requests"], estimate["requests"]
        assert sum(counted.values()) > 0
        assert abs(sum(predicted.values()) - sum(counted.values())) <= 0.2 * sum(counted.values()), (
            outcome["table"], predicted, counted,
        )  # fmt: skip
        assert predicted["copy"] == counted["copy"] == outcome["files_copied"]
        assert set(outcome["duration_s"]) == {"plan", "copy", "validate"}
        assert outcome["cost_usd"]["total"] > 0


def _both_pages_read_in_a_browser(
    report: dict[str, object], out: Path, shell: dict[str, str], tmp_path: Path
) -> None:
    html_uri = str(report["report_html_uri"])
    bucket, _, key = html_uri.removeprefix("s3://").partition("/")
    s3 = boto3.Session(
        aws_access_key_id=shell["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=shell["AWS_SECRET_ACCESS_KEY"],
        region_name=shell["AWS_DEFAULT_REGION"],
    ).client("s3", endpoint_url=shell["AWS_ENDPOINT_URL"])
    page = tmp_path / "report.html"
    page.write_bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    tables = ["sales.customers", "sales.orders"]
    charts = ["#requests-chart", "#cost-chart", "#kinds-chart"]
    assert_readable(load(page, charts, sort_by="requests", name="report-quick-start"), page, tables, charts)
    charts = ["#lanes-chart", "#cost-chart"]
    assessment = out / "assessment.html"
    assert_readable(
        load(assessment, charts, sort_by="data", name="assessment-quick-start"), assessment, tables, charts
    )
