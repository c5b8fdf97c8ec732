"""What an assessment says a table keeps in a table bucket after cutover, and what its first
compaction costs (icelake/assess/gather/table_bucket.table_keeps): from the request where it says,
else from the source's retention; compaction priced at the price table's S3 Tables rates. And a
table the target role may not read is a blocker, not an assessment that stops."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from icelake.assess.estimate.prices import load_prices
from icelake.assess.gather.table_bucket import BucketRemovals, athena_name, read_target, table_keeps
from icelake.request.models import WorkItem
from tests.work_items import orders_item

MIB = 1024**2


def _item(maintenance: dict[str, Any] | None = None) -> WorkItem:
    options = {"s3tables_maintenance": maintenance}
    return orders_item("migrate_request_s3tables.json", "s3tables://lake/migrated_sales/orders", options)


def _metadata(files: int, size: int, properties: dict[str, str] | None = None) -> dict[str, Any]:
    summary = {"total-data-files": str(files), "total-files-size": str(size)}
    return {
        "properties": properties or {},
        "current-snapshot-id": 2,
        "snapshots": [{"snapshot-id": 1, "summary": {}}, {"snapshot-id": 2, "summary": summary}],
    }


def test_the_request_says_what_it_keeps_and_the_sort_strategy_is_priced_at_its_rate() -> None:
    asked = {
        "compaction": {"enabled": True, "target_file_size_mb": 256, "strategy": "sort"},
        "snapshot_management": {"enabled": True, "max_snapshot_age_hours": 48},
    }
    week = {"history.expire.max-snapshot-age-ms": str(7 * 24 * 3_600_000)}
    table, refused = table_keeps(
        _item(asked), _metadata(1000, 1000 * 8 * MIB, week), load_prices("us-east-1"), False
    )
    assert refused is None
    assert athena_name(_item()) == table.athena_name == "s3tablescatalog/lake.migrated_sales.orders"
    # the request's 48 hours win over the source's week; the count it leaves out is Iceberg's default
    assert table.maintenance_at_cutover["icebergSnapshotManagement"]["settings"] == {
        "icebergSnapshotManagement": {"minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 48}
    }
    assert table.keeps.startswith("snapshots younger than 48 hours, and at least 1")
    assert table.compaction == "on at cutover: 256 MB files, strategy sort"
    # 1,000 files of 8 MiB under the 256 MB target: $0.002 per 1,000 objects, $0.01 per GB sorted
    assert table.first_compaction_usd == pytest.approx(0.002 + 8000 / 1024 * 0.01)
    assert "at most 1,000 data files" in table.first_compaction


def test_no_sort_rate_no_price_and_files_at_the_target_size_cost_nothing() -> None:
    sort = {"compaction": {"strategy": "z-order"}}
    table, _ = table_keeps(_item(sort), _metadata(10, 10 * MIB), load_prices("us-west-2"), True)
    assert (
        table.first_compaction_usd is None
        and "no S3 Tables price for sort or z-order" in table.first_compaction
    )
    big, _ = table_keeps(_item(), _metadata(4, 4 * 600 * MIB), load_prices("us-east-1"), True)
    assert big.first_compaction_usd == 0.0 and "the target size or more" in big.first_compaction
    off, _ = table_keeps(
        _item({"compaction": {"enabled": False}}), _metadata(4, 4), load_prices("us-east-1"), True
    )
    assert (off.first_compaction_usd, off.compaction) == (None, "off (options.s3tables_maintenance)")


def test_a_source_retention_that_cannot_be_carried_blocks() -> None:
    bad = {"history.expire.min-snapshots-to-keep": "many"}
    table, refused = table_keeps(_item(), _metadata(1, 1, bad), load_prices("us-east-1"), False)
    assert refused is not None and refused.kind == "source_retention"
    assert "options.s3tables_maintenance.snapshot_management" in refused.message
    assert table.maintenance_at_cutover == {} and table.keeps == refused.message


def test_a_target_table_the_role_may_not_read_blocks() -> None:
    # Given S3 Tables answering the bucket's maintenance, and AccessDenied to GetTable (a role
    # deployed without the table bucket in table_bucket_arns), as botocore's Stubber answers
    client = boto3.client(
        "s3tables", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    arn = str(_item().request.target.table_bucket_arn)
    with Stubber(client) as stub:
        stub.add_response(
            "get_table_bucket_maintenance_configuration",
            {"tableBucketARN": arn, "configuration": {}},
            {"tableBucketARN": arn},
        )
        stub.add_client_error("get_table", "AccessDeniedException", http_status_code=403)
        target = read_target(_item(), None, client, BucketRemovals())  # type: ignore[arg-type]
    assert [b.kind for b in target.blockers] == ["table_unread"]
    assert "AccessDeniedException" in target.blockers[0].message and not target.exists
    # the bucket's removal read as AWS's defaults when its answer leaves them out
    assert (target.bucket.removal_enabled, target.bucket.unreferenced_days) == (True, 3)
