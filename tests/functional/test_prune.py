"""The prune deletes exactly what icelake journaled that the target's metadata no longer reaches,
and asks about those keys only: a table whose source expired a few files is not listed whole.

The target reachability is checked by pyiceberg (tests/spark/test_plan_fast_corpus.py compares
`reachable_files` with pyiceberg's reading); the workflow's prune is in tests/e2e/test_migrate_cutover.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws.fileio import LocalFileIO, ObjectInfo
from icelake.migrate import migrate_table
from icelake.migrate.check.reachable import reachable_files
from icelake.migrate.journal import write_journal
from icelake.migrate.prune import prune_target
from icelake.uris import canonical
from tests.verify import assert_same_table

IO = LocalFileIO()


class CountingIO(LocalFileIO):
    """Local files, counting the requests S3 would be sent: a LIST per listing, a HEAD per stat."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        self.calls["list"] += 1
        return super().list(prefix, start_after)

    def stat(self, uri: str) -> ObjectInfo | None:
        self.calls["stat"] += 1
        return super().stat(uri)


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def _listing(root: Path) -> set[str]:
    return {canonical(uri) for uri, _ in IO.list(str(root))}


@pytest.mark.slow
def test_prune_deletes_the_expired_files_icelake_wrote_and_asks_about_nothing_else(tmp_path: Path) -> None:
    # Given a source table of 30 appends migrated once, its keys journaled as icelake's (30: over the
    # 16 manifests from which the copy rewrites them in worker processes, as 60 were)
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/src")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=_rows([0]).schema)
    for i in range(30):
        table.append(_rows([i]))
    target = tmp_path / "dst" / "t"
    migrate_table(table.metadata_location, str(target), src_io=IO, dst_io=IO)
    artifacts = tmp_path / "artifacts"
    first = sorted(_listing(target))
    write_journal(IO, str(artifacts / "run-1.json.gz"), first)
    # ... and beside it an object of another writer, and a journaled key outside the table's location
    foreign = target / "data" / "someone-elses.parquet"
    foreign.write_bytes(b"not icelake's")
    shared = tmp_path / "dst" / "shared" / "part.parquet"
    shared.parent.mkdir()
    shared.write_bytes(b"under a shared prefix")

    # When the source expires its oldest snapshots (all but 26) and an incremental run syncs it
    table = catalog.load_table("db.t")
    newest = [s.snapshot_id for s in table.snapshots()][-26:]
    table.maintenance.expire_snapshots().by_ids(
        [s.snapshot_id for s in table.snapshots() if s.snapshot_id not in newest]
    ).commit()
    table = catalog.load_table("db.t")
    second = migrate_table(table.metadata_location, str(target), src_io=IO, dst_io=IO)
    new_keys = sorted(_listing(target) - set(first) - {canonical(str(foreign))})
    write_journal(IO, str(artifacts / "run-2.json.gz"), new_keys)
    before = _listing(target)
    dst = CountingIO()
    journals = [str(artifacts / name) for name in ("run-1.json.gz", "run-2.json.gz", "run-1.json.gz")]
    deleted = prune_target(dst, IO, journals, str(target), second.target_metadata_location)

    # Then every journaled key the new metadata does not reach is gone, and nothing else
    reached = reachable_files(IO, second.target_metadata_location)
    expected = sorted(k for k in first if k not in reached)
    assert [canonical(k) for k in deleted] == expected
    assert any("/snap-" in k for k in expected)  # the expired snapshots' manifest lists
    assert _listing(target) == before - set(expected)
    assert foreign.exists() and shared.exists()
    # ... the table still reads as the source does
    assert_same_table(table.metadata_location, second.target_metadata_location)
    # ... and the prune asked about its candidates only: no listing of the location, a HEAD each
    assert dst.calls["list"] == 0, dst.calls
    assert dst.calls["stat"] == len(expected) < len(before) / 10

    # When it runs again, there is nothing left to prune
    assert prune_target(dst, IO, journals, str(target), second.target_metadata_location) == []
