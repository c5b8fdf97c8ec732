"""The plan's copies are made when asked from the source check's answers: a plan of a million
files holds no million `CopyTask`s (64 MB at its peak), and the sequence reads like a list."""

from __future__ import annotations

import gc
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws.fileio import LocalFileIO, ObjectInfo
from icelake.migrate.copy.engine import Outcome, migrate_table
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.copies import Copies, CopyTask
from icelake.migrate.progress import NoProgress
from icelake.migrate.settings import EngineSettings
from icelake.uris import PrefixMap, canonical


def test_copies_are_made_when_asked_and_read_like_a_list(tmp_path: Path) -> None:
    # Given a table of six data files written by pyiceberg
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/src")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=pa.schema([pa.field("id", pa.int64())]))
    for i in range(6):
        table.append(pa.table({"id": pa.array([i, i + 10], pa.int64())}))
    table = catalog.load_table("db.t")
    data_files = {canonical(task.file.file_path) for task in table.scan().plan_files()}
    assert len(data_files) == 6
    target = tmp_path / "target" / "db" / "t"

    # When it is planned
    plan = build_plan(
        table.metadata_location,
        str(target),
        [],
        LocalFileIO(),
        LocalFileIO(),
        settings=EngineSettings(overwrite=False, workers=4, progress=NoProgress()),
    )

    # Then no copy is held as a task, yet the copies are the table's data files, as a list reads
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, CopyTask)]
    tasks = list(plan.copies)
    assert {t.source for t in tasks} == data_files
    assert len(plan.copies) == 6
    assert [plan.copies[i] for i in range(6)] == tasks == plan.copies[:]
    assert plan.copies[-1] == tasks[-1] and plan.copies[2:4] == tasks[2:4]
    assert list(plan.copies.pairs()) == [(t.source, t.target) for t in tasks]
    for t in tasks:
        assert t.target == f"file://{target}" + t.source[len(canonical(table.location())) :]
        assert t.info.size == Path(t.source[len("file://") :]).stat().st_size


@pytest.mark.parametrize(
    ("maps", "targets"),
    [
        (
            [("s3://src/t", "s3://dst/t")],
            ["s3://dst/t/data/a/1.parquet", "s3://dst/t/data/b/2.parquet", "s3://dst/t", "s3://dst/t/data/b"],
        ),
        (
            [("s3://src/t", "s3://dst/t"), ("s3://src/t/data/b", "s3://elsewhere/b")],
            ["s3://dst/t/data/a/1.parquet", "s3://elsewhere/b/2.parquet", "s3://dst/t", "s3://elsewhere/b"],
        ),
    ],
)
def test_pairs_map_each_copy_as_its_task_does(maps: list[tuple[str, str]], targets: list[str]) -> None:
    # Given copies under one mapping or under nested ones, two of them a mapped prefix itself
    paths = ["s3://src/t/data/a/1.parquet", "s3://src/t/data/b/2.parquet", "s3://src/t", "s3://src/t/data/b"]
    prefix_map = PrefixMap(maps)
    copies = Copies(paths, dict.fromkeys(paths, ObjectInfo(size=1)), prefix_map)
    # Then each (source, target) pair is the one its task makes, in order
    assert list(copies.pairs()) == list(zip(paths, targets, strict=True))
    assert list(copies.pairs()) == [(t.source, t.target) for t in copies]
    # And a path the map does not cover (only its name starts like the mapping's) is refused
    with pytest.raises(AssertionError):
        list(Copies(["s3://src/t2/x.parquet"], {}, prefix_map).pairs())


class _CountsOutcomesAfterCopies:
    """A progress sink that, when the manifests' rewrite starts (after every copy), counts the
    copies' outcomes still alive."""

    def __init__(self) -> None:
        self.copy_outcomes_alive: int | None = None

    def start(self, phase: str, total: int) -> None:
        if phase == "rewrite manifests":
            gc.collect()
            self.copy_outcomes_alive = sum(
                1 for o in gc.get_objects() if isinstance(o, Outcome) and o.status == "copied"
            )

    def advance(self, phase: str, amount: int = 1) -> None:
        return None


def test_the_copies_outcomes_are_added_up_not_kept(tmp_path: Path) -> None:
    # Given a table of twelve data files written by pyiceberg
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/src")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=pa.schema([pa.field("id", pa.int64())]))
    for i in range(12):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    table = catalog.load_table("db.t")
    sizes = [task.file.file_size_in_bytes for task in table.scan().plan_files()]
    progress = _CountsOutcomesAfterCopies()

    # When it is migrated
    result = migrate_table(
        table.metadata_location,
        str(tmp_path / "target" / "db" / "t"),
        src_io=LocalFileIO(),
        dst_io=LocalFileIO(),
        settings=EngineSettings(workers=3, progress=progress),
    )

    # Then once the copies are done none of their outcomes is held (a million of them would be
    # hundreds of MB), and the result still counts every copy and its bytes
    assert progress.copy_outcomes_alive == 0
    assert (result.files_copied, result.bytes_copied) == (len(sizes), sum(sizes)) == (12, sum(sizes))
