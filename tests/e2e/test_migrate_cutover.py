"""Cutover and prune through the real state machine on the embedded AWS.

Cutover: a last sync that catches up with the source, then the target is promoted (ledger, Glue
parameter, equal snapshot ids in the report) and every later run reports `promoted` and writes
nothing. Prune: after the source expires snapshots, an incremental run deletes what icelake wrote
for them on the target, and nothing else."""

from __future__ import annotations

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable

from icelake.aws import catalog
from icelake.aws.fileio import S3FileIO
from icelake.local.deploy import LocalDeployment
from icelake.migrate.check.reachable import reachable_files
from tests.e2e.conftest import run_workflow
from tests.lake import (
    SOURCE_BUCKET,
    TARGET_BUCKET,
    Lake,
    add_source_table,
    bucket_state,
    catalog_state,
    commit,
    s3_props,
)

pytestmark = pytest.mark.slow


def _ids(metadata: str) -> list[int]:
    table = StaticTable.from_metadata(metadata, properties=s3_props())
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_cutover_promotes_the_target_and_later_runs_write_nothing(
    world: tuple[Lake, LocalDeployment],
) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1], [2]])
    assert run_workflow(deployment, lake.request("full-1"))["tables"][0]["status"] == "migrated"
    source_metadata = commit(lake, "orders", [3])  # the source moved on after the last sync
    source_before, source_catalog = bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)

    report = run_workflow(deployment, lake.request("cutover-1", mode="cutover"))

    (outcome,) = report["tables"]
    assert outcome["status"] == "promoted", outcome
    assert report["status"] == "succeeded"
    source_snapshot = StaticTable.from_metadata(source_metadata, properties=s3_props()).metadata
    assert outcome["source_snapshot_id"] == source_snapshot.current_snapshot_id
    assert outcome["target_snapshot_id"] == outcome["source_snapshot_id"]
    target_table = catalog_state(lake.target)["sales.orders"]
    assert target_table[catalog.PROMOTED_PARAMETER].startswith("20")
    assert _ids(target_table["metadata_location"]) == [1, 2, 3]
    # the source was read, never written (mark_source is off by default)
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    assert catalog_state(lake.source) == source_catalog

    # From now on every run reports promoted and writes nothing; once the source moves again (a
    # writer that was missed), stranded, naming the commit (tests/e2e/test_migrate_stranded.py).
    target_before = bucket_state(lake.target, TARGET_BUCKET)
    later = run_workflow(deployment, lake.request("sync-after", mode="incremental"))
    assert later["tables"][0]["status"] == "promoted" and later["status"] == "succeeded", later
    assert "promoted at" in later["tables"][0]["error"]["message"]
    late = StaticTable.from_metadata(commit(lake, "orders", [4]), properties=s3_props()).metadata
    for run_id, mode in (("sync-moved", "incremental"), ("cutover-again", "cutover")):
        later = run_workflow(deployment, lake.request(run_id, mode=mode))
        (after,) = later["tables"]
        assert after["status"] == "stranded" and later["status"] != "succeeded", after
        assert [c["snapshot_id"] for c in after["stranded"]] == [late.current_snapshot_id]
    assert bucket_state(lake.target, TARGET_BUCKET) == target_before
    assert catalog_state(lake.target)["sales.orders"] == target_table


def _expire_all_but_current(lake: Lake, name: str) -> str:
    root = lake.local_root / "sales" / name
    cat = SqlCatalog(name, uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    table = cat.load_table(f"sales.{name}")
    current = table.current_snapshot()
    assert current is not None
    old = [s.snapshot_id for s in table.snapshots() if s.snapshot_id != current.snapshot_id]
    table.maintenance.expire_snapshots().by_ids(old).commit()
    return lake.publish("sales", name, cat.load_table(f"sales.{name}").metadata_location)


def _delete_ids(lake: Lake, name: str, predicate: str) -> str:
    root = lake.local_root / "sales" / name
    cat = SqlCatalog(name, uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.load_table(f"sales.{name}").delete(predicate)
    return lake.publish("sales", name, cat.load_table(f"sales.{name}").metadata_location)


def test_an_incremental_run_prunes_what_the_source_expired_and_nothing_else(
    world: tuple[Lake, LocalDeployment],
) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1, 2], [3]])
    _delete_ids(lake, "orders", "id == 1")  # copy-on-write: the first data file is replaced
    assert run_workflow(deployment, lake.request("full-1"))["tables"][0]["status"] == "migrated"
    location = f"s3://{TARGET_BUCKET}/warehouse/sales/orders"
    s3 = S3FileIO(lake.target.client("s3"))
    foreign = f"{location}/data/someone-elses.parquet"
    s3.write(foreign, b"not icelake's")  # another writer's object under the table's location
    before = {uri for uri, _ in s3.list(location)}

    _expire_all_but_current(lake, "orders")
    source_before, source_catalog = bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)
    report = run_workflow(deployment, lake.request("sync-1", mode="incremental"))
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    assert catalog_state(lake.source) == source_catalog

    (outcome,) = report["tables"]
    assert outcome["status"] == "migrated", outcome["error"]
    after = {uri for uri, _ in s3.list(location)}
    reachable = reachable_files(s3, outcome["target_metadata_location"])
    assert foreign in after  # not icelake's: never pruned
    gone = before - after
    assert outcome["files_pruned"] == len(gone) > 0
    assert not gone & reachable
    assert after - {foreign} <= reachable  # everything icelake left is still needed
    assert any("/snap-" in uri for uri in gone)  # the expired snapshots' manifest lists
    assert _ids(outcome["target_metadata_location"]) == [2, 3]

    # prune off: the next expiry leaves the target's objects alone
    commit(lake, "orders", [4])
    _delete_ids(lake, "orders", "id == 4")
    second = run_workflow(deployment, lake.request("sync-2", mode="incremental"))["tables"][0]
    assert second["status"] == "migrated" and second["files_pruned"] == 0  # nothing expired meanwhile
    _expire_all_but_current(lake, "orders")
    kept = {uri for uri, _ in s3.list(location)}
    off = lake.request("sync-3", mode="incremental")
    off["options"] = {**off["options"], "prune": False}
    (quiet,) = run_workflow(deployment, off)["tables"]
    assert quiet["status"] == "migrated" and quiet["files_pruned"] == 0
    assert kept <= {uri for uri, _ in s3.list(location)}
    # ... although it had work: objects the current metadata no longer reaches
    assert kept - reachable_files(s3, quiet["target_metadata_location"]) - {foreign}
