"""Validation tiers on a Spark-written table (Iceberg Java), read by pyiceberg: `metadata` checks
counts without reading data, `sample` and `rows` read data files, and `rows` above its size bound
samples instead and says so."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from icelake.aws.fileio import LocalFileIO
from icelake.migrate import migrate_table
from icelake.migrate.check.validate import validate_tables
from tests.spark.corpus import SourceTable

pytestmark = [pytest.mark.spark]


def _copy(table: SourceTable, tmp_path: Path) -> str:
    io = LocalFileIO()
    return migrate_table(
        table.metadata, str(tmp_path / "copy"), src_io=io, dst_io=io
    ).target_metadata_location


def test_every_tier_passes_a_faithful_copy(source_tables: dict[str, SourceTable], tmp_path: Path) -> None:
    table = source_tables["v2_merge_on_read"]
    target = _copy(table, tmp_path)
    for tier in ("metadata", "sample", "rows"):
        report = validate_tables(table.metadata, target, tier=tier)
        assert report.ok, (tier, report.problems)
        assert report.tier == tier and not report.notes
    assert validate_tables(table.metadata, target, tier="rows").snapshots  # rows really compared


def test_reading_tiers_catch_a_damaged_data_file_that_metadata_cannot_see(
    source_tables: dict[str, SourceTable], tmp_path: Path
) -> None:
    table = source_tables["v1_partitioned"]
    target = _copy(table, tmp_path)
    # Rewrite every data file of the copy with its rows reversed and the first row's id negated:
    # same files, counts and schema (field ids kept), different values.
    for task in StaticTable.from_metadata(target).scan().plan_files():
        path = task.file.file_path.removeprefix("file://")
        rows = pq.read_table(path)
        ids = rows.column("id").to_pylist()
        ids[0] = -ids[0] - 1
        pq.write_table(
            rows.set_column(rows.schema.get_field_index("id"), "id", [ids]).cast(rows.schema), path
        )
    metadata = validate_tables(table.metadata, target, tier="metadata")
    assert metadata.ok and metadata.tier == "metadata"  # counts and lineage are still equal
    for tier in ("sample", "rows"):
        report = validate_tables(table.metadata, target, tier=tier)
        assert not report.ok and any("differ" in p for p in report.problems), (tier, report.problems)


def test_rows_above_the_bound_are_sampled_and_the_report_says_so(
    source_tables: dict[str, SourceTable], tmp_path: Path
) -> None:
    table = source_tables["v1_partitioned"]
    report = validate_tables(table.metadata, _copy(table, tmp_path), tier="rows", rows_max_values=0)
    assert report.ok and report.tier == "sample" and not report.snapshots
    assert report.notes and all("rows not compared" in n and "sampled instead" in n for n in report.notes)
