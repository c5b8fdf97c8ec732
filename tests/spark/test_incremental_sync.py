"""A sync costs the change (issue 42): after a full migration, `icelake migrate path` plans only
what the source committed since the target's last sync, and the target still reads like the
source in every snapshot, in Spark (Iceberg Java) and pyiceberg. Each change is made by Iceberg's
Java writer through Spark and by pyiceberg; each sync is checked to have read only the new
manifest lists and manifests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icelake.aws.fileio import LocalFileIO
from icelake.errors import NoBase, TargetHoldsOtherTableError
from icelake.migrate import migrate_table
from icelake.migrate.models import MigrationResult
from icelake.migrate.plan.reads import read_metadata
from icelake.migrate.plan.since import Since, sync_base
from icelake.migrate.plan.target import table_prefix_map
from icelake.migrate.settings import EngineSettings
from icelake.uris import canonical
from tests.spark.corpus import MOR, current_metadata
from tests.verify import assert_same_table, assert_sizes_match, load

pytestmark = [pytest.mark.spark, pytest.mark.slow]


class ReadsIO(LocalFileIO):
    """LocalFileIO that remembers every file read (canonical paths)."""

    def __init__(self) -> None:
        self.reads: set[str] = set()
        self._lock = threading.Lock()

    def read(self, uri: str) -> bytes:
        with self._lock:
            self.reads.add(canonical(uri))
        return super().read(uri)

    def parse_in(self, cpu: Executor | None, uri: str, job: Callable[..., Any], *args: Any) -> Any:
        assert cpu is None, "the sync tests plan on threads, where every read is seen"
        return super().parse_in(cpu, uri, job, *args)


def sync(metadata: str, target: Path, src_io: LocalFileIO | None = None) -> MigrationResult:
    """`icelake migrate path` as the CLI runs it: from the target's last sync when it has one."""
    io = LocalFileIO()
    return migrate_table(
        metadata,
        str(target),
        src_io=src_io or io,
        dst_io=io,
        settings=EngineSettings(workers=4, processes=1, since=Since(from_target=True)),
    )


def manifests_and_lists(metadata: str) -> tuple[set[str], set[str]]:
    """(every manifest, every manifest list) the version's snapshots name."""
    table = load(metadata)
    lists = {canonical(s.manifest_list) for s in table.metadata.snapshots}
    manifests = {canonical(m.manifest_path) for s in table.metadata.snapshots for m in s.manifests(table.io)}
    return manifests, lists


@dataclass
class Writer:
    """One table, and the changes the test makes to it, by one writer."""

    name: str
    metadata: Callable[[], str]
    change: Callable[[str], None]


def _spark_writer(spark: Any, name: str) -> Writer:
    ident = f"src.db.{name}"
    spark.sql(
        f"CREATE TABLE {ident} (id bigint, v string, p int) USING iceberg PARTITIONED BY (p) "
        f"TBLPROPERTIES ('format-version'='2',{MOR})"
    )
    for i in range(3):
        spark.sql(f"INSERT INTO {ident} VALUES ({i * 10}, 'a{i}', {i % 2}), ({i * 10 + 1}, 'b{i}', {i % 2})")

    changes: dict[str, Callable[[], None]] = {
        "appends": lambda: [spark.sql(f"INSERT INTO {ident} VALUES ({100 + i}, 'new', 1)") for i in range(3)],
        "merge_deletes": lambda: spark.sql(
            f"MERGE INTO {ident} t USING (SELECT id, 'merged' AS v, 0 AS p FROM range(0, 25)) s "
            "ON t.id = s.id WHEN MATCHED AND t.id % 2 = 0 THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET t.v = s.v WHEN NOT MATCHED THEN INSERT *"
        ),
        "rewrite_manifests": lambda: spark.sql(f"CALL src.system.rewrite_manifests('db.{name}')"),
        "compaction": lambda: spark.sql(
            f"CALL src.system.rewrite_data_files(table => 'db.{name}', options => map('min-input-files','1'))"
        ),
        "expiry": lambda: (
            spark.sql(f"INSERT INTO {ident} VALUES (200, 'x', 0)"),
            spark.sql(
                f"CALL src.system.expire_snapshots(table => 'db.{name}', "
                "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 2)"
            ),
        ),
        "schema_spec": lambda: (
            spark.sql(f"ALTER TABLE {ident} ADD COLUMN w double"),
            spark.sql(f"ALTER TABLE {ident} ADD PARTITION FIELD bucket(4, id)"),
            spark.sql(f"INSERT INTO {ident} VALUES (300, 's', 1, 1.5)"),
        ),
        "branch_tag": lambda: (
            spark.sql(f"ALTER TABLE {ident} CREATE TAG `t1`"),
            spark.sql(f"ALTER TABLE {ident} CREATE BRANCH b1"),
            spark.sql(f"INSERT INTO {ident}.branch_b1 VALUES (400, 'on-branch', 0)"),
        ),
    }
    return Writer(name, lambda: current_metadata(spark, ident), lambda kind: changes[kind]())


