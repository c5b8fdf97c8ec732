"""Two source prefixes mapped onto one target directory, each holding a file of the same name:
refused while planning, naming both mappings, with nothing written. Before, the migration
exited 0 and the target read [100..104] twice where the source read [1, 2, 3, 100..104]."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable

from icelake.aws.fileio import LocalFileIO
from icelake.errors import TargetHoldsOtherTableError, TargetLockedError, UnsafeTargetError
from icelake.migrate import migrate_table
from icelake.migrate.collisions import LOCK_NAME, refuse_duplicate_targets, refuse_overlapping_targets
from icelake.migrate.settings import EngineSettings
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


def _pyiceberg_table(root: Path, ids: list[int]) -> str:
    catalog = SqlCatalog("l", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=_ids([1]).schema)
    table.append(_ids(ids))
    return catalog.load_table("db.t").metadata_location


def test_a_target_held_by_a_live_run_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    metadata = _pyiceberg_table(tmp_path / "a", [1])
    dst = tmp_path / "dst"
    dst.mkdir()
    holder = {
        "source": "s3://lake/other/metadata/v3.metadata.json",
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "since": 1_790_000_000,
    }
    (dst / LOCK_NAME).write_text(json.dumps(holder))
    with pytest.raises(TargetLockedError, match=r"s3://lake/other/metadata/v3\.metadata\.json") as info:
        migrate_table(metadata, str(dst), src_io=IO, dst_io=IO)
    assert "delete" in str(info.value) and LOCK_NAME in str(info.value)
    assert sorted(p.name for p in dst.iterdir()) == [LOCK_NAME]  # nothing written


def test_a_lock_left_by_a_killed_run_here_is_taken_over_and_released(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    metadata = _pyiceberg_table(tmp_path / "a", [1])
    dst = tmp_path / "dst"
    dst.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    stale = {"source": metadata, "host": socket.gethostname(), "pid": int(dead.stdout), "since": 1}
    (dst / LOCK_NAME).write_text(json.dumps(stale))
    result = migrate_table(metadata, str(dst), src_io=IO, dst_io=IO)
    assert result.files_copied == 1
    assert not (dst / LOCK_NAME).exists()


def test_two_tables_racing_into_one_target_never_both_land(tmp_path: Path) -> None:
    for trial in range(3):
        roots = [tmp_path / f"t{trial}-{n}" for n in ("a", "b")]
        for root in roots:
            root.mkdir()
        metas = [_pyiceberg_table(root, ids) for root, ids in zip(roots, ([1, 2], [3, 4]), strict=True)]
        dst = tmp_path / f"dst{trial}"
        barrier = threading.Barrier(2)

        def run(meta: str, barrier: threading.Barrier = barrier, dst: Path = dst) -> str:
            barrier.wait()
            try:
                migrate_table(
                    meta,
                    str(dst),
                    src_io=IO,
                    dst_io=IO,
                    settings=EngineSettings(processes=1),
                )
            except (TargetLockedError, TargetHoldsOtherTableError) as exc:
                return type(exc).__name__
            return "ok"

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(run, metas))
        assert sorted(results)[-1] == "ok" and results.count("ok") == 1, results
        uuids = {json.loads(p.read_text())["table-uuid"] for p in dst.rglob("*.metadata.json")}
        assert len(uuids) == 1  # one table's metadata only
