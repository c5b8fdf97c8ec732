"""S3 Tables' maintenance around a migration (icelake/aws/s3tables_maintenance.py), against the
embedded AWS's S3 Tables: paused for the sync with what was found kept, set at cutover from the
request or the source's retention, never the service's 120-hour default unnoticed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from icelake.aws import s3tables_maintenance as maintenance
from icelake.local.moto_server import embedded_aws
from icelake.local.s3tables.api import TABLE_DEFAULTS
from icelake.request.models import MigrationRequest

WEEK_MS = 7 * 24 * 3_600_000


@pytest.fixture
def tables() -> Iterator[tuple[Any, dict[str, str]]]:
    """The embedded AWS's S3 Tables client and a new table (tableBucketARN, namespace, name)."""
    with embedded_aws():
        client = boto3.client("s3tables", region_name="us-east-1")
        arn = client.create_table_bucket(name="lake")["arn"]
        client.create_namespace(tableBucketARN=arn, namespace=["sales"])
        client.create_table(tableBucketARN=arn, namespace="sales", name="orders", format="ICEBERG")
        yield client, {"tableBucketARN": arn, "namespace": "sales", "name": "orders"}


def _puts(client: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "before-call.s3tables.PutTableMaintenanceConfiguration", lambda params, **_: sent.append(params)
    )
    return sent


def test_the_sync_pauses_maintenance_and_keeps_what_it_found(tables: tuple[Any, dict[str, str]]) -> None:
    client, table = tables
    puts = _puts(client)
    found = maintenance.pause_for_sync(client, table)
    assert found == TABLE_DEFAULTS  # a new table: the service's defaults, on
    now = maintenance.table_configuration(client, table)
    assert {kind: value["status"] for kind, value in now.items()} == {
        "icebergCompaction": "disabled",
        "icebergSnapshotManagement": "disabled",
    }
    assert len(puts) == 2
    # The next sync finds icelake's own pause and writes nothing
    assert maintenance.pause_for_sync(client, table) == now
    assert len(puts) == 2


def test_cutover_takes_the_source_retention(tables: tuple[Any, dict[str, str]]) -> None:
    client, table = tables
    maintenance.pause_for_sync(client, table)
    properties = {maintenance.MAX_AGE: str(WEEK_MS + 1), maintenance.MIN_SNAPSHOTS: "5"}
    cutover = maintenance.cutover_settings(None, properties, "sales.orders")
    maintenance.apply_cutover(client, table, cutover)
    now = maintenance.table_configuration(client, table)
    assert now["icebergCompaction"] == {
        "status": "enabled",
        "settings": {"icebergCompaction": {"targetFileSizeMB": 512, "strategy": "auto"}},
    }
    # one millisecond over a week: rounded up to the next hour, never below the source's age
    assert now["icebergSnapshotManagement"] == {
        "status": "enabled",
        "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 5, "maxSnapshotAgeHours": 169}},
    }
    assert cutover.keeps().startswith(
        "snapshots younger than 169 hours, and at least 5 (the source's retention"
    )


def test_a_source_without_retention_keeps_every_snapshot(tables: tuple[Any, dict[str, str]]) -> None:
    client, table = tables
    cutover = maintenance.cutover_settings(None, {"write.format.default": "parquet"}, "sales.orders")
    maintenance.apply_cutover(client, table, cutover)
    now = maintenance.table_configuration(client, table)
    assert now["icebergSnapshotManagement"]["status"] == "disabled"
    assert now["icebergCompaction"]["status"] == "enabled"
    assert "every snapshot" in cutover.keeps() and "neither" in cutover.keeps()


@pytest.mark.parametrize(
    ("requested", "properties", "expected"),
    [
        # the request's setting, partly said: the rest from the source's retention
        (
            {"snapshot_management": {"min_snapshots_to_keep": 20}},
            {maintenance.MAX_AGE: str(30 * 24 * 3_600_000)},
            (True, 20, 720),
        ),
        # a plain mapping, partly said, a source without retention: the rest is Iceberg's default
        ({"snapshot_management": {"max_snapshot_age_hours": 2000}}, {}, (True, 1, 2000)),
        # one property on the source: the other is Iceberg's default, as Iceberg's expiration takes it
        (None, {maintenance.MIN_SNAPSHOTS: "3"}, (True, 3, 120)),
        ({"snapshot_management": {"enabled": False}}, {maintenance.MIN_SNAPSHOTS: "3"}, (False, None, None)),
    ],
)
def test_cutover_settings_from_the_request_then_the_source(
    requested: Any, properties: dict[str, str], expected: tuple[bool, int | None, int | None]
) -> None:
    snapshots = maintenance.cutover_settings(requested, properties, "sales.orders").snapshots
    assert (snapshots.enabled, snapshots.min_snapshots_to_keep, snapshots.max_snapshot_age_hours) == expected
    assert snapshots.why  # every value says where it came from


def test_cutover_reads_the_requests_own_option() -> None:
    """options.s3tables_maintenance as a parsed request holds it (tests/events' S3 Tables example)."""
    body = json.loads((Path(__file__).parents[1] / "events" / "migrate_request_s3tables.json").read_text())
    body["run_id"] = "maintenance-1"  # the one field the CLI adds
    body["options"]["s3tables_maintenance"] = {
        "compaction": {"target_file_size_mb": 256},
        "snapshot_management": {"max_snapshot_age_hours": 720},
    }
    option = MigrationRequest.model_validate(body).options.s3tables_maintenance
    cutover = maintenance.cutover_settings(option, {maintenance.MIN_SNAPSHOTS: "4"}, "sales.orders")
    assert (cutover.compaction_enabled, cutover.target_file_size_mb, cutover.strategy) == (True, 256, "auto")
    snapshots = cutover.snapshots
    assert (snapshots.enabled, snapshots.min_snapshots_to_keep, snapshots.max_snapshot_age_hours) == (
        True,
        4,
        720,
    )
    assert "max_snapshot_age_hours 720 from options.s3tables_maintenance" in snapshots.why
    assert "min_snapshots_to_keep 4 from the source's retention" in snapshots.why


def test_compaction_as_the_request_says_and_bad_retention_named() -> None:
    cutover = maintenance.cutover_settings(
        {"compaction": {"enabled": False, "target_file_size_mb": 128, "strategy": "binpack"}}, {}, "t"
    )
    assert cutover.values()["icebergCompaction"] == {
        "status": "disabled",
        "settings": {"icebergCompaction": {"targetFileSizeMB": 128, "strategy": "binpack"}},
    }
    for bad in ("-1", "five days", "0"):
        with pytest.raises(
            ValueError, match=r"sales\.orders: the source's history\.expire\.max-snapshot-age-ms"
        ):
            maintenance.cutover_settings(None, {maintenance.MAX_AGE: bad}, "sales.orders")


def test_the_buckets_unreferenced_file_removal(tables: tuple[Any, dict[str, str]]) -> None:
    client, table = tables
    bucket = table["tableBucketARN"]
    removal = maintenance.unreferenced_removal(client, bucket)
    assert (removal.enabled, removal.unreferenced_days, removal.noncurrent_days) == (True, 3, 10)
    assert removal.deleted_within_days == 13
    client.put_table_bucket_maintenance_configuration(
        tableBucketARN=bucket, type="icebergUnreferencedFileRemoval", value={"status": "disabled"}
    )
    assert maintenance.unreferenced_removal(client, bucket).deleted_within_days is None
