"""Every corpus table migrated file-to-file reads exactly like its source in Spark and pyiceberg."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icelake.aws.fileio import LocalFileIO
from icelake.migrate import migrate_table
from icelake.migrate.settings import EngineSettings
from icelake.uris import local_path
from tests.spark.corpus import ALL_CASES, SourceTable
from tests.verify import assert_no_source_paths, assert_same_table, assert_sizes_match

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.parametrize("case", ALL_CASES)
def test_migrated_table_reads_like_source_in_every_snapshot(
    case: str, source_tables: dict[str, SourceTable], spark: Any, tmp_path: Path
) -> None:
    # Given a source table written by Iceberg Java or pyiceberg
    table = source_tables[case]
    io = LocalFileIO()
    before = {u: io.read(u) for u, _ in io.list(table.location)}
    target = tmp_path / "target" / table.name

    # When it is migrated to a new local location
    result = migrate_table(
        table.metadata,
        str(target),
        table.maps_under(tmp_path / "target"),
        src_io=io,
        dst_io=io,
        settings=EngineSettings(workers=4),
    )

    # Then both engines read every snapshot of the target exactly like the source
    checked = assert_same_table(table.metadata, result.target_metadata_location, spark=spark)
    assert checked == result.snapshots
    # and no target metadata or delete file names a source location
    markers = [local_path(table.location), *(local_path(p) for p in table.extra_prefixes)]
    assert_no_source_paths(io, [str(tmp_path / "target")], markers)
    # and every size recorded in the target metadata is the real size of the file
    assert assert_sizes_match(io, result.target_metadata_location) > 0
    # and the source was not touched
    assert {u: io.read(u) for u, _ in io.list(table.location)} == before
    assert result.files_copied > 0 and result.files_rewritten > 0


@pytest.mark.parametrize("case", ["v2_merge_on_read", "v3_deletion_vectors"])
def test_second_run_writes_nothing(case: str, source_tables: dict[str, SourceTable], tmp_path: Path) -> None:
    # Given a table already migrated
    table = source_tables[case]
    io = LocalFileIO()
    first = migrate_table(table.metadata, str(tmp_path / "t"), src_io=io, dst_io=io)
    snapshot = {u: io.read(u) for u, _ in io.list(str(tmp_path / "t"))}

    # When the same migration runs again
    second = migrate_table(table.metadata, str(tmp_path / "t"), src_io=io, dst_io=io)

    # Then nothing is copied or rewritten, and the target is byte-for-byte unchanged
    assert (second.files_copied, second.files_rewritten) == (0, 0)
    assert second.files_skipped == first.files_copied + first.files_rewritten
    assert {u: io.read(u) for u, _ in io.list(str(tmp_path / "t"))} == snapshot
