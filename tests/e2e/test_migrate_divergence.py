"""A migrated table that someone else commits to is no longer icelake's to sync: the next run
ends `diverged`, writes nothing, and the foreign commit stays. Before, the incremental sync
registered the source version again and the appended row vanished, reported as migrated."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable

from icelake.local.deploy import LocalDeployment
from tests.e2e.conftest import run_workflow
from tests.lake import (
    SOURCE_BUCKET,
    TARGET_BUCKET,
    Lake,
    add_source_table,
    bucket_state,
    catalog_state,
    s3_props,
)

pytestmark = pytest.mark.slow


def _foreign_append(lake: Lake, tmp_path: Path, metadata: str, ids: list[int]) -> str:
    """Another engine commits to the target table: new metadata in its location, Glue pointer moved."""
    cat = SqlCatalog("foreign", uri=f"sqlite:///{tmp_path}/foreign.db", **s3_props())
    cat.create_namespace("sales")
    table = cat.register_table("sales.orders", metadata)
    table.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}))
    new_metadata = cat.load_table("sales.orders").metadata_location
    glue = lake.target.client("glue")
    current = glue.get_table(DatabaseName="sales", Name="orders")["Table"]
    params = {
        **current["Parameters"],
        "metadata_location": new_metadata,
        "previous_metadata_location": metadata,
    }
    glue.update_table(DatabaseName="sales", TableInput={"Name": "orders", "Parameters": params})
    return new_metadata


def test_a_commit_on_the_target_makes_the_next_sync_diverged(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1], [2]])
    first = run_workflow(deployment, lake.request("full-1"))
    assert first["tables"][0]["status"] == "migrated"
    registered = catalog_state(lake.target)["sales.orders"]["metadata_location"]

    foreign = _foreign_append(lake, tmp_path, registered, [99])
    target_before = bucket_state(lake.target, TARGET_BUCKET)
    source_before, source_catalog = bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)

    report = run_workflow(deployment, lake.request("sync-1", mode="incremental"))

    (outcome,) = report["tables"]
    assert outcome["status"] == "diverged", outcome
    assert foreign in outcome["error"]["message"] and registered in outcome["error"]["message"]
    assert "committed to by someone else at 20" in outcome["error"]["message"]  # the foreign commit's time
    assert report["status"] == "failed"
    # nothing written, nothing rolled over: the foreign row is still there
    assert bucket_state(lake.target, TARGET_BUCKET) == target_before
    assert catalog_state(lake.target)["sales.orders"]["metadata_location"] == foreign
    ids = StaticTable.from_metadata(foreign, properties=s3_props()).scan().to_arrow().column("id").to_pylist()
    assert sorted(ids) == [1, 2, 99]
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    assert catalog_state(lake.source) == source_catalog
