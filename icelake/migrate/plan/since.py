"""Where a sync starts: the source version the target was last synced to (`Since`, told by the
workflow's ledger or found on the target), and whether the target and the source's history still
let a plan start there (`sync_base`). When they do not, the plan is full, and says why.

An incremental plan trusts that the target still holds what earlier syncs wrote. That trust is
checked cheaply here: the target's metadata.json of the last sync and its current manifest list
are read back (both must exist and parse), the table is the same table (its UUID), and the
source's current snapshot descends from the last synced one (no rollback past it)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from icelake.aws.fileio import FileIO, is_absent
from icelake.errors import NoBase
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import manifest_refs
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.migrate.plan.reads import read_metadata
from icelake.uris import PrefixMap, canonical, parent

SyncKind = Literal["full", "incremental"]


@dataclass(frozen=True)
class Since:
    """Where a sync may start. `source_metadata`: the source metadata.json the target was last
    synced to (the workflow's ledger); `from_target`: find it as the target's newest metadata.json,
    named as its source counterpart (`icelake migrate path`, which has no ledger); neither: a full
    plan, for `reason`."""

    source_metadata: str | None = None
    from_target: bool = False
    reason: str = "no earlier sync of this target is known"


FULL = Since()


@dataclass(frozen=True)
class SyncBase:
    """The last synced version, as the target holds it: what an incremental plan starts from."""

    source_metadata: str  # the source metadata.json of the last sync
    target_meta: mj.Metadata  # its rewritten counterpart on the target
    # target manifest path -> length, of the target's current manifest list at the last sync
    target_list: dict[str, int]

    @property
    def snapshot_ids(self) -> set[int]:
        return {s["snapshot-id"] for s in self.target_meta.get("snapshots", [])}


_VERSION = re.compile(r"^(?:v(\d+)|(\d+)-[^/]*)\.(?:gz\.)?metadata\.json(?:\.gz)?$")


def newest_target_version(dst_io: FileIO, target_metadata_dir: str) -> str | None:
    """The name of the target's newest metadata.json (highest version), or None when it has none."""
    best: tuple[int, str] | None = None
    for uri, _info in dst_io.list(target_metadata_dir.rstrip("/") + "/"):
        name = uri.rsplit("/", 1)[-1]
        if "/" in uri[len(target_metadata_dir.rstrip("/")) + 1 :]:
            continue  # not directly in the metadata directory
        if m := _VERSION.match(name):
            version = int(m.group(1) or m.group(2))
            if best is None or version > best[0]:
                best = (version, name)
    return best[1] if best else None


def sync_base(
    since: Since,
    source_metadata: str,
    meta: mj.Metadata,
    prefix_map: PrefixMap,
    dst_io: FileIO,
    src_io: FileIO,
) -> SyncBase:
    """The base an incremental plan starts from, checked; `NoBase` saying why there is none."""
    base = _base_version(since, source_metadata, prefix_map, dst_io)
    target_uri = prefix_map.require(base)
    try:
        target_meta, _gz = read_metadata(dst_io, target_uri)
    except Exception as exc:
        why = f"the target's metadata.json of the last sync, {target_uri}, cannot be read ({exc})"
        raise NoBase(why) from exc
    if (was := mj.table_uuid(target_meta)) != (now := mj.table_uuid(meta)):
        raise NoBase(f"the source table was replaced: its UUID was {was} at the last sync and is {now} now")
    if not _descends(target_meta.get("current-snapshot-id"), meta):
        _require_descent_by_versions(src_io, base, target_meta, meta)
    return SyncBase(base, target_meta, _current_list(dst_io, target_meta))


def _base_version(since: Since, source_metadata: str, prefix_map: PrefixMap, dst_io: FileIO) -> str:
    if since.source_metadata is not None:
        return since.source_metadata
    if not since.from_target:
        raise NoBase(since.reason)
    source_dir = parent(source_metadata)
    target_dir = prefix_map.require(source_dir)
    if is_table_storage(target_dir):  # no listing there: the ledger or the catalog names the version
        raise NoBase(
            "S3 Tables' storage takes no listing: an incremental sync starts from the ledger's version"
        )
    name = newest_target_version(dst_io, target_dir)
    if name is None:
        raise NoBase("the target holds no metadata.json yet: a first migration")
    return canonical(f"{source_dir.rstrip('/')}/{name}")


def _descends(synced: int | None, meta: mj.Metadata) -> bool:
    """Whether `meta`'s current snapshot is `synced` or descends from it by the parent links
    `meta` holds (an expiry may have cut them: see `_require_descent_by_versions`)."""
    if synced is None or synced == -1:
        return True
    parents = {s["snapshot-id"]: s.get("parent-snapshot-id") for s in meta.get("snapshots", [])}
    current = meta.get("current-snapshot-id")
    seen: set[int] = set()
    while current is not None and current != -1 and current not in seen:
        if current == synced:
            return True
        seen.add(current)
        current = parents.get(current)
    return False


def _require_descent_by_versions(
    src_io: FileIO, base: str, target_meta: mj.Metadata, meta: mj.Metadata
) -> None:
    """The source's history continues the last sync version by version: each metadata version
    logged since has a current snapshot that is its predecessor's or descends from it. Needed when
    an expiry cut the parent links between the synced snapshot and the current one (pyiceberg's
    expiry unlinks a child from an expired parent); `NoBase` on a rollback, or when a version
    between them is gone."""
    logged = [canonical(p) for p in mj.metadata_log(meta)]
    rolled_back = NoBase(
        f"the source's history does not continue the last sync: its current snapshot "
        f"{meta.get('current-snapshot-id')} does not descend from snapshot "
        f"{target_meta.get('current-snapshot-id')}, the last synced (a rollback past it)"
    )
    if canonical(base) not in logged:
        raise rolled_back
    previous = target_meta.get("current-snapshot-id")
    for uri in logged[logged.index(canonical(base)) + 1 :]:
        try:
            version, _gz = read_metadata(src_io, uri)
        except Exception as exc:
            raise NoBase(
                f"a metadata version logged since the last sync, {uri}, cannot be read ({exc})"
            ) from exc
        if not _descends(previous, version):
            raise rolled_back
        previous = version.get("current-snapshot-id")
    if not _descends(previous, meta):
        raise rolled_back


def _current_list(dst_io: FileIO, target_meta: mj.Metadata) -> dict[str, int]:
    """The target's current manifest list at the last sync, read back: manifest path -> length."""
    current = target_meta.get("current-snapshot-id")
    snapshot = next((s for s in target_meta.get("snapshots", []) if s["snapshot-id"] == current), None)
    if snapshot is None:
        return {}
    uri = snapshot.get("manifest-list")
    if uri is None:
        raise NoBase("the last synced snapshot has inline manifests (format v1): no manifest list")
    try:
        data = dst_io.read(uri)
    except Exception as exc:
        why = "is missing" if is_absent(exc) else f"cannot be read ({exc})"
        raise NoBase(f"the target's manifest list of the last sync, {uri}, {why}") from exc
    try:
        return {ref.path: ref.length for ref in manifest_refs(uri, data)}
    except Exception as exc:
        raise NoBase(f"the target's manifest list of the last sync, {uri}, does not parse ({exc})") from exc
