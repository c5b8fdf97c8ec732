"""SCD2 merge: table from code, NULL-safe changes, schema evolution, idempotency, refusals, maintenance."""

from __future__ import annotations

import itertools
import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from glue_jobs import scd2_merge
from icelake.aws.fileio import LocalFileIO
from icelake.errors import (
    EmptyFullLoadError,
    InvalidBatchError,
    OutOfOrderBatchError,
    SchemaMismatchError,
)
from icelake.ingest import scd2
from icelake.ingest.landing import FetchedBatch, land_batch, list_pending, mark_complete
from icelake.ingest.models import MaintenanceConfig, PendingBatch, Scd2Spec
from icelake.ingest.scd2 import maintain, merge_pending
from icelake.ingest.scd2 import merge as merge_module

pytestmark = pytest.mark.spark

T0 = datetime(2026, 3, 1, tzinfo=UTC)
_n = itertools.count()


def land(root: Path, hours: int, *pages: list[dict[str, Any]], full_load: bool = False) -> PendingBatch:
    bodies = [json.dumps({"data": p}).encode() for p in pages]
    return land_batch(
        LocalFileIO(),
        str(root),
        FetchedBatch(
            source="api",
            endpoint="dim",
            pages=bodies,
            fetched_at=T0 + timedelta(hours=hours),
            full_load=full_load,
        ),
    )


def history(spark: Any, table: str, *cols: str) -> list[tuple[Any, ...]]:
    rows = spark.sql(
        f"SELECT {', '.join(cols)}, _is_current, _is_deleted, hour(_valid_from) AS f, hour(_valid_to) AS t "
        f"FROM {table} ORDER BY id, _valid_from"
    ).collect()
    return [tuple(r) for r in rows]


@pytest.fixture
def table(ingest_catalog: str) -> str:
    return f"{ingest_catalog}.unit.dim_{next(_n)}"


def test_table_is_created_from_code_with_comments_and_properties(
    spark: Any, table: str, tmp_path: Path
) -> None:
    spec = Scd2Spec(
        table=table,
        keys=("id",),
        order_by="updated_at",
        column_comments={"name": "display name"},
        properties={"team": "data-platform"},
    )
    merge_pending(spark, spec, LocalFileIO(), [land(tmp_path, 1, [{"id": 1, "name": "a", "updated_at": 1}])])
    described = {r["col_name"]: r["comment"] for r in spark.sql(f"DESCRIBE TABLE {table}").collect()}
    assert described["id"] == "business key" and described["name"] == "display name"
    assert "closed this version" in described["_is_deleted"]
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    assert props["team"] == "data-platform" and props["write.merge.mode"] == "merge-on-read"
    assert props["icelake.scd2.keys"] == "id" and props["format-version"] == "2"
    nullable = {f.name: f.nullable for f in spark.table(table).schema.fields}
    assert not nullable["id"] and not nullable["_valid_from"] and nullable["_valid_to"]
    partition = spark.table(f"{table}.partitions").schema["partition"].dataType
    assert partition.fieldNames() == ["_is_current"], "current rows are kept apart from history"


def test_null_transitions_and_new_columns_from_inferred_json(spark: Any, table: str, tmp_path: Path) -> None:
    # Given keys with a value, a NULL, and a NULL
    spec = Scd2Spec(table=table, keys=("id",))
    io = LocalFileIO()
    first = land(tmp_path, 1, [{"id": 1, "name": "a"}, {"id": 2, "name": None}, {"id": 3, "name": None}])
    # When key 1 becomes NULL, key 2 gets a value, key 3 stays NULL, and a new column appears on key 3 only
    second = land(
        tmp_path,
        2,
        [{"id": 1, "name": None}, {"id": 2, "name": "b"}, {"id": 3, "name": None, "tier": "gold"}],
    )
    # And a third batch repeats the second (a re-delivery)
    third = land(
        tmp_path,
        3,
        [{"id": 1, "name": None}, {"id": 2, "name": "b"}, {"id": 3, "name": None, "tier": "gold"}],
    )
    results = merge_pending(
        spark, spec, io, [third, first, second]
    )  # listed in any order: merged oldest first
    # Then every transition but NULL -> NULL made a version; the column was added; the re-delivery did nothing
    assert [(r.new_keys, r.closed, r.added_columns) for r in results] == [
        (3, 0, ()),
        (0, 3, ("tier",)),
        (0, 0, ()),
    ]
    assert history(spark, table, "id", "name", "tier") == [
        (1, "a", None, False, False, 1, 2),
        (1, None, None, True, False, 2, None),
        (2, None, None, False, False, 1, 2),
        (2, "b", None, True, False, 2, None),
        (3, None, None, False, False, 1, 2),
        (3, None, "gold", True, False, 2, None),
    ]


