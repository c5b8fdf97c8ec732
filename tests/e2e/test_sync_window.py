"""The sync window priced (issue 45) on embedded AWS: the workflow's assessment of a table that
commits every hour, synced every hour, shows what the syncs until cutover send and cost, and the
cutover's freeze beside the full copy's time; then a full run and n incremental runs, each bringing
the commit an hour brings, send within 20 % of the requests it estimated for them."""

from __future__ import annotations

import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest

from icelake.assess.pages.html import duration
from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution
from icelake.workflow.client import read_report
from tests.browser import assert_readable, load
from tests.e2e.conftest import run_workflow
from tests.lake import Lake, add_source_table, commit

pytestmark = pytest.mark.slow

HOURS = 24  # commits, an hour apart, ending an hour ago
SYNCS = 3  # incremental runs after the full one


@contextmanager
def hourly_clock(hours: int) -> Iterator[None]:
    """pyiceberg stamps each new snapshot an hour after the last, the last an hour ago."""
    from pyiceberg.table import snapshots

    now = time.time()
    ticks = iter([now - 3600 * (hours - i) for i in range(hours)])
    names = vars(snapshots)  # the module's own `time`, which its Snapshot's timestamp_ms calls
    real = names["time"]
    names["time"] = types.SimpleNamespace(time=lambda: next(ticks))
    try:
        yield
    finally:
        names["time"] = real


def test_an_hourly_table_s_sync_window_is_priced_and_its_syncs_send_what_was_estimated(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    # Given a table that committed every hour over the last day, one file a commit
    lake, deployment = world
    with hourly_clock(HOURS):
        add_source_table(lake, "orders", [[i] for i in range(HOURS)])

    # When the workflow assesses it with a sync every hour
    options = {"concurrency": 2, "validation": "rows", "sync_interval": "rate(1 hour)"}
    request = lake.request("assess-sync", mode="assess", options=options)
    result = run_execution(deployment.state_machine_arn, request, timeout=300, name="assess-sync")
    assert result.status == "SUCCEEDED", result.failure()
    assessment = read_report(result.output["report_uri"])

    # Then its sync window and its cutover's freeze are priced (see _priced_hourly)
    per_sync = _priced_hourly(assessment)

    # ... and the page shows the window's row and chart and the freeze, clean in a real browser
    _page_shows_window(str(result.output["report_html_uri"]), tmp_path)

    # When a full run is followed by n incremental runs, each after one more commit
    run_workflow(deployment, lake.request("sync-full", options=options))
    counted = 0
    for n in range(SYNCS):
        commit(lake, "orders", [1000 + n])
        report = run_workflow(deployment, lake.request(f"sync-{n}", mode="incremental", options=options))
        (outcome,) = report["tables"]
        assert outcome["status"] == "migrated" and outcome["sync"] == "incremental", outcome
        counted += sum(outcome["requests"].values())

    # Then they sent within 20 % of the requests the assessment estimated for n syncs
    estimated = SYNCS * sum(per_sync["requests"].values())
    assert abs(counted - estimated) <= 0.2 * estimated, (counted, estimated)

    # ... and the last run's report.html shows its estimated time as a range, clean in a browser
    _report_shows_range(report, tmp_path)


def _priced_hourly(assessment: dict[str, Any]) -> dict[str, Any]:
    """The assessment's sync window: 30 days of hourly syncs, a 1/7 share of them bringing a commit
    (its rate over the last 7 days: 24 commits), priced in requests and dollars, per table and in
    all; and the cutover's freeze, one hour's commit, beside the full copy's time. Returns the
    estimate of one sync that brings a commit."""
    (table,) = assessment["tables"]
    assert table["planned"] and table["sync_window"], table["blockers"]
    window = table["sync_window"]
    assert window["interval_s"] == 3600 and window["syncs"] == pytest.approx(720)
    assert table["commits_per_day"]["7d"] == pytest.approx(HOURS / 7, abs=1e-3)
    assert window["syncs_with_commits"] == pytest.approx(720 * HOURS / 7 / 24, rel=1e-3)
    assert window["commits_per_sync"] == 1 and window["files_per_sync"] == 1
    # pyiceberg's fast append: each commit's new manifest holds its one file's entry
    assert window["manifest_entries_per_commit"] == 1
    per_sync = window["per_sync"]
    assert set(per_sync["requests_by_phase"]) == {"plan", "copy", "validate"}
    assert per_sync["requests"]["copy"] == 1  # the one file the commit added, nothing else
    assert sum(window["requests"].values()) > 720 * sum(window["idle_sync"]["requests"].values())
    assert window["cost_usd"]["total"] > 0 and window["cost_usd"]["s3_requests"] > 0
    assert assessment["totals"]["sync_window_cost_usd"]["total"] == window["cost_usd"]["total"]
    assert assessment["totals"]["sync_window_requests"] == window["requests"]
    assert assessment["model"]["sync_interval"] == "rate(1 hour)"
    # ... and the cutover's freeze, one hour's commit, beside the full copy's time
    freeze = table["cutover"]
    assert freeze["commits"] == 1 and freeze["manifest_entries"] == 1
    assert set(freeze["freeze_by_step"]) == {
        "plan",
        "copy",
        "register",
        "validate",
        "proof",
        "rest",
    }
    assert freeze["freeze_range_s"][0] <= freeze["freeze_s"] <= freeze["freeze_range_s"][1]
    assert freeze["full_copy_s"] == table["estimate"]["duration_s"]
    return dict(per_sync)


def _page_shows_window(html_uri: str, tmp_path: Path) -> None:
    bucket, _, key = html_uri.removeprefix("s3://").partition("/")
    page = tmp_path / "assessment.html"
    page.write_bytes(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
    charts = ["#sync-chart", "#freeze-chart"]
    seen = load(page, charts, sort_by="sync window", name="assessment-sync-window")
    assert_readable(seen, page, ["sales.orders"], charts)
    assert "Sync window until cutover" in seen.text and "720 incremental syncs" in seen.text
    assert "Cutover: how long writers stop" in seen.text


def _report_shows_range(report: dict[str, Any], tmp_path: Path) -> None:
    (outcome,) = report["tables"]
    low, high = outcome["estimate"]["duration_range_s"]
    assert low <= outcome["estimate"]["duration_s"] <= high and low < high
    bucket, _, key = str(report["report_html_uri"]).removeprefix("s3://").partition("/")
    report_page = tmp_path / "report.html"
    report_page.write_bytes(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
    seen = load(report_page, [], sort_by="est. time", name="report-sync-range")
    assert_readable(seen, report_page, ["sales.orders"], [])
    assert f"{duration(low)} to {duration(high)}" in seen.text, seen.text
