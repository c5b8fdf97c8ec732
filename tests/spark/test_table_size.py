"""The size Plan reads from snapshot summaries alone (icelake.migrate.table_size), against what the
full plan finds, on tables written by Spark's Iceberg writer and by pyiceberg."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws.fileio import LocalFileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.reads import read_metadata
from icelake.migrate.progress import NoProgress
from icelake.migrate.settings import EngineSettings
from icelake.migrate.table_size import estimate_size
from icelake.uris import canonical
from tests.spark.corpus import ALL_CASES, SourceTable

pytestmark = [pytest.mark.spark]


def _plan_figures(table: SourceTable, tmp_path: Path) -> tuple[int, int]:
    io = LocalFileIO()
    plan = build_plan(
        table.metadata,
        str(tmp_path / "target" / table.name),
        table.maps_under(tmp_path / "target"),
        io,
        io,
        settings=EngineSettings(overwrite=False, workers=4, progress=NoProgress()),
    )
    # Statistics files are copied too, but no snapshot summary counts them.
    stats = {canonical(path) for path, _size in mj.statistics_files(plan.meta)}  # the plan's spelling
    data = [c for c in plan.copies if c.source not in stats]
    return len(data) + len(plan.delete_files), sum(c.info.size for c in data)


@pytest.mark.parametrize("name", ALL_CASES)
def test_the_estimate_bounds_what_the_plan_finds(
    source_tables: dict[str, SourceTable], name: str, tmp_path: Path
) -> None:
    table = source_tables[name]
    meta, _gz = read_metadata(LocalFileIO(), table.metadata)
    size = estimate_size(meta)
    assert size is not None  # both writers keep running totals in every summary
    files, data_bytes = _plan_figures(table, tmp_path)
    assert size.files >= files and size.bytes >= data_bytes


def test_an_append_only_table_is_estimated_exactly(tmp_path: Path) -> None:
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table("db.appends", schema=schema)
    for ids in ([1, 2], [3], [4, 5, 6]):
        table.append(pa.table({"id": pa.array(ids, pa.int64())}, schema=schema))
    metadata = catalog.load_table("db.appends").metadata_location
    meta, _gz = read_metadata(LocalFileIO(), metadata)
    size = estimate_size(meta)
    files, data_bytes = _plan_figures(SourceTable("appends", metadata, str(tmp_path)), tmp_path)
    assert size is not None and (size.files, size.bytes) == (files, data_bytes) == (3, data_bytes)


def test_without_running_totals_there_is_no_estimate(source_tables: dict[str, SourceTable]) -> None:
    meta, _gz = read_metadata(LocalFileIO(), source_tables["history"].metadata)
    stripped = json.loads(json.dumps(meta))
    del stripped["snapshots"][-1]["summary"]["total-data-files"]
    assert estimate_size(stripped) is None
    assert estimate_size({**meta, "snapshots": []}) is not None  # an empty table is 0 files
