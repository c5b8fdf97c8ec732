"""Stranded commits and their carry-over on local files, with real pyiceberg tables: which commits
after promotion are found, which a carry-over refuses and why, and that a carried snapshot reads as
the target's rows plus the source's appended ones, on top of a commit the target's writers made.
(The workflow around it runs on embedded AWS in tests/e2e/test_migrate_stranded.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable, Table
from pyiceberg.types import StringType

from icelake.aws.fileio import LocalFileIO
from icelake.errors import CarryRefusedError
from icelake.migrate.copy.engine import migrate_table
from icelake.migrate.cutover.carry import plan_carry, refusals, write_carry
from icelake.migrate.cutover.stranded import CARRIED_FROM, carried_ids, commits_after
from icelake.uris import PrefixMap

IO = LocalFileIO()


def _rows(table: Table, ids: list[int]) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}, schema=table.schema().as_arrow()
    )


def _meta(uri: str) -> dict[str, Any]:
    return dict(json.loads(Path(uri.removeprefix("file://")).read_text()))


def _ids(uri: str) -> list[int]:
    return sorted(StaticTable.from_metadata(uri).scan().to_arrow().column("id").to_pylist())


@pytest.fixture
def promoted(tmp_path: Path) -> tuple[SqlCatalog, str, str, str]:
    """A source table of two appends and its copy at a target location, as a cutover leaves them:
    (source catalog, promoted source metadata, target metadata, target location)."""
    cat = SqlCatalog("src", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/src")
    cat.create_namespace("sales")
    table = cat.create_table("sales.orders", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    table.append(_rows(table, [1]))
    table.append(_rows(table, [2]))
    location = f"file://{tmp_path}/target/orders"
    result = migrate_table(table.metadata_location, location, src_io=IO, dst_io=IO)
    return cat, table.metadata_location, result.target_metadata_location, location


def _target_writer(tmp_path: Path, metadata: str) -> Table:
    """The target's own writers, committing since promotion."""
    cat = SqlCatalog("dst", uri=f"sqlite:///{tmp_path}/t.db", warehouse=f"file://{tmp_path}/target")
    cat.create_namespace("sales")
    return cat.register_table("sales.orders", metadata)


def test_commits_after_promotion_are_found_oldest_first_less_those_carried(
    promoted: tuple[SqlCatalog, str, str, str],
) -> None:
    cat, at_promotion, _target, _location = promoted
    table = cat.load_table("sales.orders")
    table.append(_rows(table, [3]))
    table.delete("id = 1")
    table.append(_rows(table, [4]), branch="audit")
    current = _meta(table.refresh().metadata_location)

    commits = commits_after(_meta(at_promotion), current, "2020-01-01T00:00:00+00:00", set())

    assert [c.operation for c in commits] == ["append", "delete", "append"]
    assert [c.on_main for c in commits] == [True, True, False]
    assert (commits[0].added_files, commits[0].added_records, commits[0].removed_records) == (1, 1, 0)
    assert commits[1].removed_records == 1
    later = commits_after(_meta(at_promotion), current, "", {commits[0].snapshot_id})
    assert [c.snapshot_id for c in later] == [c.snapshot_id for c in commits[1:]]
    # without the promoted metadata (deleted at the source since), the time decides
    assert commits_after(None, current, "2999-01-01T00:00:00+00:00", set()) == []


def test_a_carry_over_lands_on_top_of_the_targets_own_commit(
    promoted: tuple[SqlCatalog, str, str, str], tmp_path: Path
) -> None:
    cat, at_promotion, target_metadata, location = promoted
    source = cat.load_table("sales.orders")
    source.append(_rows(source, [3]))
    writers = _target_writer(tmp_path, target_metadata)
    writers.append(_rows(writers, [100]))  # the target's writers, since promotion
    theirs = writers.current_snapshot()
    assert theirs is not None
    current = _meta(source.metadata_location)
    commits = commits_after(_meta(at_promotion), current, "", set())
    src, dst = (
        StaticTable.from_metadata(source.metadata_location),
        StaticTable.from_metadata(writers.metadata_location),
    )
    assert refusals(commits, src.metadata, dst.metadata) == []

    plan = plan_carry(
        src, dst, commits, PrefixMap([(current["location"], location)]), seed="run-1/sales.orders"
    )
    again = plan_carry(
        src, dst, commits, PrefixMap([(current["location"], location)]), seed="run-1/sales.orders"
    )
    done = write_carry(plan, dst, IO, IO, set(plan.written()))

    assert again.written() == plan.written()  # a retried step writes the same keys
    assert all(k.startswith(location + "/") for k in plan.written())
    assert (done.files_copied, plan.rows) == (1, 1)
    assert _ids(plan.metadata) == [1, 2, 3, 100]
    carried = StaticTable.from_metadata(plan.metadata).metadata
    snapshot = carried.current_snapshot()
    assert snapshot is not None and snapshot.parent_snapshot_id == theirs.snapshot_id
    assert snapshot.summary is not None and snapshot.summary[CARRIED_FROM] == str(commits[0].snapshot_id)
    assert carried_ids(_meta(plan.metadata)) == {commits[0].snapshot_id}
    assert carried.next_sequence_number() == writers.metadata.next_sequence_number() + 1
    # the target's writers go on from the carried snapshot
    (tmp_path / "next").mkdir()
    writers = _target_writer(tmp_path / "next", plan.metadata)
    writers.append(_rows(writers, [101]))
    assert _ids(writers.metadata_location) == [1, 2, 3, 100, 101]
    # a key outside the journal is never written
    with pytest.raises(CarryRefusedError, match="not in the run's journal"):
        write_carry(plan, dst, IO, IO, set(plan.written()[1:]))


@pytest.mark.parametrize(
    ("late", "why"),
    [
        ("delete", "its operation is delete, not an append"),
        ("overwrite", "its operation is overwrite, not an append"),
        ("branch", "not on the source's main branch"),
        ("schema", "is not one the target has"),
    ],
)
def test_a_carry_over_refuses_what_is_not_a_plain_append(
    promoted: tuple[SqlCatalog, str, str, str], late: str, why: str
) -> None:
    cat, at_promotion, target_metadata, _location = promoted
    table = cat.load_table("sales.orders")
    if late == "delete":
        table.delete("id in (1, 2)")  # whole files: a delete
    elif late == "overwrite":
        table.append(_rows(table, [7, 8]))
        table.delete("id = 7")  # part of a file: copy-on-write rewrites it
    elif late == "branch":
        table.append(_rows(table, [5]), branch="audit")
    else:
        with table.update_schema() as update:
            update.add_column("note", StringType())
        table = cat.load_table("sales.orders")
        table.append(pa.table({"id": [6], "v": ["v6"], "note": ["n"]}, schema=table.schema().as_arrow()))
    current = _meta(table.refresh().metadata_location)
    commits = commits_after(_meta(at_promotion), current, "", set())
    src, dst = StaticTable.from_metadata(table.metadata_location), StaticTable.from_metadata(target_metadata)

    refused = refusals(commits, src.metadata, dst.metadata)

    assert refused and any(why in r for r in refused), refused
    assert any(str(c.snapshot_id) in r for c in commits for r in refused)
