"""Carry stranded appends onto a promoted target: the source snapshots' added data files copied,
then one new snapshot on the target's current state (whatever its writers committed since
promotion stays), its summary naming the source snapshots (`icelake.carried-from`).

Only appends are carried: a snapshot whose operation is `append`, that deletes nothing, on the
source's main branch, whose schema and partition specs the target still has as they were. Every
key a carry writes is named before anything is written (`CarryPlan.keys`, which Plan journals):
the new objects' names follow from the run and the table, so a retried step writes the same keys.
The source is only read.
"""

from __future__ import annotations

import io
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyiceberg.io import InputFile, OutputFile, OutputStream
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.table import StaticTable
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import (
    Operation,
    Snapshot,
    SnapshotSummaryCollector,
    Summary,
    update_snapshot_summaries,
)
from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate, update_table_metadata

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.errors import CarryRefusedError, TargetConflictError
from icelake.migrate.copy.objects import CopySettings, copy_file, is_same_copy
from icelake.migrate.cutover.stranded import CARRIED_FROM, StrandedCommit
from icelake.uris import PrefixMap, parent

_VERSION = re.compile(r"^v?(\d+)[-.]")
_DELETES = ("removed_files", "removed_records", "added_delete_files", "removed_delete_files")


def refusals(commits: Iterable[StrandedCommit], source: TableMetadata, target: TableMetadata) -> list[str]:
    """Why each commit that a carry-over cannot bring is refused (empty: all can be carried)."""
    reasons = []
    for commit in commits:
        why = _why_not(commit, source, target)
        if why:
            reasons.append(f"{commit.line()}: {why}")
    if target.format_version not in (1, 2):
        reasons.append(
            f"the target is an Iceberg v{target.format_version} table; carry-over writes v1 and v2"
        )
    return reasons


def _why_not(commit: StrandedCommit, source: TableMetadata, target: TableMetadata) -> str | None:
    if commit.operation != "append":
        return f"its operation is {commit.operation}, not an append"
    if any(getattr(commit, field) for field in _DELETES):
        return "it deletes rows or files"
    if not commit.on_main:
        return "it is not on the source's main branch"
    if commit.schema_id is not None:
        theirs = next((s for s in target.schemas if s.schema_id == commit.schema_id), None)
        ours = next((s for s in source.schemas if s.schema_id == commit.schema_id), None)
        if theirs is None or ours is None or theirs != ours:
            return f"its schema (id {commit.schema_id}) is not one the target has"
    return None


@dataclass(frozen=True)
class CarryPlan:
    """What one carry-over writes to a target table, named before anything is written."""

    commits: tuple[StrandedCommit, ...]
    files: tuple[DataFile, ...]  # the source snapshots' added data files, as the source lists them
    targets: tuple[str, ...]  # where each goes on the target (the table's prefix map)
    snapshot_id: int
    manifests: tuple[tuple[int, str], ...]  # (partition spec id, the new manifest's URI)
    manifest_list: str
    metadata: str  # the new metadata.json: the target's pointer once registered
    previous: str  # the target's metadata.json it commits on

    def written(self) -> list[str]:
        """Every target key this carry-over writes (its journal)."""
        return [*self.targets, *(uri for _spec, uri in self.manifests), self.manifest_list, self.metadata]

    @property
    def rows(self) -> int:
        return sum(f.record_count for f in self.files)


def carry_names(seed: str, previous: str) -> tuple[uuid.UUID, int, str, str]:
    """(commit uuid, snapshot id, manifest list URI, metadata.json URI) of a carry-over: the same for
    the same `seed` (run and table) and target version, so a retried step writes the same keys."""
    commit = uuid.uuid5(uuid.NAMESPACE_URL, f"icelake-carry-over/{seed}/{previous}")
    snapshot_id = commit.int & ((1 << 63) - 1)  # positive, as Iceberg's are
    directory = parent(previous)
    match = _VERSION.match(previous.rsplit("/", 1)[-1])
    version = int(match.group(1)) + 1 if match else 1
    return (
        commit,
        snapshot_id,
        f"{directory}/snap-{snapshot_id}-1-{commit}.avro",
        f"{directory}/{version:05d}-{commit}.metadata.json",
    )


