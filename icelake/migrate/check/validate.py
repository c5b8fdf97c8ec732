"""Check that a target table reads like its source, snapshot by snapshot, with pyiceberg.

pyiceberg is an engine that did not write the target (icelake wrote it), so a match here is
independent evidence. Three tiers (`Options.validation`), each including the ones before it:
- `metadata` (the default, cheap at any size): table identity, schemas, specs, refs, every
  snapshot's lineage and summary, and every snapshot's live data and delete files and rows as the
  manifest lists count them (one manifest list per snapshot, no manifest or data file read);
- `sample`: also reads `SAMPLE_FILES` data files per snapshot (chosen at random, seeded by the
  snapshot) from both tables and compares their rows;
- `rows`: also compares every snapshot's rows, read whole. Memory grows with the snapshot, so it
  runs only where the snapshot fits in memory (`ROWS_MAX_VALUES`); above, the report says that rows were
  not compared and why, and `sample` is done instead.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict
from pyiceberg.manifest import FileFormat, ManifestContent
from pyiceberg.table import StaticTable
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot

from icelake.aws.fileio import FileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate.check.reachable import referenced_files
from icelake.migrate.check.values import compare_rows as diff_rows
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.migrate.models import FilesCheck
from icelake.uris import canonical, is_under


class SnapshotCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    snapshot_id: int
    sequence_number: int | None
    source_rows: int
    target_rows: int
    rows_equal: bool


Tier = Literal["metadata", "sample", "rows"]
SAMPLE_FILES = 3  # data files per snapshot read by `sample`
# `rows` reads a whole snapshot of both tables as Python values: about 460 bytes of memory per value
# (row x column) for the two sides together, whatever the Parquet size (measured by
# `python -m benchmarks.validation_memory`, benchmarks/RESULTS.md "Validation memory"). 3 million
# values grow a process by about 1.3 GiB, inside a 3 GiB Lambda with room to spare. Larger
# snapshots are sampled instead, and the report says so.
ROWS_MAX_VALUES = 3_000_000


class ValidationReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: bool
    problems: list[str]
    snapshots: list[SnapshotCheck]
    tier: Tier = "metadata"  # what was done, which may be less than asked (see notes)
    notes: list[str] = []


def _rows(table: StaticTable, snapshot_id: int) -> list[tuple[object, ...]]:
    return [tuple(r.values()) for r in table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()]


def _counts(table: StaticTable, snapshot: object) -> tuple[int, int, int, int]:
    """(live data files, their rows, live delete files, their rows) of a snapshot, from its
    manifest list's per-manifest counts."""
    data_files = data_rows = delete_files = delete_rows = 0
    for m in snapshot.manifests(table.io):  # type: ignore[attr-defined]
        files = (m.added_files_count or 0) + (m.existing_files_count or 0)
        rows = (m.added_rows_count or 0) + (m.existing_rows_count or 0)
        if m.content == ManifestContent.DATA:
            data_files, data_rows = data_files + files, data_rows + rows
        else:
            delete_files, delete_rows = delete_files + files, delete_rows + rows
    return data_files, data_rows, delete_files, delete_rows


def _values(table: StaticTable, snapshot: object) -> int | None:
    """Rows x top-level columns of a snapshot (None: its summary does not say)."""
    summary = getattr(snapshot, "summary", None)
    records = summary.get("total-records") if summary is not None else None
    if records is None:
        return None
    schema = table.schemas().get(getattr(snapshot, "schema_id", None))  # type: ignore[arg-type]
    return int(records) * len((schema or table.schema()).fields)


def _sample_problems(src: StaticTable, dst: StaticTable, snapshot_id: int) -> list[str]:
    """Rows of a few Parquet data files of the snapshot, source file against its target copy."""
    source_files = _data_files(src, snapshot_id)
    target_files = _data_files(dst, snapshot_id)
    if len(source_files) != len(target_files):
        return [
            f"snapshot {snapshot_id}: {len(source_files)} data files to read at the source, "
            f"{len(target_files)} at the target"
        ]
    by_name = {f.rsplit("/", 1)[-1]: f for f in target_files}
    problems = []
    chosen = random.Random(snapshot_id).sample(source_files, min(SAMPLE_FILES, len(source_files)))
    for path in chosen:
        copy = by_name.get(path.rsplit("/", 1)[-1])
        if copy is None:
            problems.append(f"snapshot {snapshot_id}: no copy of {path} among the target's data files")
        elif not diff_rows(_file_rows(src, path), _file_rows(dst, copy)).equal:
            problems.append(f"snapshot {snapshot_id}: rows of {copy} differ from those of {path}")
    return problems