def _py_writer(catalog: Any, name: str) -> Writer:
    from pyiceberg.expressions import EqualTo, GreaterThanOrEqual
    from pyiceberg.types import DoubleType

    def rows(ids: list[int], v: str = "a") -> pa.Table:
        arrow = table.schema().as_arrow()
        columns = {"id": ids, "v": [f"{v}{i}" for i in ids], "p": [i % 2 for i in ids]}
        return pa.Table.from_pydict({f.name: columns.get(f.name) or [None] * len(ids) for f in arrow}, arrow)

    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.int32())])
    table = catalog.create_table(f"db.{name}", schema=schema)
    for i in range(3):
        table.append(rows([i * 10, i * 10 + 1]))

    def expire() -> None:
        table.append(rows([200]))
        current = table.current_snapshot()
        assert current is not None
        older = [s.snapshot_id for s in table.snapshots() if s.snapshot_id != current.snapshot_id]
        table.maintenance.expire_snapshots().by_ids(older[:2]).commit()

    def schema_spec() -> None:
        with table.update_schema() as update:
            update.add_column("w", DoubleType())
        with table.update_spec() as update:
            update.add_identity("p")
        table.append(rows([300]))

    def branch_tag() -> None:
        head = table.current_snapshot()
        assert head is not None
        table.manage_snapshots().create_tag(head.snapshot_id, "t1").create_branch(
            head.snapshot_id, "b1"
        ).commit()
        table.append(rows([400], "branch"), branch="b1")

    changes: dict[str, Callable[[], None]] = {
        "appends": lambda: [table.append(rows([100 + i], "new")) for i in range(3)],
        "merge_deletes": lambda: (
            table.delete(EqualTo("id", 10)),
            table.upsert(rows([11, 12], "up"), ["id"]),
        ),
        "rewrite_manifests": lambda: table.overwrite(rows([1, 2, 3], "all")),
        "compaction": lambda: table.overwrite(
            table.scan().to_arrow(), overwrite_filter=GreaterThanOrEqual("id", 0)
        ),
        "expiry": expire,
        "schema_spec": schema_spec,
        "branch_tag": branch_tag,
    }

    def metadata() -> str:
        table.refresh()
        return str(table.metadata_location)

    return Writer(name, metadata, lambda kind: changes[kind]())


