"""A copy that does not match its source's checksum fails its table, which is rolled back, on
the real state machine; the other table's copies are all verified. (The damage: the checksum S3
recorded for one source object no longer matches its bytes; tests/moto_keys.py.)"""

from __future__ import annotations

import pytest

from icelake.aws.fileio import S3FileIO
from icelake.local.deploy import LocalDeployment
from tests.e2e.conftest import run_workflow
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, add_source_table, bucket_state, catalog_state
from tests.moto_keys import damage_recorded_checksum

pytestmark = pytest.mark.slow


def test_a_copy_that_fails_its_checksum_is_rolled_back(world: tuple[Lake, LocalDeployment]) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1, 2], [3]])
    add_source_table(lake, "customers", [[10], [11]])
    src = S3FileIO(lake.source.client("s3"))
    damaged = next(uri for uri, _ in src.list(f"s3://{SOURCE_BUCKET}/lake/sales/orders/data"))
    damage_recorded_checksum(damaged)
    source_before, source_catalog = bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)

    report = run_workflow(deployment, lake.request("verify-1"))

    outcomes = {t["table"]: t for t in report["tables"]}
    orders, customers = outcomes["sales.orders"], outcomes["sales.customers"]
    assert orders["status"] == "rolled_back", orders
    assert "is not the source's bytes" in orders["error"]["message"] and damaged in orders["error"]["message"]
    assert customers["status"] == "migrated"
    assert customers["files_verified"] == customers["files_copied"] == 2
    assert report["status"] == "partial"
    dst = S3FileIO(lake.target.client("s3"))
    assert [uri for uri, _ in dst.list(f"s3://{TARGET_BUCKET}/warehouse/sales/orders")] == []
    assert "sales.orders" not in catalog_state(lake.target)
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    assert catalog_state(lake.source) == source_catalog
