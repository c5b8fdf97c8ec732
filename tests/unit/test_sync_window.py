"""The sync window's price and the cutover's freeze (icelake/assess/estimate/sync_window.py), from a commit
rate and a schedule expression (icelake/request/schedule.py)."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from icelake.assess.estimate.engine_choice import Thresholds
from icelake.assess.estimate.model import PlannedWork, TableEstimate, estimate_table
from icelake.assess.estimate.prices import load_prices
from icelake.assess.estimate.sync_window import (
    SyncInputs,
    per_copy_requests,
    sync_entries,
    sync_requests,
    sync_window,
)
from icelake.request.models import Options
from icelake.request.schedule import WEEK_S, interval_seconds
from icelake.throughput import ThroughputModel

PRICES = load_prices("us-east-1")


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [
        ("rate(1 hour)", 3600),
        ("rate(15 minutes)", 900),
        ("rate(2 days)", 172_800),
        ("cron(0 * * * ? *)", 3600),
        ("cron(0/15 * * * ? *)", 900),
        ("cron(0 2 * * ? *)", 86_400),
        ("cron(30 6,18 ? * MON-FRI *)", WEEK_S / 10),
    ],
)
def test_a_schedule_is_the_seconds_between_its_runs(expression: str, seconds: float) -> None:
    assert interval_seconds(expression) == pytest.approx(seconds)


def test_a_bad_schedule_is_refused_naming_the_forms() -> None:
    with pytest.raises(ValueError, match=r"'every hour' is not a schedule expression: use rate\(N"):
        interval_seconds("every hour")
    with pytest.raises(ValidationError, match="sync_interval"):
        Options(sync_interval="rate(1 fortnight)")
    assert Options(sync_interval="rate(1 hour)").sync_interval == "rate(1 hour)"


def _inputs(schedule: str) -> SyncInputs:
    return SyncInputs(
        schedule=schedule,
        window_days=30,
        model=ThroughputModel(),
        prices=PRICES,
        thresholds=Thresholds(20_000, 100 * 1024**3, explicit=False),
        cross_region=False,
        per_copy=per_copy_requests("0" * 32, False, target_kms=False),  # an MD5 ETag: no HEAD
        directories=1,
    )


def _full() -> TableEstimate:
    work = PlannedWork({"get": 10}, {"copy": 1000}, {"get": 10}, 10**9, 1000, "lambda")
    return estimate_table(
        work, ThroughputModel(), PRICES, cross_region=False, stored_bytes=10**9, sync_days=30
    )


def test_a_sync_reads_per_commit_and_copies_per_file() -> None:
    one, four = sync_requests(1, 10, {"copy": 1}, 1), sync_requests(4, 40, {"copy": 1}, 1)
    assert one["copy"]["copy"] == 10 and four["copy"]["copy"] == 40  # the commits' files, nothing else
    assert four["plan"]["get"] - one["plan"]["get"] == 3 * 2  # each commit's list and manifest
    assert four["copy"]["put"] == 4 * 3  # each commit's metadata.json, list and manifest rewritten
    assert sync_requests(1, 5_000, {"copy": 1}, 1)["validate"]["list"] == 1 + 5  # 5 pages of 1,000
    assert sync_requests(0, 0, {"copy": 1}, 1) == {
        "plan": {"get": 7, "head": 1, "list": 1},
        "copy": {},
        "validate": {},
    }


def test_an_hourly_table_synced_hourly_and_daily() -> None:
    full = _full()
    hourly = (24.0, 24.0 * 3, 24.0 * 3 * 1_000_000)  # 24 commits a day of 3 files, 1 MB each
    window, freeze = sync_window(hourly, full, _inputs("rate(1 hour)"))
    assert window.syncs == 720 and window.syncs_with_commits == 720
    assert (window.commits_per_sync, window.files_per_sync, window.bytes_per_sync) == (1, 3, 3_000_000)
    assert window.requests == {k: n * 720 for k, n in window.per_sync.requests.items()}
    assert window.cost_usd["total"] == pytest.approx(720 * window.per_sync.cost_usd["total"], rel=1e-3)
    assert (freeze.commits, freeze.files) == (1, 3)
    assert freeze.freeze_range_s[0] <= freeze.freeze_s <= freeze.freeze_range_s[1]
    assert list(freeze.freeze_by_step) == ["plan", "copy", "register", "validate", "proof", "rest"]
    assert freeze.freeze_by_step["rest"] == ThroughputModel().map_overhead_s  # the run's Inventory, Report

    # Synced daily: 30 syncs of 24 commits each, fewer requests in all, a longer freeze
    daily, daily_freeze = sync_window(hourly, full, _inputs("rate(1 day)"))
    assert daily.syncs == 30 and daily.per_sync.requests["copy"] == 72
    assert sum(daily.requests.values()) < sum(window.requests.values())
    assert (daily_freeze.commits, daily_freeze.files) == (24, 72)
    assert daily_freeze.freeze_s > freeze.freeze_s


def test_a_table_that_rarely_commits_pays_mostly_for_syncs_that_find_nothing() -> None:
    weekly = (1 / 7, 2 / 7, 0.0)  # a commit of two files a week
    window, freeze = sync_window(weekly, _full(), _inputs("rate(1 day)"))
    assert window.syncs == 30 and window.syncs_with_commits == pytest.approx(30 / 7, rel=1e-3)
    assert window.files_per_sync == 2 and window.per_sync.requests["copy"] == 2
    idle = sum(window.idle_sync.requests.values())
    assert sum(window.requests.values()) == pytest.approx(
        30 / 7 * sum(window.per_sync.requests.values()) + 30 * 6 / 7 * idle, abs=len(window.requests)
    )
    assert (freeze.commits, freeze.files) == (1, 2)  # the last sync may still bring one

    quiet, quiet_freeze = sync_window((0.0, 0.0, 0.0), _full(), _inputs("rate(1 day)"))
    assert quiet.syncs_with_commits == 0 and sum(quiet.requests.values()) == 30 * idle
    assert quiet_freeze.commits == 0 and quiet_freeze.freeze_by_step["copy"] <= freeze.freeze_by_step["copy"]


def test_a_merging_writer_s_entries_lengthen_the_freeze_not_its_requests() -> None:
    # A commit of one file a day, by a writer that merges manifests: 100,000 entries a commit
    daily = (1.0, 1.0, 1_000_000.0)
    plain = _inputs("rate(1 day)")
    merged = dataclasses.replace(plain, entries_per_commit=100_000.0)
    window, freeze = sync_window(daily, _full(), plain)
    merged_window, merged_freeze = sync_window(daily, _full(), merged)
    assert (freeze.manifest_entries, merged_freeze.manifest_entries) == (1, 100_000)
    assert merged_window.manifest_entries_per_commit == 100_000.0
    assert window.manifest_entries_per_commit is None
    # The same requests (one new manifest's GET, however long) ...
    assert merged_window.per_sync.requests == window.per_sync.requests
    # ... and each entry read in Plan, in the Copy's plan and rewrite, and in Validate
    entry_s = ThroughputModel().manifest_entry_s
    longer = {k: merged_freeze.freeze_by_step[k] - freeze.freeze_by_step[k] for k in freeze.freeze_by_step}
    assert longer["plan"] == pytest.approx(99_999 * entry_s, rel=1e-3)
    assert longer["copy"] == pytest.approx(1.5 * 99_999 * entry_s, rel=1e-3)
    assert longer["validate"] == pytest.approx(99_999 * entry_s, rel=1e-3)
    assert longer["register"] == longer["proof"] == longer["rest"] == 0
    # A commit is never taken to write fewer entries than the files it adds
    assert sync_entries(2, 10, 1.0) == 10 and sync_entries(0, 0, 5.0) == 0
