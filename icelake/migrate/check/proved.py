"""Every file a target's metadata reaches, checked against the copy record (`verify`'s `metadata`
tier, which every tier starts with): its size, and its ETag or full-object checksum as recorded
when icelake wrote it (`check/record.py`). No data is read; manifest lists and manifests are read
to find what they reach, and a missing or unreadable one is named and its subtree left (what it
would reach cannot be known from the target alone).

Where the record holds an ETag (a copy: CopyObject answers with the copy's ETag, which any later
write of the key changes) the file under the table location is answered by one listing of the
location (1,000 keys, sizes and ETags a request) rather than a HEAD: a million data files are a
thousand LISTs, not a million HEADs (hours in one Lambda). The rest, rewritten files recorded by
their SHA-256 and files elsewhere, get one HEAD each (`ChecksumMode=ENABLED`).

A file not on the record (a target migrated before records were kept, or a promoted table's
commits by others) is checked by its size as the metadata records it, and counted as such.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import DELETED, manifest_refs
from icelake.migrate.check.record import Record, differs
from icelake.migrate.plan_scan import entry_fields, map_ahead
from icelake.uris import canonical, is_under

T = TypeVar("T")
HEAD_THREADS = 16  # HEADs in flight: each waits on S3, none uses the CPU


@dataclass(frozen=True)
class Damage:
    """One file the target does not hold as written: what it is and what differs."""

    path: str
    what: str  # "data file", "manifest", ...
    problem: str  # "missing at the target", "CRC64NVME x, y recorded", "cannot be read: ..."
    snapshots: tuple[int, ...] = ()  # the snapshots that need it

    def __str__(self) -> str:
        return f"{self.what} {self.path}: {self.problem}"


@dataclass
class ProofCheck:
    files: int = 0  # referenced files checked
    heads: int = 0  # of those, by a HEAD each (the rest by the location's listing)
    unrecorded: int = 0  # of those, not on the record: checked by size only
    damaged: list[Damage] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # not a file's damage (a path under the source)
    seconds: float = 0.0

    @property
    def problems(self) -> list[str]:
        return [*self.other, *(str(d) for d in self.damaged)]


@dataclass
class _Walk:
    """What the walk found: each file's kind and recorded size, and which snapshots reach it."""

    io: FileIO
    record: Record
    check: ProofCheck
    reached_by: dict[str, set[int]] = field(default_factory=dict)  # lists and manifests
    # A data or delete file's manifest (others that name it too in `more_owners`): a million files
    # hold a string each here, not a set of snapshots.
    owner: dict[str, str] = field(default_factory=dict)
    more_owners: dict[str, list[str]] = field(default_factory=dict)
    location: str = ""  # canonical table location, once listed
    listed: dict[str, ObjectInfo] = field(default_factory=dict)

    def heads(self, files: Iterable[tuple[str, int | None, str]]) -> set[str]:
        """Check each file, by the listing where it answers, else a HEAD on threads; returns the
        damaged paths."""
        items = list(dict.fromkeys(files))
        answered = {path: info for path, _r, _w in items for ok, info in [self._from_listing(path)] if ok}
        to_head = [path for path, _r, _w in items if path not in answered]
        headed = dict(zip(to_head, map_ahead(self._stat, to_head, HEAD_THREADS), strict=True))
        self.check.heads += len(to_head)
        bad: set[str] = set()
        for path, recorded, what in items:
            self.check.files += 1
            info = answered[path] if path in answered else headed[path]
            problem = self._compare(path, recorded, info)
            if problem is not None:
                self.check.damaged.append(Damage(path, what, problem))
                bad.add(path)
        return bad

    def _stat(self, path: str) -> ObjectInfo | None:
        return self.io.stat(path)

    def _from_listing(self, path: str) -> tuple[bool, ObjectInfo | None]:
        """(whether the listing answers for `path`, what it says: None is absent). It answers
        for a file under the listed location that the record proves by its ETag, or that is not
        on the record (checked by size)."""
        c = canonical(path)
        if not self.location or not is_under(c, self.location):
            return False, None
        proof = self.record.get(path)
        if proof is not None and not proof.etag:
            return False, None
        return True, self.listed.get(c)

    def _compare(self, path: str, recorded: int | None, info: ObjectInfo | None) -> str | None:
        proof = self.record.get(path)
        if proof is not None:
            return differs(proof, info)
        self.check.unrecorded += 1
        if info is None:
            return "missing at the target"
        if recorded is not None and recorded >= 0 and info.size != recorded:
            return f"{info.size} bytes, its metadata records {recorded}"
        return None

    def read(self, path: str, what: str, parse: Callable[[str, bytes], list[T]]) -> list[T]:
        """A manifest list's or manifest's parse; None (and named) when it cannot be read."""
        try:
            return parse(path, self.io.read(path))
        except Exception as exc:  # overwritten with something else: damaged, whatever the complaint
            complaint = " ".join(str(exc).split())[:200]
            self.check.damaged.append(Damage(path, what, f"cannot be read: {complaint}"))
            return []

    def reach(self, path: str, snapshots: Iterable[int]) -> None:
        self.reached_by.setdefault(path, set()).update(snapshots)

    def owned(self, path: str, manifest: str) -> None:
        first = self.owner.setdefault(path, manifest)
        if first != manifest:
            self.more_owners.setdefault(path, []).append(manifest)

    def snapshots(self, path: str) -> tuple[int, ...]:
        """The snapshots that need `path`: those whose lists reach it, or reach a manifest naming it."""
        found = set(self.reached_by.get(path, ()))
        for manifest in (self.owner.get(path), *self.more_owners.get(path, ())):
            found.update(self.reached_by.get(manifest or "", ()))
        return tuple(sorted(found))


