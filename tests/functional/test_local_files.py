"""Local targets: written files get the usual modes, and a killed writer's temp files are removed by
the next run (only those of dead writers)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws.fileio import TEMP_PREFIX, LocalFileIO, remove_stale_temp_files
from icelake.migrate import migrate_table
from icelake.migrate.settings import EngineSettings

IO = LocalFileIO()


def _dead_pid() -> int:
    """The pid of a process that has exited."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    return int(child.stdout)


def _table(root: Path) -> str:
    root.mkdir(parents=True, exist_ok=True)
    cat = SqlCatalog("m", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.create_namespace("db")
    table = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    return cat.load_table("db.t").metadata_location


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_written_files_get_the_source_mode_or_the_umask(tmp_path: Path) -> None:
    metadata = _table(tmp_path / "src")
    old = os.umask(0o022)
    try:
        result = migrate_table(
            metadata,
            str(tmp_path / "dst"),
            src_io=IO,
            dst_io=IO,
            settings=EngineSettings(processes=1),
        )
    finally:
        os.umask(old)
    assert result.files_copied > 0
    written = [p for p in (tmp_path / "dst").rglob("*") if p.is_file()]
    sources = {p.name: _mode(p) for p in (tmp_path / "src").rglob("*.parquet")}
    for path in written:
        expected = sources.get(path.name, 0o644)  # data files keep the source's mode
        assert _mode(path) == expected, (path, oct(_mode(path)))


def test_a_dead_writers_temp_files_are_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    dead_pid = _dead_pid()
    (tmp_path / "data").mkdir()
    stale = tmp_path / "data" / f"{TEMP_PREFIX}{dead_pid}-abc123"
    live = tmp_path / "data" / f"{TEMP_PREFIX}{os.getpid()}-def456"
    theirs = tmp_path / "data" / ".other-tool-tmp"
    for p in (stale, live, theirs):
        p.write_bytes(b"half")
    assert remove_stale_temp_files(str(tmp_path)) == 1
    assert not stale.exists() and live.exists() and theirs.exists()


def test_a_resume_cleans_what_a_killed_run_left(tmp_path: Path) -> None:
    metadata = _table(tmp_path / "src")
    leftovers = tmp_path / "dst" / "data"
    leftovers.mkdir(parents=True)
    stale = leftovers / f"{TEMP_PREFIX}{_dead_pid()}-x1y2z3"
    stale.write_bytes(b"half a parquet file")
    migrate_table(
        metadata,
        str(tmp_path / "dst"),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(processes=1),
    )
    assert not stale.exists()
    assert not list((tmp_path / "dst").rglob(f"{TEMP_PREFIX}*"))


def test_a_listing_names_what_os_walk_finds_with_sizes_in_s3s_order(tmp_path: Path) -> None:
    # Given files in nested directories, a linked directory, an empty one, and names that sort
    # before and after a directory's '/' ('a-c' < 'a/...' < 'a0')
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "e").mkdir()
    for name, data in [("x", b"12"), ("a/y", b"1"), ("a/b/z", b""), ("a-c", b"3"), ("a0", b"45")]:
        (tmp_path / name).write_bytes(data)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    walked = [
        (f"file://{os.path.join(d, n)}", os.path.getsize(os.path.join(d, n)))
        for d, _dirs, names in os.walk(tmp_path)
        for n in names
    ]
    # When it is listed; Then it names what os.walk does (not following the link), in the order S3
    # lists keys: as strings
    listed = [(uri, info.size) for uri, info in LocalFileIO().list(str(tmp_path))]
    assert listed == sorted(walked) and len(walked) == 5
    assert [uri.rpartition(f"{tmp_path}/")[2] for uri, _ in listed] == ["a-c", "a/b/z", "a/y", "a0", "x"]
    assert list(LocalFileIO().list(str(tmp_path / "missing"))) == []
    # and from after any key (S3's StartAfter), or any string between keys, only what follows it
    for after in [uri for uri, _ in listed] + [f"file://{tmp_path}/a/", f"file://{tmp_path}/a/b0"]:
        assert list(LocalFileIO().list(str(tmp_path), start_after=after)) == [
            (uri, info) for uri, info in LocalFileIO().list(str(tmp_path)) if uri > after
        ]
