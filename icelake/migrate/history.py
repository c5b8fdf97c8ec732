"""The history a target keeps, and the files only older versions of the source reach.

A writer can expire snapshots without deleting their files (pyiceberg does, as does any engine
whose expiry only edits metadata). The metadata.json versions the current one logs
(`metadata-log`) then still reach manifest lists, manifests and data files that the current
metadata does not: on the source, registering such a version recovers the table as it was.

`history` says what the target keeps:
- `live` (the default): what the current metadata reaches, as Iceberg's own orphan-file removal
  counts live files. The older versions are carried over and logged, but on the target they
  dangle where their files were not copied.
- `all`: also every file a logged version reaches that the source still has, so that no target
  version dangles where its source counterpart does not.

Either way the plan reports those files ("orphans": reached only from older logged versions and
present at the source), with what to do about them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from icelake.aws.fileio import FileIO, ObjectInfo, is_absent
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.entries import EntryFields
from icelake.migrate.avro.files import DELETED, ManifestRef, manifest_refs
from icelake.migrate.avro.patch import PlannedManifest
from icelake.migrate.check.reachable import Entries
from icelake.migrate.inventory import stat_by_listing
from icelake.migrate.models import Orphans, PrefixMapping
from icelake.migrate.plan_scan import entry_fields, fetched_ahead
from icelake.uris import PrefixMap, canonical

History = Literal["live", "all"]
HISTORIES: tuple[History, ...] = ("live", "all")


@dataclass
class LoggedPaths:
    """The manifest lists and statistics files the logged (older) metadata versions name."""

    lists: set[str] = field(default_factory=set)
    stats: set[str] = field(default_factory=set)


@dataclass
class OlderHistory:
    """What older logged versions reach that the current metadata does not, as the plan found it
    at the source: carried over under `all`, counted either way."""

    lists: list[str] = field(default_factory=list)  # present at the source
    manifests: dict[str, ManifestRef] = field(default_factory=dict)  # present, named by those lists only
    absent_manifests: dict[str, int] = field(default_factory=dict)  # named, gone: path -> recorded length
    # canonical path -> recorded (size, live=False): data, delete and statistics files only they
    # reach, which may be gone from the source as well
    files: dict[str, int] = field(default_factory=dict)
    delete_formats: dict[str, str] = field(default_factory=dict)
    planned: dict[str, PlannedManifest] = field(default_factory=dict)
    references: set[str] = field(default_factory=set)  # data files their delete entries name
    metadata_bytes: int = 0  # of the lists and manifests

    def orphans(self, at_source: Mapping[str, ObjectInfo | None]) -> Orphans:
        """The orphans, given what the source has of `files`."""
        present = [info.size for p in self.files if (info := at_source.get(p)) is not None]
        return Orphans(
            files=len(self.lists) + len(self.manifests) + len(present),
            bytes=self.metadata_bytes + sum(present),
            manifest_lists=len(self.lists),
        )


def orphans_note(history: History, orphans: Orphans) -> str | None:
    """One line for people: what the orphans are and what to do about them (None: there are none)."""
    if not orphans.files:
        return None
    what = (
        f"{orphans.files} files ({orphans.bytes:,} bytes, {orphans.manifest_lists} manifest lists) "
        "at the source are reached only from older logged metadata versions"
    )
    if history == "all":
        return f"{what}; copied (history: all), so every logged version reads on the target as at the source"
    return (
        f"{what}; not copied (history: live), so those versions dangle on the target: remove them at "
        "the source (Iceberg's remove_orphan_files after expire_snapshots) or migrate with history all "
        "(--history all, options.history)"
    )


@dataclass
class HistoryReach:
    """What a table's logged versions reach, read where they are (`history_reach`)."""

    present: set[str] = field(default_factory=set)  # canonical: versions, lists and manifests read
    # path -> (what it is, the first version that reaches it): live entries' data and delete files
    # and statistics files, whose existence `dangling_versions` asks about
    files: dict[str, tuple[str, str]] = field(default_factory=dict)
    others: set[str] = field(default_factory=set)  # canonical: deleted entries' files, referenced data files
    missing: dict[str, tuple[str, str]] = field(default_factory=dict)  # versions, lists, manifests gone


