"""Two source prefixes mapped onto one target directory, each holding a file of the same name:
refused while planning, naming both mappings, with nothing written. Before, the migration
exited 0 and the target read [100..104] twice where the source read [1, 2, 3, 100..104]."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable

from icelake.aws.fileio import LocalFileIO
from icelake.errors import UnsafeTargetError
from icelake.migrate import migrate_table
from icelake.migrate.collisions import refuse_duplicate_targets, refuse_overlapping_targets
from icelake.uris import PrefixMap

IO = LocalFileIO()


def _ids(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


@pytest.fixture
def two_prefixes(tmp_path: Path) -> tuple[str, Path, Path]:
    """A table whose data files live under a/x and b/y, both named part-0.parquet."""
    a, b = tmp_path / "a" / "x", tmp_path / "b" / "y"
    for directory, ids in ((a, [1, 2, 3]), (b, [100, 101, 102, 103, 104])):
        directory.mkdir(parents=True)
        pq.write_table(_ids(ids), directory / "part-0.parquet")
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=_ids([1]).schema)
    table.add_files([f"file://{a}/part-0.parquet", f"file://{b}/part-0.parquet"])
    metadata = catalog.load_table("db.t").metadata_location
    assert len(StaticTable.from_metadata(metadata).scan().to_arrow()) == 8
    return metadata, a, b


def test_two_sources_into_one_target_prefix_are_refused(
    two_prefixes: tuple[str, Path, Path], tmp_path: Path
) -> None:
    metadata, a, b = two_prefixes
    dst = tmp_path / "dst"
    maps = [(str(a), str(dst / "data")), (str(b), str(dst / "data"))]
    with pytest.raises(UnsafeTargetError, match="write into the same target prefix") as info:
        migrate_table(metadata, str(dst / "t"), maps, src_io=IO, dst_io=IO)
    assert str(a) in str(info.value) and str(b) in str(info.value)
    assert not dst.exists()


def test_a_target_nested_inside_another_mapping_is_refused(
    two_prefixes: tuple[str, Path, Path], tmp_path: Path
) -> None:
    metadata, a, b = two_prefixes
    dst = tmp_path / "dst"
    # b/y lands inside a/x's target: a/x/y/part-0.parquet and b/y/part-0.parquet could meet.
    maps = [(str(a), str(dst / "data")), (str(b), str(dst / "data" / "y"))]
    with pytest.raises(UnsafeTargetError, match="same target prefix"):
        migrate_table(metadata, str(dst / "t"), maps, src_io=IO, dst_io=IO)
    assert not dst.exists()


def test_separate_targets_migrate_every_row(two_prefixes: tuple[str, Path, Path], tmp_path: Path) -> None:
    metadata, a, b = two_prefixes
    dst = tmp_path / "dst"
    maps = [(str(a), str(dst / "a")), (str(b), str(dst / "b"))]
    result = migrate_table(metadata, str(dst / "t"), maps, src_io=IO, dst_io=IO)
    ids = StaticTable.from_metadata(result.target_metadata_location).scan().to_arrow().column("id")
    assert sorted(ids.to_pylist()) == [1, 2, 3, 100, 101, 102, 103, 104]


def test_a_mapping_that_continues_another_is_allowed() -> None:
    nested = PrefixMap([("s3://a/t", "s3://b/t"), ("s3://a/t/data", "s3://b/t/data")])
    refuse_overlapping_targets(nested)  # no error: every path maps the same under either mapping
    refuse_duplicate_targets(["s3://a/t/data/f.parquet", "s3://a/t/metadata/m.avro"], nested)


def test_two_source_keys_for_one_target_key_are_named() -> None:
    overlapping = PrefixMap([("s3://a/x", "s3://t/d"), ("s3://b/y", "s3://t/d")])
    with pytest.raises(UnsafeTargetError, match="1 target key") as info:
        refuse_duplicate_targets(
            ["s3://a/x/f.parquet", "s3://b/y/f.parquet", "s3://b/y/g.parquet"], overlapping
        )
    assert "s3://a/x/f.parquet and s3://b/y/f.parquet -> s3://t/d/f.parquet" in str(info.value)
