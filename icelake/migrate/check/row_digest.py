"""The `rows` tier at any size: every snapshot's rows as a count and an order-independent digest.

A snapshot's rows are the union of its scan tasks' rows (a data file, minus what the delete files
that apply to it delete), so its digest is the sum of its tasks' digests. Each distinct task is
read once, however many snapshots share it, and a runner spreads the tasks (Spark executors in
the Glue job): memory is bounded by one data file, not by the snapshot or the table. pyiceberg
plans the tasks on both sides (it did not write the target), and pyarrow reads the files.

A row's hash is BLAKE2b (128 bits) of its values' `repr`; the digest is the sum of the hashes
modulo 2**128, so equal multisets of rows give equal digests whatever the order, and a difference
goes unnoticed with probability about 2**-128.
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial

import pyarrow.parquet as pq
from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.table import StaticTable

from icelake.aws.fileio import FileIO, FileIOSpec
from icelake.errors import UnreadableTaskError
from icelake.migrate.copy.engine import Runner
from icelake.migrate.models import RowsValidation

_MODULUS = 1 << 128


@dataclass(frozen=True)
class Digest:
    rows: int = 0
    value: int = 0

    def __add__(self, other: Digest) -> Digest:
        return Digest(self.rows + other.rows, (self.value + other.value) % _MODULUS)


@dataclass(frozen=True)
class ScanUnit:
    """One scan task as plain data (it pickles to an executor): a Parquet data file and the
    position-delete files that apply to it."""

    data_file: str
    position_deletes: tuple[str, ...] = ()


def row_hash(row: Iterable[object]) -> int:
    return int.from_bytes(hashlib.blake2b(repr(tuple(row)).encode(), digest_size=16).digest(), "big")


def digest_rows(rows: Iterable[Iterable[object]]) -> Digest:
    total = count = 0
    for row in rows:
        total += row_hash(row)
        count += 1
    return Digest(count, total % _MODULUS)


def deleted_positions(fileio: FileIO, unit: ScanUnit) -> set[int]:
    """Row positions of `unit.data_file` that its position-delete files delete."""
    positions: set[int] = set()
    for path in unit.position_deletes:
        deletes = pq.read_table(io.BytesIO(fileio.read(path)), columns=["file_path", "pos"])
        for file_path, pos in zip(
            deletes.column("file_path").to_pylist(), deletes.column("pos").to_pylist(), strict=True
        ):
            if file_path == unit.data_file:
                positions.add(pos)
    return positions


def digest_unit(fileio: FileIO, unit: ScanUnit) -> Digest:
    """The task's live rows, read one record batch at a time."""
    return digest_rows(_live_rows(fileio, unit))


def _live_rows(fileio: FileIO, unit: ScanUnit) -> Iterator[Iterable[object]]:
    deleted = deleted_positions(fileio, unit)
    position = 0
    for batch in pq.ParquetFile(io.BytesIO(fileio.read(unit.data_file))).iter_batches():
        for row in batch.to_pylist():
            if position not in deleted:
                yield row.values()
            position += 1


def _digest_on_executor(spec: FileIOSpec, unit: ScanUnit) -> Digest:
    return digest_unit(spec.open(), unit)


def snapshot_units(table: StaticTable, snapshot_id: int) -> list[ScanUnit]:
    units = []
    for task in table.scan(snapshot_id=snapshot_id).plan_files():
        if task.file.file_format != FileFormat.PARQUET:
            raise UnreadableTaskError(f"{task.file.file_path} is {task.file.file_format}, not Parquet")
        positional = []
        for delete in task.delete_files:
            if delete.content != DataFileContent.POSITION_DELETES or delete.file_format != FileFormat.PARQUET:
                raise UnreadableTaskError(f"{delete.file_path} is not a Parquet position-delete file")
            positional.append(delete.file_path)
        units.append(ScanUnit(task.file.file_path, tuple(sorted(positional))))
    return units


def snapshot_digests(
    metadata: str, props: dict[str, str], spec: FileIOSpec, runner: Runner, phase: str
) -> tuple[dict[int, Digest], int]:
    """Each snapshot's digest, and how many distinct tasks were read."""
    table = StaticTable.from_metadata(metadata, properties=props)
    per_snapshot = {s.snapshot_id: snapshot_units(table, s.snapshot_id) for s in table.metadata.snapshots}
    distinct = list(dict.fromkeys(u for units in per_snapshot.values() for u in units))
    read = runner.map(phase, partial(_digest_on_executor, spec), distinct)
    digests = dict(zip(distinct, read, strict=True))
    totals = {sid: sum((digests[u] for u in units), Digest()) for sid, units in per_snapshot.items()}
    return totals, len(distinct)


def compare_rows(
    source_metadata: str,
    target_metadata: str,
    *,
    source: tuple[dict[str, str], FileIOSpec],
    target: tuple[dict[str, str], FileIOSpec],
    runner: Runner,
) -> RowsValidation:
    """Every snapshot of the target holds the same rows as the source's (count and digest).
    `source`/`target`: pyiceberg properties for the planning process and the FileIOSpec the
    runner's workers read with. A task this tier cannot read is named in `skipped`."""
    started = time.monotonic()
    try:
        src, src_read = snapshot_digests(source_metadata, *source, runner, "validate rows: source")
        dst, dst_read = snapshot_digests(target_metadata, *target, runner, "validate rows: target")
    except UnreadableTaskError as exc:
        return RowsValidation(skipped=str(exc), seconds=_since(started))
    problems = [
        _difference(sid, digest, dst.get(sid)) for sid, digest in src.items() if dst.get(sid) != digest
    ]
    return RowsValidation(
        snapshots_compared=len(src),
        files_read=src_read + dst_read,
        rows=sum(d.rows for d in src.values()),
        problems=problems,
        seconds=_since(started),
    )


def _difference(snapshot_id: int, source: Digest, target: Digest | None) -> str:
    if target is None:
        return f"snapshot {snapshot_id}: missing at the target"
    if source.rows != target.rows:
        return f"snapshot {snapshot_id}: {source.rows} rows at the source, {target.rows} at the target"
    return f"snapshot {snapshot_id}: same row count ({source.rows}) but different rows"


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)