def plan_carry(
    source: StaticTable, target: StaticTable, commits: list[StrandedCommit], prefix_map: PrefixMap, seed: str
) -> CarryPlan:
    """The carry-over of `commits` (checked by `refusals`) from `source` onto `target` as it is now;
    refuses, naming the commit, a data file of a partition spec the target does not have."""
    files: list[DataFile] = []
    for commit in commits:
        files += _added_files(source, commit)
    specs, target_specs = source.metadata.specs(), target.metadata.specs()
    for data_file in files:
        if target_specs.get(data_file.spec_id) != specs.get(data_file.spec_id):
            raise CarryRefusedError(
                f"a data file of a carried commit has partition spec {data_file.spec_id}, which the target "
                f"does not have as it was: {data_file.file_path}"
            )
    commit_uuid, snapshot_id, manifest_list, metadata = carry_names(seed, target.metadata_location)
    if target.metadata.snapshot_by_id(snapshot_id) is not None:
        raise CarryRefusedError(f"snapshot id {snapshot_id} exists on the target already")
    spec_ids = sorted({f.spec_id for f in files})
    directory = parent(target.metadata_location)
    return CarryPlan(
        commits=tuple(commits),
        files=tuple(files),
        targets=tuple(prefix_map.require(f.file_path) for f in files),
        snapshot_id=snapshot_id,
        manifests=tuple((spec, f"{directory}/{commit_uuid}-m{spec}.avro") for spec in spec_ids),
        manifest_list=manifest_list,
        metadata=metadata,
        previous=target.metadata_location,
    )


def _added_files(source: StaticTable, commit: StrandedCommit) -> list[DataFile]:
    """The data files `commit` added (its own manifests' ADDED entries)."""
    snapshot = source.metadata.snapshot_by_id(commit.snapshot_id)
    if snapshot is None:
        raise CarryRefusedError(f"source snapshot {commit.snapshot_id} is gone (expired?)")
    added = []
    for manifest in snapshot.manifests(source.io):
        if manifest.added_snapshot_id != commit.snapshot_id:
            continue
        if manifest.content != ManifestContent.DATA:
            raise CarryRefusedError(f"{commit.line()}: it adds delete files")
        for entry in manifest.fetch_manifest_entry(source.io, discard_deleted=True):
            if entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id == commit.snapshot_id:
                if entry.data_file.content != DataFileContent.DATA:
                    raise CarryRefusedError(f"{commit.line()}: it adds delete files")
                added.append(entry.data_file)
    return added


@dataclass(frozen=True)
class Carried:
    """What a carry-over wrote."""

    files_copied: int
    files_verified: int
    bytes_copied: int
    files_skipped: int  # already at the target, identical (a retried step)


def write_carry(
    plan: CarryPlan, target: StaticTable, src_io: FileIO, dst_io: FileIO, journaled: set[str]
) -> Carried:
    """Copy the files, then write the manifests, the manifest list and the metadata.json. Every key
    must be in `journaled`; an existing key that is not identical to its source is refused."""
    unjournaled = [k for k in plan.written() if k not in journaled]
    if unjournaled:
        raise CarryRefusedError(f"keys not in the run's journal, not written: {unjournaled[:5]}")
    copied = verified = size = skipped = 0
    conflicts = []
    for data_file, dst in zip(plan.files, plan.targets, strict=True):
        src_info = src_io.stat(data_file.file_path) or ObjectInfo(data_file.file_size_in_bytes)
        present = dst_io.stat(dst)
        if present is not None:
            if is_same_copy(src_io, data_file.file_path, src_info, dst_io, dst, present):
                skipped += 1
            else:
                conflicts.append(dst)
            continue
        verified += copy_file(src_io, data_file.file_path, src_info, dst_io, dst, CopySettings())
        copied, size = copied + 1, size + src_info.size
    if conflicts:
        raise TargetConflictError(conflicts)
    _commit_files(plan, target, dst_io)
    return Carried(copied, verified, size, skipped)


