"""Verify a migrated or promoted target without writing anything (mode "verify", day 2).

Two checks, both read-only, at the request's validation tier:
- `verify_synced`: a target not yet promoted is the copy of one source version (the ledger's
  last sync): its files are where its metadata says, at the sizes it records, and it reads like
  that source version (`validate_tables`, the same check Validate ran after the copy);
- `verify_alone`: a promoted target is its table's home, and its source may have moved on or
  gone: it is checked alone, for availability: the metadata chain, every file it references at
  its recorded size, and a sample of its data files read (every row of the current snapshot
  counted against its summary under `rows`).
Files are checked first, at every tier, against the copy record (`check/proved.py`: copies by
the table location's listing, the rest by a HEAD each; the largest tables' in the Glue job): a
damaged file is named with what differs, and the reads are left (they would only fail less
clearly). A file a reader then cannot parse is named with its complaint.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow.parquet as pq
from pyiceberg.table import StaticTable

from icelake.aws.fileio import FileIO
from icelake.migrate.check.proved import Damage, ProofCheck, proved_files
from icelake.migrate.check.record import Record
from icelake.migrate.check.validate import SAMPLE_FILES, Tier, validate_tables


@dataclass(frozen=True)
class VerifyReport:
    problems: list[str]  # each names the missing or changed file, or what reads differently
    files_checked: int
    done: str  # what was checked, for the outcome's `validation`
    damaged: list[Damage] = field(default_factory=list)  # the files among the problems


def verify_synced(
    target_io: FileIO,
    source_io: FileIO,
    synced: tuple[str, str],
    props: tuple[dict[str, str], dict[str, str]],
    tier: Tier,
    source_prefixes: Iterable[str],
    record: Record,
    files: ProofCheck | None = None,
) -> VerifyReport:
    """`synced`: (source metadata, target metadata) of the last sync; `props`: pyiceberg
    properties of the source and target sessions; `record`: what the runs wrote; `files`: the
    files check when the Glue job made it (`check/verify_job.py`), else it is made here."""
    source_metadata, target_metadata = synced
    files = files or proved_files(target_io, target_metadata, record, source_prefixes)
    if files.problems:
        return VerifyReport(files.problems, files.files, _files_done(files), files.damaged)
    if source_io.stat(source_metadata) is None:
        # The source has since deleted the version it was synced from: the target can only be
        # checked alone, and the outcome says so.
        problems, alone = _read_alone(target_metadata, props[1], tier)
        note = f"target alone: the source version synced from, {source_metadata}, is gone"
        return VerifyReport(problems, files.files, f"{tier}; {note}", alone)
    try:
        report = validate_tables(
            source_metadata, target_metadata, source_props=props[0], target_props=props[1], tier=tier
        )
    except Exception as exc:  # a reader's complaint: the files it could not parse are named
        unreadable = unreadable_files(target_metadata, props[1], exc)
        return VerifyReport([str(d) for d in unreadable], files.files, f"{tier}; files read", unreadable)
    done = "; ".join([f"{report.tier} against the source version synced from", *report.notes[:3]])
    return VerifyReport(report.problems, files.files, f"{_files_done(files)}; {done}")


def verify_alone(
    target_io: FileIO,
    target_metadata: str,
    props: dict[str, str],
    tier: Tier,
    source_prefixes: Iterable[str],
    record: Record,
    files: ProofCheck | None = None,
) -> VerifyReport:
    files = files or proved_files(target_io, target_metadata, record, source_prefixes)
    if files.problems:
        return VerifyReport(files.problems, files.files, _files_done(files), files.damaged)
    problems, alone = _read_alone(target_metadata, props, tier)
    return VerifyReport(problems, files.files, f"{_files_done(files)}; {tier}; target alone", alone)


def _files_done(files: ProofCheck) -> str:
    how = f"{files.heads} by a HEAD each, the rest by {files.ranges} listings of the table location"
    if files.note:
        how = f"{files.heads} by a HEAD each; {files.note}"
    if not files.unrecorded:
        return f"every file's size and ETag or checksum as recorded ({how})"
    return f"{files.unrecorded} files not on the copy record checked by size only ({how})"


def unreadable_files(target_metadata: str, props: dict[str, str], exc: Exception) -> list[Damage]:
    """The data and delete files of the current snapshot a reader cannot parse, each with its
    complaint; when every one parses, the reader's own complaint is raised again (it is not a
    damaged file, and the outcome says `failed`)."""
    table = StaticTable.from_metadata(target_metadata, properties=props)
    snapshot = table.current_snapshot()
    damaged: list[Damage] = []
    if snapshot is not None:
        files: dict[str, str] = {}
        for task in table.scan(snapshot_id=snapshot.snapshot_id).plan_files():
            files[task.file.file_path] = "data file"
            files.update((d.file_path, "delete file") for d in task.delete_files)
        for path, what in files.items():
            complaint = _complaint(table, path)
            if complaint is not None:
                damaged.append(Damage(path, what, f"cannot be read: {complaint}", (snapshot.snapshot_id,)))
    if not damaged:
        raise exc
    return damaged


def _complaint(table: StaticTable, path: str) -> str | None:
    try:
        with table.io.new_input(path).open() as f:
            pq.read_table(f)
    except Exception as exc:  # unreadable is damaged, whatever the reader's complaint
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return None


def _read_alone(target_metadata: str, props: dict[str, str], tier: Tier) -> tuple[list[str], list[Damage]]:
    """A sample of the current snapshot's data files read whole (every row under `rows`, counted
    against the snapshot's summary)."""
    table = StaticTable.from_metadata(target_metadata, properties=props)
    snapshot = table.current_snapshot()
    if snapshot is None:
        return [], []
    scan = table.scan(snapshot_id=snapshot.snapshot_id)
    paths = sorted(task.file.file_path for task in scan.plan_files())
    damaged = []
    for path in random.Random(snapshot.snapshot_id).sample(paths, min(SAMPLE_FILES, len(paths))):
        complaint = _complaint(table, path)
        if complaint is not None:
            damaged.append(Damage(path, "data file", f"cannot be read: {complaint}", (snapshot.snapshot_id,)))
    recorded = (snapshot.summary.additional_properties if snapshot.summary else {}).get("total-records")
    if tier == "rows" and not damaged and recorded is not None:
        try:
            rows = scan.to_arrow().num_rows
        except Exception as exc:  # a delete file, or a data file not sampled, that does not parse
            unreadable = unreadable_files(target_metadata, props, exc)
            return [str(d) for d in unreadable], unreadable
        if rows != int(recorded):  # not one file's damage: no file to name or repair
            return [f"snapshot {snapshot.snapshot_id}: {rows} rows read, its summary records {recorded}"], []
    return [str(d) for d in damaged], damaged
