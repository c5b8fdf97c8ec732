"""Check a rewritten (staged) table with pyiceberg, independently of the code that wrote it.

The staged files name their target location; a symlink from the target location to the staging
directory lets pyiceberg follow every path as a reader at the target would.
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from icelake.uris import canonical, is_under, local_path


@dataclass
class Verification:
    tool: str
    snapshots: int = 0
    source_snapshots: int = 0
    current_data_files: int = 0
    source_current_data_files: int = 0
    metadata_json_checked: int = 0
    manifest_lists_checked: int = 0
    manifests_checked: int = 0
    wrong_manifest_lengths: int = 0  # manifest-list entries whose manifest_length is not the file's size
    paths_with_source_prefix: int = 0
    paths_outside_target: int = 0
    file_list_data_files: int = 0
    older_version_snapshots: int = 0  # snapshots seen in a rewritten older metadata.json
    older_version_expected: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def link_target_to_staging(target_location: str, staging_dir: str) -> None:
    link = Path(local_path(target_location))
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink():
        link.unlink()
    link.symlink_to(Path(staging_dir).resolve(), target_is_directory=True)


def verify_rewrite(
    tool: str,
    *,
    source_metadata: str,
    target_location: str,
    target_metadata: str,
    file_list: str,
    older: tuple[str, int] | None = None,
    expect_correct_lengths: bool = True,
) -> Verification:
    """Compare the rewritten table at `target_metadata` with the source, entry by entry."""
    from pyiceberg.table import StaticTable

    v = Verification(tool=tool)
    src = StaticTable.from_metadata(source_metadata)
    dst = StaticTable.from_metadata(target_metadata)
    paths = _PathCheck(v, src.metadata.location, canonical(target_location))
    v.snapshots = len(dst.metadata.snapshots)
    v.source_snapshots = len(src.metadata.snapshots)
    if v.snapshots != v.source_snapshots:
        v.problems.append(f"{v.snapshots} snapshots, the source has {v.source_snapshots}")
    src_snap, dst_snap = src.current_snapshot(), dst.current_snapshot()
    if src_snap is None or dst_snap is None or src_snap.snapshot_id != dst_snap.snapshot_id:
        v.problems.append("current snapshot differs from the source's")
        return v
    _check_metadata_files(v, paths, target_metadata, dst)
    _check_manifest_lists(v, paths, dst)
    src_count = sum(len(mf.fetch_manifest_entry(src.io)) for mf in src_snap.manifests(src.io))
    _check_current_manifests(v, paths, dst, dst_snap, src_count)
    _check_file_list(v, paths, file_list, src_count)
    if older is not None:
        _check_older(v, *older)
    if v.paths_with_source_prefix:
        v.problems.append(f"{v.paths_with_source_prefix} path(s) still contain the source prefix")
    if v.paths_outside_target:
        v.problems.append(f"{v.paths_outside_target} path(s) are outside the target location")
    if v.wrong_manifest_lengths and expect_correct_lengths:
        v.problems.append(f"{v.wrong_manifest_lengths} manifest_length value(s) differ from the file sizes")
    return v


@dataclass
class _PathCheck:
    """Counts, on the verification, paths that still name the source or leave the target."""

    v: Verification
    source_prefix: str
    target: str

    def __call__(self, p: str) -> None:
        if self.source_prefix in p:
            self.v.paths_with_source_prefix += 1
        if not is_under(canonical(p), self.target):
            self.v.paths_outside_target += 1


def _check_metadata_files(v: Verification, paths: _PathCheck, target_metadata: str, dst: Any) -> None:
    """Every metadata.json of the target: no source path left anywhere in the text."""
    metadata_dir = Path(local_path(target_metadata)).parent
    for path in sorted(metadata_dir.glob("*.metadata.json")):
        v.metadata_json_checked += 1
        if paths.source_prefix in path.read_text():
            v.paths_with_source_prefix += 1
    paths(dst.metadata.location)


def _check_manifest_lists(v: Verification, paths: _PathCheck, dst: Any) -> None:
    """Every manifest list: paths mapped, and manifest_length equal to the real file size."""
    for snap in dst.metadata.snapshots:
        paths(snap.manifest_list)
        v.manifest_lists_checked += 1
        for mf in snap.manifests(dst.io):
            paths(mf.manifest_path)
            if mf.manifest_length != Path(local_path(mf.manifest_path)).stat().st_size:
                v.wrong_manifest_lengths += 1


def _check_current_manifests(
    v: Verification, paths: _PathCheck, dst: Any, dst_snap: Any, src_count: int
) -> None:
    """Every manifest of the current snapshot, entry by entry, against the source's count."""
    for mf in dst_snap.manifests(dst.io):
        v.manifests_checked += 1
        for entry in mf.fetch_manifest_entry(dst.io):
            v.current_data_files += 1
            paths(entry.data_file.file_path)
    v.source_current_data_files = src_count
    if v.current_data_files != src_count:
        v.problems.append(f"current snapshot has {v.current_data_files} data files, source {src_count}")


def _check_file_list(v: Verification, paths: _PathCheck, file_list: str, src_count: int) -> None:
    """The file list names every data file once, each with a target under the target location."""
    data_targets = set()
    with Path(file_list).open(newline="") as fh:
        for row in csv.reader(fh):
            if row and row[0].endswith(".parquet"):
                data_targets.add(row[1])
                paths(row[1])
    v.file_list_data_files = len(data_targets)
    if v.file_list_data_files != src_count:
        v.problems.append(f"file list names {v.file_list_data_files} data files, the source has {src_count}")


def _check_older(v: Verification, older_metadata: str, expected: int) -> None:
    from pyiceberg.table import StaticTable

    v.older_version_snapshots = len(StaticTable.from_metadata(older_metadata).metadata.snapshots)
    v.older_version_expected = expected
    if v.older_version_snapshots != expected:
        v.problems.append(f"{older_metadata} has {v.older_version_snapshots} snapshots, expected {expected}")
