"""S3 Tables as a target (issue 61), through the whole workflow on the embedded AWS: a table bucket
in the target account gets the source tables with their whole history, created by icelake (its
namespace too), each table's files under the warehouse location the service gave it, its pointer
moved only from the version token read at Plan; a sync brings what the source committed since;
a failed Validate deletes a table the run created and puts an existing one's pointer back, deleting
no object (a table bucket's storage takes no DeleteObject) and naming the files left; a commit by
someone else between Plan and Register is refused with nothing lost; cutover sets the table's
maintenance from the source's retention; a late append after it is stranded, then carried."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable, Table

from icelake.aws import clients
from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.local.deploy import LocalDeployment
from icelake.local.lake import SAMPLE_TABLE_BUCKET, SOURCE_ACCOUNT, TARGET_ACCOUNT, publish_sample_tables
from icelake.migrate import migrate_table
from icelake.migrate.copy.table_storage import TABLE_STORAGE_OPERATIONS, TABLE_STORAGE_SUFFIX
from icelake.workflow import table_bucket
from icelake.workflow.steps import validating
from tests.e2e.conftest import run_workflow
from tests.lake import SOURCE_BUCKET, Lake, bucket_state, s3_props
from tests.verify import assert_same_table, read_metadata_json

pytestmark = pytest.mark.slow
BUCKET_ARN = f"arn:aws:s3tables:us-east-1:{TARGET_ACCOUNT}:bucket/{SAMPLE_TABLE_BUCKET}"


def _sample_commit(lake: Lake, name: str, change: Callable[[Table], None]) -> str:
    """One more commit on a sample table (`publish_sample_tables`), published to the source."""
    root = lake.local_root / "samples"
    local = SqlCatalog("samples", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    change(local.load_table(f"sales.{name}"))
    return lake.publish("sales", name, local.load_table(f"sales.{name}").metadata_location)


def _customers(ids: list[int]) -> Callable[[Table], None]:
    def append(table: Table) -> None:
        rows = {"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids], "tier": ["gold"] * len(ids)}
        table.append(pa.table(rows, schema=table.schema().as_arrow()))

    return append


def _orders(ids: list[int]) -> Callable[[Table], None]:
    def append(table: Table) -> None:
        rows = {
            "id": pa.array(ids, pa.int64()),
            "customer": [f"c{i}" for i in ids],
            "amount": [1.5] * len(ids),
        }
        table.append(pa.table(rows, schema=table.schema().as_arrow()))

    return append


def _request(lake: Lake, run_id: str, bucket_arn: str, **overrides: Any) -> dict[str, Any]:
    request = lake.request(run_id, **overrides)
    target = request["target"]
    for field in ("bucket", "prefix", "kms_key_id"):
        target.pop(field)
    target.update(kind="s3tables", table_bucket_arn=bucket_arn, database_prefix="migrated_")
    return request


def _pointer(lake: Lake, bucket_arn: str, name: str) -> dict[str, Any]:
    answer = lake.target.client("s3tables").get_table_metadata_location(
        tableBucketARN=bucket_arn, namespace="migrated_sales", name=name
    )
    return {k: v for k, v in answer.items() if k != "ResponseMetadata"}


def _fail_validation_of(monkeypatch: pytest.MonkeyPatch, table: str) -> None:
    """Validate finds a problem with `table` (after its copy and its commit), as a real mismatch would."""
    real = validating._catalog_problems

    def failing(planned: Any, sessions: Any) -> list[str]:
        if planned.item.source_table == table:
            return [f"injected failure of {table}"]
        return real(planned, sessions)

    monkeypatch.setattr(validating, "_catalog_problems", failing)


def _commit_by_someone_else(lake: Lake, bucket_arn: str, name: str) -> str:
    """Another writer commits to the target: a new metadata file under the table's storage, the
    pointer moved with the version token it read."""
    tables = lake.target.client("s3tables")
    now = _pointer(lake, bucket_arn, name)
    io = S3FileIO(lake.target.client("s3"))
    theirs = f"{now['warehouseLocation']}/metadata/99999-someone-else.metadata.json"
    io.write(theirs, io.read(now["metadataLocation"]))
    tables.update_table_metadata_location(
        tableBucketARN=bucket_arn,
        namespace="migrated_sales",
        name=name,
        versionToken=now["versionToken"],
        metadataLocation=theirs,
    )
    return theirs


def test_the_sample_lake_moves_into_a_table_bucket_with_its_whole_history(
    world: tuple[Lake, LocalDeployment], monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, deployment = world
    sources = publish_sample_tables(lake)  # sales.orders, sales.customers; the table bucket "lake"
    used: set[str] = set()  # every S3 operation sent to a table's storage, by anyone, all along

    def on_table_storage(_core: Any, model: Any, params: dict[str, Any]) -> None:
        if str(params.get("Bucket", "")).endswith(TABLE_STORAGE_SUFFIX):
            used.add(model.name)

    clients.add_call_hook(on_table_storage)
    try:
        registered = _full_run(lake, deployment, sources, monkeypatch)
        monkeypatch.undo()
        _failed_sync(lake, deployment, sources, registered, monkeypatch)
        monkeypatch.undo()
        _sync(lake, deployment, sources)
        _raced(lake, deployment, monkeypatch)
        monkeypatch.undo()
        _cutover(lake, deployment)
        _stranded_then_carried(lake, deployment)
        _source_dropped(lake, deployment)
        _verified(lake, deployment)
    finally:
        clients.remove_call_hook(on_table_storage)
    # and no run sent a table's storage an operation S3 Tables does not take (the embedded AWS
    # refuses them too): no CopyObject, UploadPartCopy, DeleteObject or listing
    assert used <= TABLE_STORAGE_OPERATIONS and "PutObject" in used, used


def _full_run(
    lake: Lake, deployment: LocalDeployment, sources: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> str:
    """The first run: orders migrated into a table it creates, customers' created table deleted
    by a failed Validate; returns orders' registered metadata."""
    tables = lake.target.client("s3tables")
    source_before = bucket_state(lake.source, SOURCE_BUCKET)
    # When the workflow migrates the database into the table bucket, and Validate fails for customers
    _fail_validation_of(monkeypatch, "customers")
    report = run_workflow(deployment, _request(lake, "s3t-full", BUCKET_ARN))
    outcomes = {t["table"]: t for t in report["tables"]}

    # Then orders is migrated: its namespace and table were created, its pointer is the metadata
    # icelake wrote under the table's warehouse location, and every snapshot and ref reads like
    # the source's (pyiceberg here; Spark in the test below)
    migrated = outcomes["sales.orders"]
    assert migrated["status"] == "migrated", migrated
    assert migrated["target"] == "migrated_sales.orders"
    pointer = _pointer(lake, BUCKET_ARN, "orders")
    assert pointer["metadataLocation"] == migrated["target_metadata_location"]
    warehouse = pointer["warehouseLocation"].rstrip("/")
    assert migrated["target_metadata_location"].startswith(f"{warehouse}/metadata/")
    snapshots = assert_same_table(
        sources["orders"],
        migrated["target_metadata_location"],
        source_props=s3_props(),
        target_props=s3_props(),
    )
    assert snapshots == 4  # three appends and a delete
    meta = read_metadata_json(S3FileIO(lake.target.client("s3")), migrated["target_metadata_location"])
    assert meta["location"].rstrip("/") == warehouse
    # and the table carries icelake's owner mark
    arn = tables.get_table(tableBucketARN=BUCKET_ARN, namespace="migrated_sales", name="orders")["tableARN"]
    assert table_bucket.s3tables.tags_of(tables, arn)["icelake.source"] == f"{SOURCE_ACCOUNT}:sales.orders"
    # and customers, which this run created, was rolled back by deleting the table whole
    failed = outcomes["sales.customers"]
    assert failed["status"] == "rolled_back" and "injected failure of customers" in failed["error"]["message"]
    assert "the target table migrated_sales.customers: deleted" in failed["warnings"]
    listed = tables.list_tables(tableBucketARN=BUCKET_ARN, namespace="migrated_sales")["tables"]
    assert [t["name"] for t in listed] == ["orders"]
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before

    return str(migrated["target_metadata_location"])