def _commit_files(plan: CarryPlan, target: StaticTable, dst_io: FileIO) -> None:
    meta = target.metadata
    compression: Any = meta.properties.get("write.avro.compression-codec", "gzip")
    moved = [_moved(f, dst) for f, dst in zip(plan.files, plan.targets, strict=True)]
    new_manifests: list[ManifestFile] = []
    for spec_id, uri in plan.manifests:
        with write_manifest(
            format_version=meta.format_version,
            spec=meta.specs()[spec_id],
            schema=meta.schema(),
            output_file=_Output(uri, dst_io),
            snapshot_id=plan.snapshot_id,
            avro_compression=compression,
        ) as writer:
            for data_file in (f for f in moved if f.spec_id == spec_id):
                writer.add(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED,
                        snapshot_id=plan.snapshot_id,
                        sequence_number=None,
                        file_sequence_number=None,
                        data_file=data_file,
                    )
                )
        new_manifests.append(writer.to_manifest_file())
    parent_snapshot = meta.current_snapshot()
    sequence = meta.next_sequence_number()
    with write_manifest_list(
        format_version=meta.format_version,
        output_file=_Output(plan.manifest_list, dst_io),
        snapshot_id=plan.snapshot_id,
        parent_snapshot_id=parent_snapshot.snapshot_id if parent_snapshot else None,
        sequence_number=sequence,
        avro_compression=compression,
    ) as list_writer:
        existing = parent_snapshot.manifests(target.io) if parent_snapshot else []
        list_writer.add_manifests([*new_manifests, *existing])
    parent_id = parent_snapshot.snapshot_id if parent_snapshot else None
    # by the fields' names in the spec (pydantic aliases, which mypy cannot see as keywords)
    snapshot = Snapshot.model_validate(
        {
            "snapshot-id": plan.snapshot_id,
            "parent-snapshot-id": parent_id,
            "sequence-number": sequence,
            "manifest-list": plan.manifest_list,
            "summary": _summary(plan, meta, moved, parent_snapshot),
            "schema-id": meta.current_schema_id,
        }
    )
    main = SetSnapshotRefUpdate.model_validate(
        {"snapshot-id": plan.snapshot_id, "ref-name": "main", "type": SnapshotRefType.BRANCH}
    )
    updates = (AddSnapshotUpdate(snapshot=snapshot), main)
    new_meta = update_table_metadata(meta, updates, metadata_location=plan.previous)
    dst_io.write(plan.metadata, new_meta.model_dump_json(exclude_none=True).encode())


def _summary(
    plan: CarryPlan, meta: TableMetadata, moved: list[DataFile], parent_snapshot: Snapshot | None
) -> Summary:
    collector = SnapshotSummaryCollector()
    for data_file in moved:
        collector.add_file(data_file, partition_spec=meta.specs()[data_file.spec_id], schema=meta.schema())
    carried = ",".join(str(c.snapshot_id) for c in plan.commits)
    return update_snapshot_summaries(
        Summary(operation=Operation.APPEND, **collector.build(), **{CARRIED_FROM: carried}),
        parent_snapshot.summary if parent_snapshot else None,
    )


def _moved(data_file: DataFile, target: str) -> DataFile:
    """The same data file entry at its target path (every other field kept)."""
    moved = DataFile(*data_file._data)
    moved[1] = target  # file_path
    moved.spec_id = data_file.spec_id
    return moved


class _Buffer(io.BytesIO):
    def __init__(self, output: _Output) -> None:
        super().__init__()
        self._output = output

    def close(self) -> None:
        if not self.closed:
            self._output.written = self.getvalue()
            self._output.fileio.write(self._output.location, self._output.written)
        super().close()


class _Output(OutputFile):
    """pyiceberg's writers writing through icelake's FileIO (its target credentials and KMS key)."""

    def __init__(self, location: str, fileio: FileIO) -> None:
        super().__init__(location)
        self.fileio = fileio
        self.written = b""

    def __len__(self) -> int:
        return len(self.written)

    def exists(self) -> bool:
        return self.fileio.stat(self.location) is not None

    def to_input_file(self) -> InputFile:
        raise NotImplementedError("a carry-over never reads back what it writes here")

    def create(self, overwrite: bool = False) -> OutputStream:
        return _Buffer(self)
