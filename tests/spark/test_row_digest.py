"""The `rows` tier of the Glue job (icelake.migrate.check.row_digest), on tables written by Spark's
Iceberg writer and by pyiceberg: its per-task digests add up to what pyiceberg's own scan of each
snapshot reads (position deletes applied), a faithful copy compares equal, a damaged one does not,
each distinct task is read once, and the work runs on Spark executors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from icelake.aws.fileio import FileIOSpec, LocalFileIO
from icelake.migrate import migrate_table
from icelake.migrate.check.row_digest import compare_rows, digest_rows, snapshot_digests, snapshot_units
from icelake.migrate.copy.distributed import SparkRunner
from icelake.migrate.copy.engine import ThreadRunner
from icelake.migrate.progress import NoProgress
from tests.spark.corpus import SourceTable

pytestmark = [pytest.mark.spark]

LOCAL = ({}, FileIOSpec("file"))
# Tables whose data files hold every column of the table's schema in schema order (no evolution),
# so a file's raw rows are the rows pyiceberg's scan projects.
SAME_SHAPE = ("v1_partitioned", "v2_merge_on_read", "history", "float_specials", "pyiceberg")


def _threads() -> ThreadRunner:
    return ThreadRunner(4, NoProgress())


def _copy(table: SourceTable, tmp_path: Path) -> str:
    io = LocalFileIO()
    return migrate_table(
        table.metadata, str(tmp_path / "copy"), table.maps_under(tmp_path / "moved"), src_io=io, dst_io=io
    ).target_metadata_location


@pytest.mark.parametrize("name", SAME_SHAPE)
def test_task_digests_add_up_to_what_pyiceberg_reads(
    source_tables: dict[str, SourceTable], name: str
) -> None:
    table = source_tables[name]
    digests, _read = snapshot_digests(table.metadata, *LOCAL, _threads(), "rows")
    static = StaticTable.from_metadata(table.metadata)
    assert set(digests) == {s.snapshot_id for s in static.metadata.snapshots}
    for snapshot_id, digest in digests.items():
        rows = static.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
        assert digest == digest_rows(r.values() for r in rows), snapshot_id
        assert digest.rows == len(rows)


def test_deletes_are_applied(source_tables: dict[str, SourceTable]) -> None:
    # The merge-on-read table's snapshots hold position-delete files, and what they delete is gone.
    table = source_tables["v2_merge_on_read"]
    static = StaticTable.from_metadata(table.metadata)
    current = static.metadata.current_snapshot_id
    assert current is not None
    units = snapshot_units(static, current)
    assert any(u.position_deletes for u in units)
    digests, _read = snapshot_digests(table.metadata, *LOCAL, _threads(), "rows")
    raw_rows = sum(pq.ParquetFile(u.data_file.removeprefix("file:")).metadata.num_rows for u in units)
    assert digests[current].rows < raw_rows


@pytest.mark.parametrize("name", [*SAME_SHAPE, "evolution", "statistics"])
def test_a_faithful_copy_compares_equal(
    source_tables: dict[str, SourceTable], name: str, tmp_path: Path
) -> None:
    table = source_tables[name]
    target = _copy(table, tmp_path)
    report = compare_rows(table.metadata, target, source=LOCAL, target=LOCAL, runner=_threads())
    snapshots = StaticTable.from_metadata(table.metadata).metadata.snapshots
    assert report.problems == [] and report.error is None
    assert report.snapshots_compared == len(snapshots) and report.rows > 0


def test_each_distinct_task_is_read_once(source_tables: dict[str, SourceTable], tmp_path: Path) -> None:
    # The history table's snapshots share data files: read once each, not once per snapshot.
    table = source_tables["history"]
    target = _copy(table, tmp_path)
    static = StaticTable.from_metadata(table.metadata)
    per_snapshot = [snapshot_units(static, s.snapshot_id) for s in static.metadata.snapshots]
    distinct = {u for units in per_snapshot for u in units}
    assert sum(len(units) for units in per_snapshot) > len(distinct)
    report = compare_rows(table.metadata, target, source=LOCAL, target=LOCAL, runner=_threads())
    assert report.files_read == 2 * len(distinct)


def test_a_damaged_copy_is_caught(source_tables: dict[str, SourceTable], tmp_path: Path) -> None:
    table = source_tables["v1_partitioned"]
    target = _copy(table, tmp_path)
    # Same files, counts and schema; one value changed in one data file of the copy.
    path = StaticTable.from_metadata(target).scan().plan_files()[0].file.file_path.removeprefix("file:")
    rows = pq.read_table(path)
    ids = rows.column("id").to_pylist()
    ids[0] = -ids[0] - 1
    pq.write_table(rows.set_column(rows.schema.get_field_index("id"), "id", [ids]).cast(rows.schema), path)
    report = compare_rows(table.metadata, target, source=LOCAL, target=LOCAL, runner=_threads())
    assert report.problems and all("same row count" in p and "different rows" in p for p in report.problems)


def test_a_table_it_cannot_read_is_skipped_with_the_reason(
    source_tables: dict[str, SourceTable], tmp_path: Path
) -> None:
    # Deletion vectors (v3) are not Parquet position deletes: the tier says so instead of guessing
    # (Validate then samples files, as the Lambda does above its bound).
    table = source_tables["v3_deletion_vectors"]
    target = _copy(table, tmp_path)
    report = compare_rows(table.metadata, target, source=LOCAL, target=LOCAL, runner=_threads())
    assert report.problems == [] and report.snapshots_compared == 0
    assert report.skipped is not None and "not a Parquet position-delete file" in report.skipped


def test_the_tasks_run_on_spark_executors(
    source_tables: dict[str, SourceTable], spark: Any, tmp_path: Path
) -> None:
    table = source_tables["v2_merge_on_read"]
    target = _copy(table, tmp_path)
    runner = SparkRunner(spark.sparkContext)
    report = compare_rows(table.metadata, target, source=LOCAL, target=LOCAL, runner=runner)
    threads = compare_rows(table.metadata, target, source=LOCAL, target=LOCAL, runner=_threads())
    assert report.problems == [] and report.model_dump(exclude={"seconds"}) == threads.model_dump(
        exclude={"seconds"}
    )