def _read_or_none(io: FileIO, uri: str) -> bytes | None:
    try:
        return io.read(uri)
    except Exception as exc:
        if is_absent(exc):
            return None
        raise


def history_reach(io: FileIO, meta: mj.Metadata, entries: Entries = entry_fields) -> HistoryReach:
    """Every file the versions `meta` logs reach, each manifest list and manifest read once over
    the history; one that is gone ends its branch (an older version may dangle) and is named in
    `missing`."""
    reach = HistoryReach()
    read = functools.partial(_read_or_none, io)
    lists_seen: set[str] = set()
    manifests_seen: set[str] = set()
    for version in mj.metadata_log(meta):
        raw = read(version)
        if raw is None:
            reach.missing[version] = ("logged metadata file", version)
            continue
        reach.present.add(canonical(version))
        logged, _gz = mj.parse_metadata(version, raw)
        for path, _size in mj.statistics_files(logged):
            reach.files.setdefault(path, ("statistics file", version))
        lists = [p for p in dict.fromkeys(mj.manifest_lists(logged)) if p not in lists_seen]
        lists_seen.update(lists)
        manifests = [p for p in mj.inline_manifests(logged) if p not in manifests_seen]
        for uri, data in fetched_ahead(lists, read):
            if data is None:
                reach.missing[uri] = ("manifest list", version)
            else:
                reach.present.add(canonical(uri))
                manifests += [ref.path for ref in manifest_refs(uri, data)]
        manifests = [p for p in dict.fromkeys(manifests) if p not in manifests_seen]
        manifests_seen.update(manifests)
        for uri, data in fetched_ahead(manifests, read):
            if data is None:
                reach.missing[uri] = ("manifest", version)
            else:
                reach.present.add(canonical(uri))
                _add_entries(reach, entries(uri, data), version)
    return reach


def _add_entries(reach: HistoryReach, parsed: list[EntryFields], version: str) -> None:
    for status, _content, path, _size, reference, _format in parsed:
        if status != DELETED:
            reach.files.setdefault(path, ("data or delete file", version))
        else:
            reach.others.add(canonical(path))
        if reference:
            reach.others.add(canonical(reference))


def dangling_versions(
    src_io: FileIO, dst_io: FileIO, target_metadata: str, to_source: PrefixMap, workers: int = 16
) -> list[str]:
    """The `all` rule, checked on the target: no logged version reaches a file the target lacks
    while the source has its counterpart (`to_source` maps target paths back). One walk of the
    target's logged versions, a listing of what they reach, and a source check of what is gone."""
    meta, _gz = mj.parse_metadata(target_metadata, dst_io.read(target_metadata))
    reach = history_reach(dst_io, meta)
    gone = dict(reach.missing)
    target_roots = [m.source for m in to_source.mappings]
    at_target = stat_by_listing(dst_io, reach.files, target_roots, workers)
    gone.update((p, reach.files[p]) for p, info in at_target.items() if info is None)
    sources = {p: s for p in gone if (s := to_source.map(p)) is not None}
    at_source = stat_by_listing(src_io, sources.values(), [m.target for m in to_source.mappings], workers)
    return [
        f"logged version {gone[p][1]}: {gone[p][0]} {p} is missing at the target, but the source has it"
        for p, s in sources.items()
        if at_source[s] is not None
    ]


def to_source_map(mappings: Iterable[PrefixMapping]) -> PrefixMap:
    """A migration's prefix map (its result's `prefix_mappings`) turned round: a target path ->
    its source counterpart."""
    return PrefixMap([(m.target, m.source) for m in mappings])


def reached_by_history(io: FileIO, metadata_location: str) -> set[str]:
    """Canonical paths of every file the logged versions of a table reach (a prune under `all`
    keeps them)."""
    meta, _gz = mj.parse_metadata(metadata_location, io.read(metadata_location))
    reach = history_reach(io, meta)
    return reach.present | reach.others | {canonical(p) for p in reach.files}