def test_rerun_after_a_crash_before_complete_adds_nothing(spark: Any, table: str, tmp_path: Path) -> None:
    spec = Scd2Spec(table=table, keys=("id",), order_by="v")
    io = LocalFileIO()
    batch = land(tmp_path, 1, [{"id": 1, "v": 1}, {"id": 1, "v": 2}, {"id": 2, "v": 1}])
    [first] = merge_pending(spark, spec, io, list_pending(io, str(tmp_path), "api", "dim"))
    snapshots = spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0]
    # The job died before .complete: the batch is still pending and the next run merges it again
    [again] = merge_pending(spark, spec, io, list_pending(io, str(tmp_path), "api", "dim"))
    assert not first.skipped and first.snapshot_id is not None and again.skipped
    assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0] == snapshots
    assert history(spark, table, "id", "v") == [(1, 2, True, False, 1, None), (2, 1, True, False, 1, None)]
    summary = spark.sql(
        f"SELECT summary FROM {table}.snapshots WHERE snapshot_id = {first.snapshot_id}"
    ).collect()
    assert summary[0]["summary"]["icelake.batch-id"] == batch.manifest.batch_id
    mark_complete(io, batch.uri)
    assert list_pending(io, str(tmp_path), "api", "dim") == []


def test_a_merge_that_fails_midway_is_retried_and_gives_the_uninterrupted_history(
    spark: Any, ingest_catalog: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three pending batches; the MERGE of the second fails before it commits (a lost executor).
    The first stays committed, nothing of the second is visible, and the retry of the whole list
    skips the first and merges the other two: the same history as one uninterrupted run."""
    spec = Scd2Spec(table=f"{ingest_catalog}.unit.dim_{next(_n)}", keys=("id",), schema_ddl="id INT, v INT")
    clean = spec.model_copy(update={"table": f"{ingest_catalog}.unit.dim_{next(_n)}"})
    io = LocalFileIO()
    batches = [
        land(tmp_path, 1, [{"id": 1, "v": 1}, {"id": 2, "v": 1}]),
        land(tmp_path, 2, [{"id": 1, "v": 2}, {"id": 3, "v": None}], full_load=True),
        land(tmp_path, 3, [{"id": 3, "v": 3}]),
    ]
    real_commit = merge_module.with_commit_properties

    def fail_batch_two(spark: Any, properties: dict[str, str], action: Any) -> Any:
        if properties[scd2.BATCH_ID_PROPERTY] == batches[1].manifest.batch_id:
            raise RuntimeError("simulated executor loss during the MERGE")
        return real_commit(spark, properties, action)

    monkeypatch.setattr(merge_module, "with_commit_properties", fail_batch_two)
    with pytest.raises(RuntimeError, match="executor loss"):
        merge_pending(spark, spec, io, batches)
    assert history(spark, spec.table, "id", "v") == [
        (1, 1, True, False, 1, None),
        (2, 1, True, False, 1, None),
    ]
    monkeypatch.setattr(merge_module, "with_commit_properties", real_commit)

    retried = merge_pending(spark, spec, io, batches)
    assert [r.skipped for r in retried] == [True, False, False]
    merge_pending(spark, clean, io, batches)
    assert (
        history(spark, spec.table, "id", "v")
        == history(spark, clean.table, "id", "v")
        == [
            (1, 1, False, False, 1, 2),
            (1, 2, True, False, 2, None),
            (2, 1, False, True, 1, 2),
            (3, None, False, False, 2, 3),
            (3, 3, True, False, 3, None),
        ]
    )


def test_full_load_closes_and_flags_missing_keys_and_a_key_can_come_back(
    spark: Any, table: str, tmp_path: Path
) -> None:
    spec = Scd2Spec(table=table, keys=("id",), schema_ddl="id INT, name STRING")
    io = LocalFileIO()
    batches = [
        land(tmp_path, 1, [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], full_load=True),
        land(tmp_path, 2, [{"id": 1, "name": "a"}], full_load=True),
        land(tmp_path, 3, [{"id": 2, "name": "b"}]),  # incremental: key 1 stays, key 2 returns
    ]
    results = merge_pending(spark, spec, io, batches)
    assert [r.deleted for r in results] == [0, 1, 0]
    assert history(spark, table, "id", "name") == [
        (1, "a", True, False, 1, None),
        (2, "b", False, True, 1, 2),
        (2, "b", True, False, 3, None),
    ]


def test_refusals_leave_the_table_untouched(spark: Any, table: str, tmp_path: Path) -> None:
    spec = Scd2Spec(table=table, keys=("id",), schema_ddl=None)
    io = LocalFileIO()
    merge_pending(spark, spec, io, [land(tmp_path, 5, [{"id": 1, "n": 1}])])
    before = spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0]
    with pytest.raises(EmptyFullLoadError, match="close every current row"):
        merge_pending(spark, spec, io, [land(tmp_path, 6, [], full_load=True)])
    with pytest.raises(InvalidBatchError, match="NULL key"):
        merge_pending(spark, spec, io, [land(tmp_path, 7, [{"id": None, "n": 2}])])
    with pytest.raises(SchemaMismatchError, match="'n' is bigint"):
        merge_pending(spark, spec, io, [land(tmp_path, 8, [{"id": 1, "n": "lots"}])])
    with pytest.raises(OutOfOrderBatchError, match="not newer"):
        merge_pending(spark, spec, io, [land(tmp_path, 4, [{"id": 1, "n": 3}])])
    with pytest.raises(InvalidBatchError, match="reserved"):
        merge_pending(spark, spec, io, [land(tmp_path, 9, [{"id": 1, "_is_current": False}])])
    assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0] == before
    assert spark.sql(f"SELECT id, n FROM {table}").collect() == [(1, 1)]


def test_maintenance_expires_rewrites_and_removes_orphans_and_expired_batches_stay_refused(
    spark: Any, table: str, tmp_path: Path
) -> None:
    spec = Scd2Spec(table=table, keys=("id",), schema_ddl="id INT, v INT")
    io = LocalFileIO()
    old = land(tmp_path, 1, [{"id": 1, "v": 1}])
    merge_pending(spark, spec, io, [old, land(tmp_path, 2, [{"id": 1, "v": 2}])])
    location = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").collect()[0][1]
    orphan = Path(location.removeprefix("file:")) / "data" / "orphan.parquet"
    orphan.write_bytes(b"left by a failed write")
    stale = time.time() - 4 * 86400
    os.utime(orphan, (stale, stale))
    report = maintain(
        spark,
        table,
        MaintenanceConfig(expire_older_than_days=0, retain_last=1, orphan_older_than_hours=72),
        now=datetime.now(UTC) + timedelta(hours=1),  # after compaction's snapshots, however slow it is
    )
    assert not orphan.exists() and any(p.endswith("orphan.parquet") for p in report["orphan_files_removed"])
    assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0] == 2  # merge + rewrite
    assert history(spark, table, "id", "v") == [(1, 1, False, False, 1, 2), (1, 2, True, False, 2, None)]
    # The first batch's snapshot is gone: re-running it is refused, not merged a second time
    with pytest.raises(OutOfOrderBatchError, match="expired"):
        merge_pending(spark, spec, io, [old])


def test_glue_entry_point_merges_the_given_batches(spark: Any, ingest_catalog: str, tmp_path: Path) -> None:
    warehouse = spark.conf.get(f"spark.sql.catalog.{ingest_catalog}.warehouse")
    spec = Scd2Spec(table=f"{ingest_catalog}.glue.dim_{next(_n)}", keys=("id",), order_by="ts")
    a = land(tmp_path, 1, [{"id": 1, "ts": 1, "x": "p"}], [{"id": 1, "ts": 2, "x": "q"}])
    b = land(tmp_path, 2, [{"id": 2, "ts": 1, "x": "r"}], full_load=True)
    argv = [
        "--mode",
        "merge",
        "--spec",
        spec.model_dump_json(),
        "--local-warehouse",
        warehouse,
        "--batch-uris",
        json.dumps([b.uri + "/", a.uri]),
        "--JOB_ID",
        "ignored",
    ]
    report = scd2_merge.main(argv)
    assert [(r["batch_id"], r["inserted"], r["deleted"]) for r in report["results"]] == [
        (a.manifest.batch_id, 1, 0),
        (b.manifest.batch_id, 1, 1),
    ]
    rows = spark.sql(f"SELECT id, x, _is_current, _source_file FROM {spec.table} ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [
        (1, "q", False, f"{a.uri}/page-000002.json"),
        (2, "r", True, f"{b.uri}/page-000001.json"),
    ]
    maint = scd2_merge.main(
        ["--mode", "maintain", "--spec", spec.model_dump_json(), "--local-warehouse", warehouse]
    )
    assert maint["orphan_files_removed"] == []


def test_maintenance_compacts_data_files_with_deletes_and_position_delete_files(
    spark: Any, table: str, tmp_path: Path
) -> None:
    spec = Scd2Spec(table=table, keys=("id",), schema_ddl="id INT, v INT")
    io = LocalFileIO()
    batches = [land(tmp_path, 1, [{"id": i, "v": 0} for i in range(20)])]
    batches += [land(tmp_path, h, [{"id": h, "v": h}]) for h in range(2, 8)]  # each closes one row
    merge_pending(spark, spec, io, batches)
    before = [tuple(r) for r in spark.sql(f"SELECT * FROM {table} ORDER BY id, _valid_from").collect()]
    deletes = spark.sql(f"SELECT count(*) FROM {table}.delete_files").collect()[0][0]
    assert deletes >= 1  # merge-on-read: closed rows are position deletes
    files = spark.sql(f"SELECT count(*) FROM {table}.data_files").collect()[0][0]
    report = maintain(
        spark,
        table,
        MaintenanceConfig(delete_file_threshold=1, min_input_files=1),
        now=datetime.now(UTC) + timedelta(seconds=1),
    )
    assert report["rewritten_data_files"] >= 1
    assert spark.sql(f"SELECT count(*) FROM {table}.data_files").collect()[0][0] < files
    assert spark.sql(f"SELECT count(*) FROM {table}.delete_files").collect()[0][0] == 0
    after = [tuple(r) for r in spark.sql(f"SELECT * FROM {table} ORDER BY id, _valid_from").collect()]
    assert after == before
    # Compaction off: nothing rewritten
    assert "rewritten_data_files" not in maintain(spark, table, MaintenanceConfig(delete_file_threshold=0))