def _data_files(table: StaticTable, snapshot_id: int) -> list[str]:
    return sorted(
        task.file.file_path
        for task in table.scan(snapshot_id=snapshot_id).plan_files()
        if task.file.file_format == FileFormat.PARQUET
    )


def _file_rows(table: StaticTable, path: str) -> list[tuple[object, ...]]:
    with table.io.new_input(path).open() as f:
        return [tuple(r.values()) for r in pq.read_table(f).to_pylist()]


def validate_tables(
    source_metadata: str,
    target_metadata: str,
    *,
    source_props: dict[str, str] | None = None,
    target_props: dict[str, str] | None = None,
    tier: Tier = "rows",
    rows_max_values: int = ROWS_MAX_VALUES,
    only: set[int] | None = None,
) -> ValidationReport:
    """`only`: the snapshots to check one by one (an incremental sync's new ones,
    `validate_since`); the table's own fields and its snapshot count are checked whole."""
    src = StaticTable.from_metadata(source_metadata, properties=source_props or {})
    dst = StaticTable.from_metadata(target_metadata, properties=target_props or {})
    problems = _table_problems(src.metadata, dst.metadata)
    target_snaps = {s.snapshot_id: s for s in dst.metadata.snapshots}
    found = _Found()
    for s in src.metadata.snapshots:
        t = target_snaps.get(s.snapshot_id)
        if t is None:
            problems.append(f"snapshot {s.snapshot_id} missing at the target")
        elif only is None or s.snapshot_id in only:
            problems.extend(_snapshot_problems(src, dst, s, t, tier, rows_max_values, found))
    if len(target_snaps) != len(src.metadata.snapshots):
        problems.append(f"target has {len(target_snaps)} snapshots, source {len(src.metadata.snapshots)}")
    checks, notes = found.checks, found.notes
    done: Tier = (
        "rows" if tier == "rows" and checks and not notes else ("sample" if found.sampled else "metadata")
    )
    return ValidationReport(ok=not problems, problems=problems, snapshots=checks, tier=done, notes=notes)


