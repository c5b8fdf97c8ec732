"""Every file a table's metadata reaches: what Validate checks at the target, and what must stay
when anything is pruned."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from icelake.aws.fileio import FileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.entries import EntryFields
from icelake.migrate.avro.files import DELETED, manifest_refs
from icelake.migrate.plan_scan import entry_fields, fetched_ahead
from icelake.uris import canonical

Entries = Callable[[str, bytes], list[EntryFields]]


def referenced_files(
    io: FileIO, meta: mj.Metadata, *, every_entry: bool, entries: Entries = entry_fields
) -> Iterator[tuple[str, int | None, str]]:
    """(path, recorded size or None, what it is) of every file `meta` reaches: logged metadata
    files, statistics files, manifest lists, manifests and the files their entries name.

    `every_entry`: also deleted entries' files and the data files delete entries refer to (a prune
    keeps them); without it, live entries' files only (a deleted entry may name a file expired long
    ago). A manifest named by several lists comes once per list. Manifest lists and manifests are
    fetched ahead on threads (S3's time to first byte overlaps the parsing) and their entries read
    with the plan's skippers (`entries`: only the fields needed here are decoded)."""
    for path in mj.metadata_log(meta):
        yield path, None, "logged metadata file"
    for path, size in mj.statistics_files(meta):
        yield path, size, "statistics file"
    manifests: dict[str, None] = {}
    for manifest_list, data in fetched_ahead(mj.manifest_lists(meta), io.read):
        yield manifest_list, None, "manifest list"
        for ref in manifest_refs(manifest_list, data):
            yield ref.path, ref.length, "manifest"
            manifests[ref.path] = None
    for inline in mj.inline_manifests(meta):  # v1 snapshots that list their manifests themselves
        if inline not in manifests:
            yield inline, None, "manifest"
            manifests[inline] = None
    for manifest, data in fetched_ahead(list(manifests), io.read):
        yield from _entry_files(entries(manifest, data), every_entry=every_entry)


def _entry_files(parsed: list[EntryFields], *, every_entry: bool) -> Iterator[tuple[str, int | None, str]]:
    for status, _content, path, size, reference, _format in parsed:
        if every_entry or status != DELETED:
            yield path, size, "data file"
        if every_entry and reference:
            yield reference, None, "referenced data file"


def reachable_files(io: FileIO, metadata_location: str, entries: Entries = entry_fields) -> set[str]:
    """Canonical URIs of the metadata file and of every file it reaches, deleted manifest entries'
    too: the plan copies the files they name while the source still has them, so a prune that
    dropped them would only see the next sync copy them again. This keeps a little more than
    Iceberg's own expiry (which keeps live entries only); a prune can only delete less, never
    something a retained snapshot reads."""
    meta, _gz = mj.parse_metadata(metadata_location, io.read(metadata_location))
    found = {canonical(metadata_location)}
    reached = referenced_files(io, meta, every_entry=True, entries=entries)
    found.update(canonical(path) for path, _size, _what in reached)
    return found
