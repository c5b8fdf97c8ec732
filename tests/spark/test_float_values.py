"""Validate on a table whose floats are NaN, +-infinity, -0.0 and NULL, in a data column and in a
partition column: a correct copy validates (before, NaN "differed from itself" and the copy was
rolled back), and a copy whose -0.0 became 0.0 does not."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable

from icelake.aws.fileio import LocalFileIO
from icelake.migrate import migrate_table
from icelake.migrate.check.validate import validate_tables
from tests.spark.corpus import SourceTable

pytestmark = [pytest.mark.spark]


def test_a_copy_of_nan_and_signed_zeros_validates(
    source_tables: dict[str, SourceTable], tmp_path: Path
) -> None:
    table = source_tables["float_specials"]
    io = LocalFileIO()
    result = migrate_table(table.metadata, str(tmp_path / "t"), src_io=io, dst_io=io)
    report = validate_tables(table.metadata, result.target_metadata_location)
    assert report.ok, report.problems
    assert sum(c.source_rows for c in report.snapshots) > 0
    rows = StaticTable.from_metadata(table.metadata).scan().to_arrow()
    floats = rows.column("f").to_pylist()
    assert any(v is not None and math.isnan(v) for v in floats)  # NaN really is in the table
    assert None in rows.column("p").to_pylist()


def test_a_lost_sign_of_zero_is_a_difference(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog("z", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}")
    cat.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("f", pa.float64())])
    src = cat.create_table("db.src", schema=schema)
    src.append(pa.table({"id": [1, 2], "f": [-0.0, float("nan")]}, schema=schema))
    source_metadata = cat.load_table("db.src").metadata_location
    io = LocalFileIO()
    result = migrate_table(source_metadata, str(tmp_path / "copy"), src_io=io, dst_io=io)
    # Rewrite the copy's only data file with +0.0: same row count, same NaN, lost sign.
    target = StaticTable.from_metadata(result.target_metadata_location)
    (task,) = target.scan().plan_files()
    import pyarrow.parquet as pq

    path = task.file.file_path.removeprefix("file://")
    written = pq.read_schema(path)  # keeps the Iceberg field ids
    pq.write_table(pa.table({"id": [1, 2], "f": [0.0, float("nan")]}, schema=written), path)
    report = validate_tables(source_metadata, result.target_metadata_location)
    assert not report.ok
    assert any("1 only in the source, 1 only in the target" in p for p in report.problems)
