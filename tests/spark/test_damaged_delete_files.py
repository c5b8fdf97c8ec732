"""Damaged delete files written by Iceberg's Java writer are refused with the file named.

The plan reads every position-delete file's and deletion vector's footer (one ranged read each)
before anything is written, so a damaged footer costs nothing on the target. A damaged page is
found when the delete file is rewritten, which happens before the bulk copy of data files; no
metadata is written either way, so the target table never becomes visible.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from icelake.aws.fileio import LocalFileIO
from icelake.errors import DamagedSourceFileError
from icelake.migrate import migrate_table
from icelake.migrate.settings import EngineSettings
from tests.spark.corpus import SourceTable

pytestmark = pytest.mark.spark
IO = LocalFileIO()


def _delete_file(table: SourceTable, pattern: str) -> Path:
    found = sorted(Path(table.location.removeprefix("file:")).rglob(pattern))
    assert found, f"{table.name} has no {pattern}"
    return found[0]


@contextlib.contextmanager
def _damaged(path: Path, offset: int, garbage: bytes) -> Iterator[None]:
    """Overwrite bytes in place (same size, so only parsing can tell), restored afterwards: the
    corpus is shared by the whole test session."""
    original = path.read_bytes()
    at = offset if offset >= 0 else len(original) + offset
    path.write_bytes(original[:at] + garbage + original[at + len(garbage) :])
    try:
        yield
    finally:
        path.write_bytes(original)


def _written(target: Path) -> list[Path]:
    return sorted(p for p in target.rglob("*") if p.is_file()) if target.exists() else []


@pytest.mark.parametrize(
    ("case", "pattern", "offset", "garbage", "what"),
    [
        ("v2_merge_on_read", "*-deletes.parquet", -4, b"XXXX", "no PAR1 magic at its end"),
        ("v2_merge_on_read", "*-deletes.parquet", -8, b"\xff\xff\xff\x0f", "its footer claims"),
        ("v3_deletion_vectors", "*.puffin", -12, b"\xff\xff\xff\x0f", "its footer claims"),
        ("v3_deletion_vectors", "*.puffin", -4, b"XXXX", "no PFA1 magic at its end"),
    ],
)
def test_a_damaged_footer_is_refused_before_anything_is_written(
    source_tables: dict[str, SourceTable],
    tmp_path: Path,
    case: str,
    pattern: str,
    offset: int,
    garbage: bytes,
    what: str,
) -> None:
    table = source_tables[case]
    victim = _delete_file(table, pattern)
    target = tmp_path / "dst"
    with _damaged(victim, offset, garbage), pytest.raises(DamagedSourceFileError) as info:
        migrate_table(table.metadata, str(target), src_io=IO, dst_io=IO)
    message = str(info.value)
    assert victim.name in message and what in message and "nothing was written" in message
    assert _written(target) == []


def test_a_damaged_page_stops_the_run_before_the_bulk_copy(
    source_tables: dict[str, SourceTable], tmp_path: Path
) -> None:
    table = source_tables["v2_merge_on_read"]
    victim = _delete_file(table, "*-deletes.parquet")
    target = tmp_path / "dst"
    # The first page header starts right after the leading magic; its footer stays intact.
    with _damaged(victim, 4, b"\xff" * 48), pytest.raises(DamagedSourceFileError) as info:
        migrate_table(
            table.metadata,
            str(target),
            src_io=IO,
            dst_io=IO,
            settings=EngineSettings(workers=1),
        )
    message = str(info.value)
    assert victim.name in message and "the target table is not visible" in message
    written = _written(target)
    assert not [p for p in written if p.name.endswith(".metadata.json")]
    # Delete files are rewritten first: no data file was copied before the damage was found.
    assert all(p.name.endswith("-deletes.parquet") for p in written), written
    # And the undamaged table migrates into the same target afterwards (a resume).
    result = migrate_table(table.metadata, str(target), src_io=IO, dst_io=IO)
    assert result.files_copied > 0
