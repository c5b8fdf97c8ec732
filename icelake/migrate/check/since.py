"""Validation in proportion to a sync (issue 42). An incremental sync wrote only the new snapshots'
files; the older snapshots were validated when they were synced. So it validates:

- the new snapshots, at the request's tier (`validate.validate_tables(only=...)`);
- that the older ones are untouched: every snapshot of the last sync that the target still has
  keeps its manifest list (the one validated then), lineage and summary, and the target's
  snapshot log up to the last synced snapshot is the one validated then (`untouched_problems`);
- the target's new files: the new manifest lists and manifests exist with their recorded
  lengths, and every file their entries ADDED exists with its recorded size, outside the source
  (`checked_new_files`), asked about around their own keys (`inventory_near.stat_near`): a
  listing of the table would cost what the table holds.

`options.validation_scope: "all"` validates every snapshot and file as a full sync does."""

from __future__ import annotations

import time
from collections.abc import Iterable

from icelake.aws.fileio import FileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import ADDED, manifest_refs
from icelake.migrate.inventory_near import stat_near
from icelake.migrate.models import FilesCheck
from icelake.migrate.plan_scan import entry_fields, fetched_ahead
from icelake.uris import canonical, is_under


def new_snapshots(target_meta: mj.Metadata, base_meta: mj.Metadata) -> set[int]:
    """The target's snapshots that the last sync's version did not have."""
    synced = {s["snapshot-id"] for s in base_meta.get("snapshots", [])}
    return {s["snapshot-id"] for s in target_meta.get("snapshots", [])} - synced


def removed_since(target_meta: mj.Metadata, base_meta: mj.Metadata, base_uri: str) -> bool:
    """Whether the source expired a snapshot or dropped a logged version since the last sync:
    only then can a file icelake wrote have become unreachable, and a prune have work."""
    now = {s["snapshot-id"] for s in target_meta.get("snapshots", [])}
    if any(s["snapshot-id"] not in now for s in base_meta.get("snapshots", [])):
        return True
    logged = {canonical(p) for p in mj.metadata_log(target_meta)}
    return any(canonical(p) not in logged for p in [*mj.metadata_log(base_meta), base_uri])


_LINEAGE = ("manifest-list", "parent-snapshot-id", "sequence-number", "timestamp-ms", "summary")


def untouched_problems(target_meta: mj.Metadata, base_meta: mj.Metadata) -> list[str]:
    """How the target's older snapshots differ from what the last sync validated."""
    now = {s["snapshot-id"]: s for s in target_meta.get("snapshots", [])}
    problems = []
    for before in base_meta.get("snapshots", []):
        after = now.get(before["snapshot-id"])
        if after is None:
            continue  # expired since, at the source too (the snapshot counts are compared whole)
        changed = [k for k in _LINEAGE if after.get(k) != before.get(k)]
        parent = "parent-snapshot-id"
        if changed == [parent] and after.get(parent) is None and before.get(parent) not in now:
            changed = []  # an expiry that removed the parent may unlink it (pyiceberg does)
        if changed:
            sid = before["snapshot-id"]
            problems.append(f"snapshot {sid} changed since the last sync: {', '.join(changed)}")
    base_log = base_meta.get("snapshot-log", [])
    if base_log:
        last = base_log[-1]["timestamp-ms"]
        kept = [e for e in target_meta.get("snapshot-log", []) if e["timestamp-ms"] <= last]
        if kept != base_log[len(base_log) - len(kept) :]:
            problems.append("the snapshot log up to the last sync differs from the one validated then")
    return problems


def checked_new_files(
    io: FileIO,
    target_metadata: str,
    base_meta: mj.Metadata,
    source_prefixes: Iterable[str],
    workers: int = 16,
) -> FilesCheck:
    """The target's files that the new snapshots added, each present with its recorded size and
    outside every source prefix."""
    started = time.monotonic()
    meta, _gz = mj.parse_metadata(target_metadata, io.read(target_metadata))
    added = new_snapshots(meta, base_meta)
    lists = [s["manifest-list"] for s in meta.get("snapshots", []) if s["snapshot-id"] in added]
    held = _held_manifests(io, base_meta)
    wanted: dict[str, tuple[int | None, str]] = {}
    for path, size in mj.statistics_files(meta):
        wanted[path] = (size, "statistics file")
    manifests: dict[str, int] = {}
    for uri, data in fetched_ahead(lists, io.read):
        wanted[uri] = (len(data), "manifest list")
        for ref in manifest_refs(uri, data):
            if canonical(ref.path) not in held:
                manifests.setdefault(ref.path, ref.length)
    for uri, data in fetched_ahead(list(manifests), io.read):
        if len(data) != manifests[uri]:
            wanted[uri] = (manifests[uri], "manifest")  # the stat below says what it holds
        for status, _content, path, size, _ref, _fmt in entry_fields(uri, data):
            if status == ADDED:
                wanted[path] = (size, "data file")
    problems = _problems(io, wanted, [canonical(p) for p in source_prefixes], workers)
    seconds = round(time.monotonic() - started, 3)
    return FilesCheck(files=len(wanted) + len(manifests), problems=problems, seconds=seconds)


def _held_manifests(io: FileIO, base_meta: mj.Metadata) -> set[str]:
    """The manifests the target's current list of the last sync names (validated then)."""
    current = base_meta.get("current-snapshot-id")
    snapshot = next((s for s in base_meta.get("snapshots", []) if s["snapshot-id"] == current), None)
    if snapshot is None or "manifest-list" not in snapshot:
        return set()
    uri = snapshot["manifest-list"]
    return {canonical(ref.path) for ref in manifest_refs(uri, io.read(uri))}


def _problems(
    io: FileIO, wanted: dict[str, tuple[int | None, str]], sources: list[str], workers: int
) -> list[str]:
    infos = stat_near(io, wanted, [], workers)
    problems = []
    for path, info in infos.items():
        recorded, what = wanted[path]
        if any(is_under(canonical(path), s) for s in sources):
            problems.append(f"{what} {path} is under a source prefix")
        elif info is None:
            problems.append(f"{what} {path} is missing at the target")
        elif recorded is not None and recorded >= 0 and info.size != recorded:
            problems.append(f"{what} {path}: metadata says {recorded} bytes, the file has {info.size}")
    return problems
