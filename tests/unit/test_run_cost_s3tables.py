"""A run into S3 Tables is costed at S3 Tables' rates (workflow/accounting.accounted): the storage
at its own rate plus the monitoring fee on every object the copy wrote, where a Glue target's copy
of the same bytes is costed at S3's."""

from __future__ import annotations

import json
from pathlib import Path

from icelake.assess.estimate.cost import SYNC_DAYS, prices_for_region
from icelake.migrate.models import MigrationResult
from icelake.request.models import MigrationRequest
from icelake.workflow.accounting import accounted
from icelake.workflow.models import TableOutcome

EVENTS = Path(__file__).resolve().parents[1] / "events"
GIB = 1024**3


def _storage_cost(event: str) -> float:
    body = json.loads((EVENTS / event).read_text())
    body["target"]["region"] = body["source"]["region"] = "us-east-1"
    request = MigrationRequest.model_validate({**body, "run_id": "r"})
    copied = MigrationResult(
        source_metadata_location="s3://a/m/v1.metadata.json",
        target_metadata_location="s3://b/m/v1.metadata.json",
        table_uuid=None,
        format_version=2,
        dry_run=False,
        prefix_mappings=[],
        snapshots=1,
        metadata_files=1,
        files_planned=1_000,
        bytes_planned=10 * GIB,
        files_copied=990,
        bytes_copied=10 * GIB,
        files_rewritten=10,
        files_skipped=0,
        elapsed_seconds=60.0,
    )
    outcome = TableOutcome(run_id="r", table="sales.orders", status="migrated")
    costed = accounted(outcome, request, None, copied, "validate", {}, 5.0)
    return costed.cost_usd["storage_month"]


def test_a_table_bucket_s_copy_is_stored_at_s3_tables_rates_with_the_monitoring_fee() -> None:
    prices = prices_for_region("us-east-1")
    assert prices is not None and prices.s3tables is not None
    expected = prices.storage_usd(10 * GIB, SYNC_DAYS, objects=1_000, s3tables=True)
    assert _storage_cost("migrate_request_s3tables.json") == round(expected, 6)
    assert _storage_cost("migrate_request.json") == round(prices.storage_usd(10 * GIB, SYNC_DAYS), 6)
    assert expected > prices.storage_usd(10 * GIB, SYNC_DAYS)  # S3 Tables' rate and fee are above S3's