@dataclass
class _Found:
    """What the per-snapshot checks add up to: rows compared, notes on what was not, and whether
    files were sampled."""

    checks: list[SnapshotCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sampled: bool = False


def _snapshot_problems(
    src: StaticTable,
    dst: StaticTable,
    s: Snapshot,
    t: Snapshot,
    tier: Tier,
    rows_max_values: int,
    found: _Found,
) -> list[str]:
    """One snapshot at `tier`: its metadata, then a sample of files or its rows."""
    problems = _snapshot_metadata_problems(src, dst, s, t)
    values = _values(src, s)
    compare_rows = tier == "rows" and values is not None and values <= rows_max_values
    if tier == "rows" and not compare_rows:
        size = "an unknown number of" if values is None else f"{values:,}"
        found.notes.append(
            f"snapshot {s.snapshot_id}: rows not compared ({size} values, above the "
            f"{rows_max_values:,} compared whole in memory); {SAMPLE_FILES} files sampled instead"
        )
    if tier == "sample" or (tier == "rows" and not compare_rows):
        problems.extend(_sample_problems(src, dst, s.snapshot_id))
        found.sampled = True
    if compare_rows:
        check, differ = _compare_rows(src, dst, s)
        found.checks.append(check)
        problems.extend(differ)
    return problems


def _table_problems(sm: TableMetadata, tm: TableMetadata) -> list[str]:
    """Table-level fields, schemas, specs and refs that differ."""
    problems = [
        f"{name}: source {getattr(sm, name)} != target {getattr(tm, name)}"
        for name in (
            "table_uuid",
            "format_version",
            "current_snapshot_id",
            "current_schema_id",
            "default_spec_id",
        )
        if getattr(sm, name) != getattr(tm, name)
    ]
    if [s.model_dump() for s in sm.schemas] != [s.model_dump() for s in tm.schemas]:
        problems.append("schemas differ")
    if [s.model_dump() for s in sm.partition_specs] != [s.model_dump() for s in tm.partition_specs]:
        problems.append("partition specs differ")
    if {k: v.model_dump() for k, v in sm.refs.items()} != {k: v.model_dump() for k, v in tm.refs.items()}:
        problems.append("branches/tags differ")
    return problems


def _snapshot_metadata_problems(src: StaticTable, dst: StaticTable, s: Snapshot, t: Snapshot) -> list[str]:
    """Lineage, summary and the counts the manifests record (the `metadata` tier, per snapshot)."""
    problems = []
    lineage = (s.parent_snapshot_id, s.sequence_number, s.timestamp_ms, s.summary)
    if (t.parent_snapshot_id, t.sequence_number, t.timestamp_ms, t.summary) != lineage:
        problems.append(f"snapshot {s.snapshot_id}: lineage or summary differs")
    source_counts, target_counts = _counts(src, s), _counts(dst, t)
    if source_counts != target_counts:
        problems.append(
            f"snapshot {s.snapshot_id}: (data files, rows, delete files, rows) source "
            f"{source_counts} != target {target_counts}"
        )
    return problems


def _compare_rows(src: StaticTable, dst: StaticTable, s: Snapshot) -> tuple[SnapshotCheck, list[str]]:
    """The snapshot's rows on both sides (the `rows` tier), and the problem if they differ."""
    a, b = _rows(src, s.snapshot_id), _rows(dst, s.snapshot_id)
    diff = diff_rows(a, b)
    check = SnapshotCheck(
        snapshot_id=s.snapshot_id,
        sequence_number=s.sequence_number,
        source_rows=len(a),
        target_rows=len(b),
        rows_equal=diff.equal,
    )
    if diff.equal:
        return check, []
    return check, [
        f"snapshot {s.snapshot_id}: rows differ ({diff.only_in_source} only in the source, "
        f"{diff.only_in_target} only in the target)"
    ]


def check_target_files(io: FileIO, target_metadata: str, source_prefixes: Iterable[str]) -> list[str]:
    """Every path in the target's current metadata is outside the source and exists, and every
    recorded size (manifest_length, file_size_in_bytes, statistics sizes) is the file's real size."""
    return checked_target_files(io, target_metadata, source_prefixes).problems


def checked_target_files(io: FileIO, target_metadata: str, source_prefixes: Iterable[str]) -> FilesCheck:
    """`check_target_files`, with how many paths it checked and how long it took."""
    started = time.monotonic()
    sources = [canonical(p) for p in source_prefixes]
    meta, _gz = mj.parse_metadata(target_metadata, io.read(target_metadata))
    # One listing of the table location is cheaper than a HEAD per file; other prefixes are stat-ed,
    # and so is everything on S3 Tables' storage, which takes no listing.
    location = meta["location"]
    known = {} if is_table_storage(location) else {canonical(u): i.size for u, i in io.list(location)}
    problems = [
        f"table location or property {path} is under a source prefix"
        for path in (meta["location"], *(meta.get("properties", {}).get(k) for k in mj.PATH_PROPERTIES))
        if path and any(is_under(canonical(path), s) for s in sources)
    ]
    checked = 0
    for path, recorded, what in referenced_files(io, meta, every_entry=False):
        checked += 1
        c = canonical(path)
        if any(is_under(c, s) for s in sources):
            problems.append(f"{what} {path} is under a source prefix")
            continue
        info = None if c in known else io.stat(path)
        size = known.get(c, info.size if info else None)
        if size is None:
            problems.append(f"{what} {path} is missing at the target")
        elif recorded is not None and recorded >= 0 and size != recorded:
            problems.append(f"{what} {path}: metadata says {recorded} bytes, the file has {size}")
    return FilesCheck(files=checked, problems=problems, seconds=round(time.monotonic() - started, 3))


def files_check_requests(
    objects_at_location: int, lists: int, manifests: int, elsewhere: int
) -> dict[str, int]:
    """The S3 requests `checked_target_files` sends: the metadata.json read, the table location
    listed (1,000 keys a page), each manifest list and manifest read, and a HEAD for each file
    outside the table location. Estimates use it: keep it in step with `checked_target_files`."""
    return {"get": 1 + lists + manifests, "list": max(1, -(-objects_at_location // 1000)), "head": elsewhere}