def _failed_sync(
    lake: Lake,
    deployment: LocalDeployment,
    sources: dict[str, str],
    registered: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sync whose Validate fails puts the earlier pointer back and names the files it leaves;
    customers, absent since the first run rolled it back, is created again and migrated whole."""
    # When the source commits and a sync's Validate fails for orders
    _sample_commit(lake, "orders", _orders([1000, 1001]))
    _fail_validation_of(monkeypatch, "orders")
    report = run_workflow(deployment, _request(lake, "s3t-sync-fails", BUCKET_ARN, mode="incremental"))
    outcomes = {t["table"]: t for t in report["tables"]}
    failed = outcomes["sales.orders"]

    # Then its earlier pointer is back, and the files the run wrote are named with when the
    # bucket's unreferenced-file removal takes them
    assert failed["status"] == "rolled_back", failed
    assert _pointer(lake, BUCKET_ARN, "orders")["metadataLocation"] == registered
    assert "the target table migrated_sales.orders: restored" in failed["warnings"]
    (left,) = [w for w in failed["warnings"] if "left in the table's storage" in w]
    assert "journal.json.gz" in left and "marks them 3 days after" in left and "10 days later" in left
    assert (
        assert_same_table(
            sources["orders"],
            registered,
            source_props=s3_props(),
            target_props=s3_props(),
        )
        == 4
    )
    customers = outcomes["sales.customers"]
    assert (customers["status"], customers["sync"]) == ("migrated", "full"), customers
    assert assert_same_table(
        sources["customers"],
        customers["target_metadata_location"],
        source_props=s3_props(),
        target_props=s3_props(),
    )


def _sync(lake: Lake, deployment: LocalDeployment, sources: dict[str, str]) -> str:
    """The sync again: orders incremental, customers in sync; returns orders' source."""
    # When the sync runs again
    newer = _sample_commit(lake, "orders", _orders([1002]))
    report = run_workflow(deployment, _request(lake, "s3t-sync", BUCKET_ARN, mode="incremental"))
    synced = {t["table"]: t for t in report["tables"]}

    # Then orders is an incremental sync from the ledger's last one and reads like the source;
    # customers has not moved
    orders = synced["sales.orders"]
    assert orders["status"] == "migrated" and orders["sync"] == "incremental", orders
    assert _pointer(lake, BUCKET_ARN, "orders")["metadataLocation"] == orders["target_metadata_location"]
    assert (
        assert_same_table(
            newer, orders["target_metadata_location"], source_props=s3_props(), target_props=s3_props()
        )
        == 6
    )
    assert synced["sales.customers"]["status"] == "in_sync", synced["sales.customers"]
    # and while icelake syncs them, the tables' compaction and snapshot management are off (both
    # were on, the service's defaults, as the ledger recorded)
    for name in ("orders", "customers"):
        assert {k: v["status"] for k, v in _maintenance(lake, name).items()} == {
            "icebergCompaction": "disabled",
            "icebergSnapshotManagement": "disabled",
        }
    warehouse = _pointer(lake, BUCKET_ARN, "orders")["warehouseLocation"].rstrip("/")
    found = lake.deps.ledger.owner(warehouse) or {}
    assert found["owner"] == f"{SOURCE_ACCOUNT}:sales.orders" and found["created_by"] == "s3t-full"
    assert {k: v["status"] for k, v in found["maintenance_found"].items()} == {
        "icebergCompaction": "enabled",
        "icebergSnapshotManagement": "enabled",
    }
    return newer


def _maintenance(lake: Lake, name: str) -> dict[str, Any]:
    tables = lake.target.client("s3tables")
    answer = tables.get_table_maintenance_configuration(
        tableBucketARN=BUCKET_ARN, namespace="migrated_sales", name=name
    )
    return dict(answer["configuration"])


def _cutover(lake: Lake, deployment: LocalDeployment) -> None:
    """Cutover sets maintenance from the source's retention: 7 days and 3 snapshots for orders
    (never the service's 120 hours)."""
    week_ms = str(7 * 24 * 3600 * 1000)
    props = {"history.expire.max-snapshot-age-ms": week_ms, "history.expire.min-snapshots-to-keep": "3"}
    _sample_commit(
        lake, "orders", lambda table: table.transaction().set_properties(props).commit_transaction()
    )
    request = _request(
        lake, "s3t-cutover", BUCKET_ARN, mode="cutover", selection={"tables": ["sales.orders"]}
    )
    (promoted,) = run_workflow(deployment, request)["tables"]

    assert promoted["status"] == "promoted", promoted
    settings = _maintenance(lake, "orders")
    assert settings["icebergCompaction"]["status"] == "enabled"
    assert settings["icebergSnapshotManagement"] == {
        "status": "enabled",
        "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 3, "maxSnapshotAgeHours": 168}},
    }
    assert any("snapshots younger than 168 hours, and at least 3" in w for w in promoted["warnings"])


def _raced(lake: Lake, deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone else's commit between Plan and Register: icelake's is refused, nothing lost."""
    # When customers' source commits, and someone else commits to its target between Plan and Register
    before = _pointer(lake, BUCKET_ARN, "customers")["metadataLocation"]
    _sample_commit(lake, "customers", _customers([100]))
    real_register = table_bucket.register
    theirs: list[str] = []

    def someone_commits_first(*args: Any) -> None:
        if not theirs:  # once, whatever the step's retries
            theirs.append(_commit_by_someone_else(lake, BUCKET_ARN, "customers"))
        real_register(*args)

    monkeypatch.setattr(table_bucket, "register", someone_commits_first)
    request = _request(
        lake, "s3t-race", BUCKET_ARN, mode="incremental", selection={"tables": ["sales.customers"]}
    )
    (raced,) = run_workflow(deployment, request)["tables"]

    # Then icelake's commit is refused and theirs stays the table's pointer: nothing of theirs lost
    assert raced["status"] == "rolled_back", raced
    assert "someone else committed" in raced["error"]["message"]
    assert _pointer(lake, BUCKET_ARN, "customers")["metadataLocation"] == theirs[0]
    assert any("left as it is: someone else committed" in w for w in raced["warnings"])
    io = S3FileIO(lake.target.client("s3"))
    assert io.read(theirs[0]) == io.read(before)  # their commit, as they made it


def _stranded_then_carried(lake: Lake, deployment: LocalDeployment) -> None:
    """After the cutover, a late append to the source is stranded, then carried onto the table."""
    late = _sample_commit(lake, "orders", _orders([2000]))
    late_id = read_metadata_json(S3FileIO(lake.source.client("s3")), late)["current-snapshot-id"]
    only_orders = {"selection": {"tables": ["sales.orders"]}}
    (stranded,) = run_workflow(
        deployment, _request(lake, "s3t-late", BUCKET_ARN, mode="incremental", **only_orders)
    )["tables"]
    assert stranded["status"] == "stranded" and stranded["stranded"][0]["snapshot_id"] == late_id, stranded
    promoted_at = _pointer(lake, BUCKET_ARN, "orders")["metadataLocation"]

    (carried,) = run_workflow(
        deployment, _request(lake, "s3t-carry", BUCKET_ARN, mode="carry_over", **only_orders)
    )["tables"]

    assert carried["status"] == "promoted" and carried["carried"] == [late_id], carried
    pointer = _pointer(lake, BUCKET_ARN, "orders")
    assert pointer["metadataLocation"] == carried["target_metadata_location"] != promoted_at
    assert carried["target_metadata_location"].startswith(pointer["warehouseLocation"].rstrip("/") + "/")
    target = StaticTable.from_metadata(carried["target_metadata_location"], properties=s3_props())
    rows = target.scan().to_arrow()
    assert 2000 in rows.column("id").to_pylist()
    current = target.metadata.current_snapshot()
    assert current is not None and current.summary is not None
    assert current.summary["icelake.carried-from"] == str(late_id)


def _source_dropped(lake: Lake, deployment: LocalDeployment) -> None:
    """A source table dropped after its migration is named, its table in the bucket left as it is."""
    lake.source.client("glue").delete_table(DatabaseName="sales", Name="customers")
    before = _pointer(lake, BUCKET_ARN, "customers")
    report = run_workflow(deployment, _request(lake, "s3t-dropped", BUCKET_ARN, mode="incremental"))
    dropped = {t["table"]: t for t in report["tables"]}["sales.customers"]
    assert dropped["status"] == "source_dropped", dropped
    assert "no longer exists in account 111111111111" in dropped["error"]["message"]
    assert _pointer(lake, BUCKET_ARN, "customers") == before


def _verified(lake: Lake, deployment: LocalDeployment) -> None:
    """Day 2: verify reads the promoted table back through its pointer, HEADing its files (the
    table's storage takes no listing), and writes nothing."""
    request = _request(lake, "s3t-verify", BUCKET_ARN, mode="verify", selection={"tables": ["sales.orders"]})
    before = _pointer(lake, BUCKET_ARN, "orders")
    (verified,) = run_workflow(deployment, request)["tables"]
    assert verified["status"] == "verified", verified
    assert _pointer(lake, BUCKET_ARN, "orders") == before


@pytest.mark.spark
def test_the_glue_job_copies_into_a_table_bucket_and_spark_reads_every_snapshot(
    world: tuple[Lake, LocalDeployment], spark: Any, tmp_path: Path
) -> None:
    lake, deployment = world
    sources = publish_sample_tables(lake)
    # every table over the Glue threshold: the Glue job (on local Spark) plans, journals and
    # copies into the table's storage, its executors streaming each file
    options = {"glue_threshold_bytes": 0, "concurrency": 2, "validation": "rows"}
    report = run_workflow(deployment, _request(lake, "s3t-spark", BUCKET_ARN, options=options))
    outcomes = {t["table"]: t for t in report["tables"]}
    for name, source in sources.items():
        outcome = outcomes[f"sales.{name}"]
        assert outcome["status"] == "migrated", outcome
        assert outcome["engines"]["copy"] == "glue", outcome["engines"]
        # Spark (Iceberg Java) reads both after a path-only hop back to local disk (no S3A here)
        hops = {
            "source": (source, lake.source),
            "target": (outcome["target_metadata_location"], lake.target),
        }
        local = {
            side: migrate_table(
                meta, str(tmp_path / side / name), src_io=S3FileIO(session.client("s3")), dst_io=LocalFileIO()
            ).target_metadata_location
            for side, (meta, session) in hops.items()
        }
        assert assert_same_table(local["source"], local["target"], spark=spark) > 0


def test_a_tables_storage_is_never_pruned_and_its_damage_found_but_never_written_over(
    world: tuple[Lake, LocalDeployment],
) -> None:
    lake, deployment = world
    publish_sample_tables(lake)
    only_orders = {"selection": {"tables": ["sales.orders"]}}
    (migrated,) = run_workflow(deployment, _request(lake, "s3t-r0", BUCKET_ARN, **only_orders))["tables"]
    assert migrated["status"] == "migrated", migrated
    io = S3FileIO(lake.target.client("s3"))
    # the source expires its three oldest snapshots (the first data file, rewritten by the delete,
    # is then reached by none): a sync deletes nothing in the table's storage, and says what a
    # Glue target's prune would have deleted and when the bucket's removal takes it
    old = StaticTable.from_metadata(migrated["target_metadata_location"], properties=s3_props())
    before = {
        e.file.file_path for e in old.scan(snapshot_id=old.metadata.snapshots[0].snapshot_id).plan_files()
    }

    def expire(table: Table) -> None:
        table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in table.snapshots()[:3]]).commit()

    _sample_commit(lake, "orders", expire)
    (synced,) = run_workflow(
        deployment, _request(lake, "s3t-x1", BUCKET_ARN, mode="incremental", **only_orders)
    )["tables"]
    assert synced["status"] == "migrated" and synced["files_pruned"] == 0, synced
    (kept,) = [w for w in synced["warnings"] if "a Glue target would have pruned" in w]
    assert "marks them 3 days after" in kept and all(io.stat(p) is not None for p in before)
    migrated = synced
    # someone overwrites a data file in the table's storage with bytes of the same length
    target = StaticTable.from_metadata(migrated["target_metadata_location"], properties=s3_props())
    path = next(iter(target.scan().plan_files())).file.file_path
    io.write(path, b"x" * len(io.read(path)))

    (found,) = run_workflow(deployment, _request(lake, "s3t-v1", BUCKET_ARN, mode="verify", **only_orders))[
        "tables"
    ]
    (repair,) = run_workflow(deployment, _request(lake, "s3t-r1", BUCKET_ARN, mode="repair", **only_orders))[
        "tables"
    ]

    # verify finds it (each file HEADed: the storage takes no listing); repair refuses to write
    # over it, naming it (S3 Tables' storage is never overwritten by icelake), and leaves it
    assert found["status"] == "damaged" and found["damaged_files"] == [path], found
    assert repair["status"] == "failed" and repair["error"]["type"] == "UnsafeTargetError", repair["error"]
    assert path in repair["error"]["message"] and "never overwritten" in repair["error"]["message"]
    assert io.read(path) == b"x" * len(io.read(path))
