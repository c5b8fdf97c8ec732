"""A source table dropped after icelake migrated it ends `source_dropped` and its target is left as
it is, whether the request selects a database or names the table; the rest of the run goes on.
Before, a database selection skipped it silently and an explicit list failed the whole run."""

from __future__ import annotations

import pytest

from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution
from tests.e2e.conftest import run_workflow
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, add_source_table, bucket_state, catalog_state

pytestmark = pytest.mark.slow


def test_a_dropped_source_table_is_reported_and_its_target_left_alone(
    world: tuple[Lake, LocalDeployment],
) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1], [2]])
    add_source_table(lake, "customers", [[1]])
    first = run_workflow(deployment, lake.request("full-1"))
    assert {t["status"] for t in first["tables"]} == {"migrated"}
    lake.source.client("glue").delete_table(DatabaseName="sales", Name="customers")
    add_source_table(lake, "returns", [[5]])
    target_before, target_catalog = bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)
    source_before, source_catalog = bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)

    by_database = run_workflow(deployment, lake.request("sync-db", mode="incremental"))
    explicit = run_workflow(
        deployment,
        lake.request(
            "sync-list", mode="incremental", selection={"tables": ["sales.orders", "sales.customers"]}
        ),
    )

    for report in (by_database, explicit):
        outcomes = {t["table"]: t for t in report["tables"]}
        assert outcomes["sales.customers"]["status"] == "source_dropped"
        assert "no longer exists" in outcomes["sales.customers"]["error"]["message"]
        assert outcomes["sales.orders"]["status"] == "in_sync"
        assert report["status"] == "partial"
    assert {t["table"]: t["status"] for t in by_database["tables"]}["sales.returns"] == "migrated"
    # the dropped table's target is untouched; only the new table was written
    after = bucket_state(lake.target, TARGET_BUCKET)
    assert {k: v for k, v in after.items() if "/returns/" not in k} == target_before
    assert catalog_state(lake.target)["sales.customers"] == target_catalog["sales.customers"]
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    assert catalog_state(lake.source) == source_catalog


def test_a_table_that_never_existed_is_still_refused_at_once(world: tuple[Lake, LocalDeployment]) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1]])
    request = lake.request("typo-1", selection={"tables": ["sales.orderz"]})
    result = run_execution(deployment.state_machine_arn, request, timeout=120, name="typo-1")
    assert result.status == "FAILED"
    _error, cause = result.failure()
    assert "sales.orderz does not exist" in cause
    assert not bucket_state(lake.target, TARGET_BUCKET)
