"""Verify a migrated or promoted target without writing anything (mode "verify", day 2).

Two checks, both read-only, at the request's validation tier:
- `verify_synced`: a target not yet promoted is the copy of one source version (the ledger's
  last sync): its files are where its metadata says, at the sizes it records, and it reads like
  that source version (`validate_tables`, the same check Validate ran after the copy);
- `verify_alone`: a promoted target is its table's home, and its source may have moved on or
  gone: it is checked alone, for availability: the metadata chain, every file it references at
  its recorded size, and a sample of its data files read (every row of the current snapshot
  counted against its summary under `rows`).
Files are checked first: a missing file would only make the reads fail less clearly.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict
from pyiceberg.table import StaticTable

from icelake.aws.fileio import FileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import manifest_refs
from icelake.migrate.check.validate import SAMPLE_FILES, Tier, checked_target_files, validate_tables
from icelake.uris import canonical


class VerifyReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    problems: list[str]  # each names the missing or changed file, or what reads differently
    files_checked: int
    done: str  # what was checked, for the outcome's `validation`


def verify_synced(
    target_io: FileIO,
    source_io: FileIO,
    synced: tuple[str, str],
    props: tuple[dict[str, str], dict[str, str]],
    tier: Tier,
    source_prefixes: Iterable[str],
) -> VerifyReport:
    """`synced`: (source metadata, target metadata) of the last sync; `props`: pyiceberg
    properties of the source and target sessions."""
    source_metadata, target_metadata = synced
    chain = chain_problems(target_io, target_metadata)
    if chain:
        return VerifyReport(problems=chain, files_checked=0, done="metadata chain")
    files = checked_target_files(target_io, target_metadata, source_prefixes)
    if files.problems:
        return VerifyReport(problems=files.problems, files_checked=files.files, done="files")
    if source_io.stat(source_metadata) is None:
        # The source has since deleted the version it was synced from: the target can only be
        # checked alone, and the outcome says so.
        alone = _read_alone(target_metadata, props[1], tier)
        note = f"target alone: the source version synced from, {source_metadata}, is gone"
        return VerifyReport(problems=alone, files_checked=files.files, done=f"{tier}; {note}")
    report = validate_tables(
        source_metadata, target_metadata, source_props=props[0], target_props=props[1], tier=tier
    )
    done = "; ".join([f"{report.tier} against the source version synced from", *report.notes[:3]])
    return VerifyReport(problems=report.problems, files_checked=files.files, done=done)


def verify_alone(
    target_io: FileIO, target_metadata: str, props: dict[str, str], tier: Tier, source_prefixes: Iterable[str]
) -> VerifyReport:
    chain = chain_problems(target_io, target_metadata)
    if chain:
        return VerifyReport(problems=chain, files_checked=0, done="metadata chain")
    files = checked_target_files(target_io, target_metadata, source_prefixes)
    if files.problems:
        return VerifyReport(problems=files.problems, files_checked=files.files, done="files")
    problems = _read_alone(target_metadata, props, tier)
    return VerifyReport(problems=problems, files_checked=files.files, done=f"{tier}; target alone")


def chain_problems(io: FileIO, metadata: str) -> list[str]:
    """The metadata chain down to the manifests, tolerant of what is gone (the file check that
    follows reads every manifest list and manifest, and stops at the first one missing): each
    missing, unreadable or resized link is named."""
    if io.stat(metadata) is None:
        return [f"metadata file {metadata} is missing at the target"]
    meta, _gz = mj.parse_metadata(metadata, io.read(metadata))
    listed = {canonical(uri): info.size for uri, info in io.list(meta["location"])}

    def size(path: str) -> int | None:
        info = None if canonical(path) in listed else io.stat(path)
        return listed.get(canonical(path), info.size if info else None)

    problems: list[str] = []
    manifests: dict[str, int | None] = dict.fromkeys(mj.inline_manifests(meta))
    for path in dict.fromkeys(mj.manifest_lists(meta)):
        if size(path) is None:
            problems.append(f"manifest list {path} is missing at the target")
            continue
        try:
            manifests.update((ref.path, ref.length) for ref in manifest_refs(path, io.read(path)))
        except Exception as exc:  # overwritten with something else: damaged, whatever the complaint
            problems.append(f"manifest list {path} cannot be read: {' '.join(str(exc).split())[:200]}")
    for path, length in manifests.items():
        found = size(path)
        if found is None:
            problems.append(f"manifest {path} is missing at the target")
        elif length is not None and found != length:
            problems.append(f"manifest {path}: its manifest list says {length} bytes, the file has {found}")
    return problems


def _read_alone(target_metadata: str, props: dict[str, str], tier: Tier) -> list[str]:
    """A sample of the current snapshot's data files read whole (every row under `rows`, counted
    against the snapshot's summary)."""
    table = StaticTable.from_metadata(target_metadata, properties=props)
    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    scan = table.scan(snapshot_id=snapshot.snapshot_id)
    paths = sorted(task.file.file_path for task in scan.plan_files())
    problems = []
    for path in random.Random(snapshot.snapshot_id).sample(paths, min(SAMPLE_FILES, len(paths))):
        try:
            with table.io.new_input(path).open() as f:
                pq.read_table(f)
        except Exception as exc:  # unreadable is damaged, whatever the reader's complaint
            problems.append(f"data file {path} cannot be read: {' '.join(str(exc).split())[:300]}")
    recorded = (snapshot.summary.additional_properties if snapshot.summary else {}).get("total-records")
    if tier == "rows" and not problems and recorded is not None:
        rows = scan.to_arrow().num_rows
        if rows != int(recorded):
            problems.append(
                f"snapshot {snapshot.snapshot_id}: {rows} rows read, its summary records {recorded}"
            )
    return problems