def proved_files(
    io: FileIO, metadata: str, record: Record, source_prefixes: Iterable[str] = ()
) -> ProofCheck:
    """Every file `metadata` reaches (itself included) compared with `record`."""
    started = time.monotonic()
    walk = _Walk(io, record, ProofCheck())
    if walk.heads([(metadata, None, "metadata file")]):
        return _done(walk, started)
    meta, _gz = mj.parse_metadata(metadata, io.read(metadata))
    walk.check.other += _under_sources(meta, source_prefixes)
    walk.location = canonical(meta["location"])
    walk.listed = {canonical(uri): info for uri, info in io.list(meta["location"])}
    manifests = _lists(walk, meta)
    bad = walk.heads((p, length, "manifest") for p, length in manifests.items())
    files: dict[str, tuple[int | None, str]] = {}
    for path in manifests:
        entries = [] if path in bad else walk.read(path, "manifest", entry_fields)
        for status, content, file_path, size, _ref, _format in entries:
            if status != DELETED:
                files[file_path] = (size, "delete file" if content else "data file")
                walk.owned(file_path, path)
    walk.heads((p, size, what) for p, (size, what) in files.items())
    return _done(walk, started)


def _under_sources(meta: mj.Metadata, source_prefixes: Iterable[str]) -> list[str]:
    sources = [canonical(p) for p in source_prefixes]
    return [
        f"table location or property {path} is under a source prefix"
        for path in (meta["location"], *(meta.get("properties", {}).get(k) for k in mj.PATH_PROPERTIES))
        if path and any(is_under(canonical(path), s) for s in sources)
    ]


def _lists(walk: _Walk, meta: mj.Metadata) -> dict[str, int | None]:
    """The logged metadata files, statistics files and manifest lists checked; the manifests the
    lists that are whole name, with their recorded lengths."""
    lists = {s["manifest-list"]: s["snapshot-id"] for s in meta.get("snapshots", []) if "manifest-list" in s}
    first: list[tuple[str, int | None, str]] = [
        (p, None, "logged metadata file") for p in mj.metadata_log(meta)
    ]
    first += [(p, size, "statistics file") for p, size in mj.statistics_files(meta)]
    first += [(p, None, "manifest list") for p in lists]
    bad = walk.heads(first)
    manifests: dict[str, int | None] = {}
    for path, snapshot in lists.items():
        walk.reach(path, [snapshot])
        for ref in [] if path in bad else walk.read(path, "manifest list", manifest_refs):
            manifests[ref.path] = ref.length
            walk.reach(ref.path, [snapshot])
    for inline in mj.inline_manifests(meta):
        manifests.setdefault(inline, None)
    return manifests


def _done(walk: _Walk, started: float) -> ProofCheck:
    check = walk.check
    check.damaged = [Damage(d.path, d.what, d.problem, walk.snapshots(d.path)) for d in check.damaged]
    check.seconds = round(time.monotonic() - started, 3)
    return check


def proof_requests(headed: int, objects_at_location: int, lists: int, manifests: int) -> dict[str, int]:
    """The S3 requests `proved_files` sends: a HEAD per file the listing does not answer for
    (`headed`: the metadata file, the rewritten files, what lies outside the table location), the
    table location listed (1,000 keys a page), and a GET of the metadata file, each manifest list
    and each manifest. Estimates use it: keep it in step with `proved_files`."""
    pages = max(1, -(-objects_at_location // 1000))
    return {"head": headed, "list": pages, "get": 1 + lists + manifests}