@pytest.fixture(scope="module")
def py_catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = tmp_path_factory.mktemp("py_sync")
    catalog = SqlCatalog("py_sync", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    catalog.create_namespace("db")
    return catalog


CHANGES = [
    "appends",
    "merge_deletes",
    "rewrite_manifests",
    "compaction",
    "expiry",
    "schema_spec",
    "branch_tag",
]


@pytest.mark.parametrize("writer", ["spark", "pyiceberg"])
@pytest.mark.parametrize("change", CHANGES)
def test_sync_after_a_change_reads_only_what_is_new(
    writer: str, change: str, spark: Any, py_catalog: Any, tmp_path: Path
) -> None:
    # Given a table migrated in full
    name = f"sync_{change}"
    table = _spark_writer(spark, name) if writer == "spark" else _py_writer(py_catalog, name)
    target = tmp_path / "target"
    first = sync(table.metadata(), target)
    assert first.sync == "full"
    assert "no metadata.json" in first.sync_reason
    before = table.metadata()
    old_manifests, old_lists = manifests_and_lists(before)

    # When the source changes and the same migration runs again
    table.change(change)
    after = table.metadata()
    src_io = ReadsIO()
    result = sync(after, target, src_io)

    # Then the plan started from the last sync, and read none of what it had synced
    assert result.sync == "incremental", result.sync_reason
    assert not src_io.reads & old_lists
    assert not src_io.reads & old_manifests
    # and every snapshot of the target reads like the source's, in Spark and pyiceberg
    assert assert_same_table(after, result.target_metadata_location, spark=spark) == result.snapshots
    assert assert_sizes_match(LocalFileIO(), result.target_metadata_location) > 0
    # and a run with nothing new copies and rewrites nothing
    again = sync(after, target)
    assert again.sync == "incremental"
    assert (again.files_copied, again.files_rewritten) == (0, 0)


def test_sync_full_when_the_source_rolled_back(spark: Any, tmp_path: Path) -> None:
    table = _spark_writer(spark, "sync_rollback")
    target = tmp_path / "target"
    sync(table.metadata(), target)
    snapshots = spark.sql(
        "SELECT snapshot_id FROM src.db.sync_rollback.snapshots ORDER BY committed_at"
    ).collect()
    spark.sql(f"CALL src.system.rollback_to_snapshot('db.sync_rollback', {snapshots[0][0]})")

    result = sync(table.metadata(), target)

    assert result.sync == "full"
    assert "does not descend" in result.sync_reason
    assert_same_table(table.metadata(), result.target_metadata_location, spark=spark)


def test_sync_full_when_the_source_was_replaced(py_catalog: Any, tmp_path: Path) -> None:
    # Given a table synced once, then dropped and created again at the same location (a new UUID)
    table = _py_writer(py_catalog, "sync_replaced")
    target = tmp_path / "target"
    sync(table.metadata(), target)
    location = load(table.metadata()).metadata.location
    py_catalog.drop_table("db.sync_replaced")
    again = py_catalog.create_table(
        "db.sync_replaced", schema=pa.schema([("id", pa.int64())]), location=location
    )
    again.append(pa.table({"id": pa.array([7], pa.int64())}))
    metadata = str(again.metadata_location)
    meta, _gz = read_metadata(LocalFileIO(), metadata)

    # When a sync looks for where to start, it finds the last sync on the target, of another table
    with pytest.raises(NoBase, match="the source table was replaced: its UUID was"):
        prefix_map = table_prefix_map(meta, [], str(target))
        sync_base(Since(from_target=True), metadata, meta, prefix_map, LocalFileIO(), LocalFileIO())
    # and the migration, full, refuses to write over the other table
    with pytest.raises(TargetHoldsOtherTableError):
        sync(metadata, target)


def test_sync_full_when_the_target_lost_its_last_manifest_list(spark: Any, tmp_path: Path) -> None:
    table = _spark_writer(spark, "sync_lost_list")
    target = tmp_path / "target"
    first = sync(table.metadata(), target)
    current = load(first.target_metadata_location).metadata
    lost = next(s.manifest_list for s in current.snapshots if s.snapshot_id == current.current_snapshot_id)
    Path(lost.removeprefix("file:")).unlink()
    spark.sql("INSERT INTO src.db.sync_lost_list VALUES (500, 'after', 0)")

    result = sync(table.metadata(), target)

    assert result.sync == "full"
    assert "manifest list of the last sync" in result.sync_reason and "missing" in result.sync_reason
    assert_same_table(table.metadata(), result.target_metadata_location, spark=spark)


def test_sync_full_when_asked(spark: Any, tmp_path: Path) -> None:
    table = _spark_writer(spark, "sync_asked_full")
    target = tmp_path / "target"
    sync(table.metadata(), target)
    spark.sql("INSERT INTO src.db.sync_asked_full VALUES (600, 'after', 0)")

    result = migrate_table(
        table.metadata(),
        str(target),
        src_io=LocalFileIO(),
        dst_io=LocalFileIO(),
        settings=EngineSettings(processes=1, since=Since(reason="--full asks for it")),
    )

    assert (result.sync, result.sync_reason) == ("full", "--full asks for it")


def test_the_glue_job_syncs_from_the_version_plan_named(spark: Any, tmp_path: Path) -> None:
    # Given a table the Glue job migrated in full
    from glue_jobs import migrate_table as glue_job

    table = _spark_writer(spark, "sync_glue")
    target = tmp_path / "target"
    synced = table.metadata()
    first = glue_job.main(["--source-metadata", synced, "--target-location", str(target), "--run-id", "g1"])
    assert first.sync == "full"

    # When the source gets a commit and the job runs from the version Plan names (--sync-from)
    spark.sql("INSERT INTO src.db.sync_glue VALUES (700, 'glue', 1)")
    after = table.metadata()
    argv = ["--source-metadata", after, "--target-location", str(target), "--run-id", "g2"]
    result = glue_job.main([*argv, "--sync-from", synced])

    # Then it planned only the change, and the target reads like the source in every snapshot
    assert result.sync == "incremental", result.sync_reason
    assert result.files_copied == 1
    assert result.files_check is not None and result.files_check.problems == []
    assert assert_same_table(after, result.target_metadata_location, spark=spark) == result.snapshots


def test_a_sync_under_history_all_carries_what_the_new_versions_reach(
    py_catalog: Any, tmp_path: Path
) -> None:
    # Given a table migrated with its whole history (history all)
    table = _py_writer(py_catalog, "sync_history_all")
    target = tmp_path / "target"
    io = LocalFileIO()

    def run(metadata: str) -> MigrationResult:
        settings = EngineSettings(processes=1, history="all", since=Since(from_target=True))
        return migrate_table(metadata, str(target), src_io=io, dst_io=io, settings=settings)

    assert run(table.metadata()).sync == "full"

    # When the source commits snapshots and expires those committed since the last sync but the
    # newest (pyiceberg's expiry keeps their files: only the logged versions reach them)
    synced = {s.snapshot_id for s in load(table.metadata()).metadata.snapshots}
    table.change("appends")
    pyiceberg_table = py_catalog.load_table("db.sync_history_all")
    current = pyiceberg_table.current_snapshot()
    since = [s.snapshot_id for s in pyiceberg_table.snapshots() if s.snapshot_id not in synced]
    expired = [s for s in since if s != current.snapshot_id]
    pyiceberg_table.maintenance.expire_snapshots().by_ids(expired).commit()
    after = table.metadata()
    result = run(after)

    # Then the sync is incremental, and every logged version's manifest lists that the source
    # still has are on the target too, as a full migration under history all carries them
    assert result.sync == "incremental", result.sync_reason
    assert len(expired) == 2 and not {s.snapshot_id for s in load(after).metadata.snapshots} & set(expired)
    assert_same_table(after, result.target_metadata_location)
    for logged in load(after).metadata.metadata_log:
        version = load(logged.metadata_file).metadata
        for snapshot in version.snapshots:
            source_list = snapshot.manifest_list
            if io.stat(source_list) is not None:
                assert io.stat(source_list.replace(load(after).metadata.location, str(target))) is not None
