"""A manifest's files as the plan takes them: its entries in columns (`ManifestFiles`, made where
the manifest is parsed, in a worker process for a table of many), and added to the plan's map of
files with each file's recorded size and whether a live entry names it, in one int."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from icelake.migrate.avro.files import (
    ADDED,
    DELETED,
    EQUALITY_DELETES,
    POSITION_DELETES,
)
from icelake.migrate.avro.patch import PlannedManifest
from icelake.migrate.plan.reads import (
    Entries,
)
from icelake.uris import canonical


@dataclass(frozen=True)
class ManifestFiles:
    """The files a manifest's entries name, as planning takes them: in columns, which cross
    processes several times cheaper than a tuple per entry (a million entries for a big table)."""

    paths: list[str]  # canonical (listings, maps and lookups then take them as they are)
    sizes: array[int]  # file_size_in_bytes
    statuses: array[int]
    # (entry index, content, referenced_data_file, file_format) of the entries that are more than
    # a data file: delete files, and those naming a referenced data file
    others: list[tuple[int, int, str | None, str | None]]


Parsed = tuple[ManifestFiles, PlannedManifest | None]


def manifest_files(entries: Entries, uri: str, data: bytes) -> Parsed:
    """`entries` of one manifest as `ManifestFiles`. Made where the manifest is parsed, in a worker
    process for a table of many: a million canonical paths made there, not in the planning
    process, whose work is the phase's length."""
    parsed, read = entries(uri, data)
    others = [
        (i, content, ref, fmt)
        for i, (_, content, _, _, ref, fmt) in enumerate(parsed)
        if content or ref or fmt
    ]
    files = ManifestFiles(
        [canonical(path) for _, _, path, _, _, _ in parsed],
        array("q", [size for _, _, _, size, _, _ in parsed]),
        array("q", [status for status, _, _, _, _, _ in parsed]),
        others,
    )
    return files, read


def manifest_files_job(uri: str, data: bytes, entries: Entries) -> Parsed | None:
    """`manifest_files` in a worker process (`FileIO.parse_in`), or None when it cannot be made:
    errors do not cross processes intact, so the caller parses the manifest again and raises."""
    try:
        return manifest_files(entries, uri, data)
    except Exception:
        return None


# A file's recorded size and whether a live entry names it, as one int (`size * 2 + live`; the
# size -1 when unknown): a million files' (size, live) tuples would cost 64 MB more.
def recorded(size: int, *, live: bool) -> int:
    return size * 2 + live


def recorded_size(recorded: int) -> int:
    return recorded >> 1


def recorded_live(recorded: int) -> bool:
    return bool(recorded & 1)


def add_entries(
    parsed: ManifestFiles,
    files: dict[str, int],
    delete_formats: dict[str, str],
    refs: set[str],
    equality: set[str] | None = None,  # given: equality delete files are added to it
    *,
    only_added: bool = False,
) -> None:
    """`only_added`: of an incremental plan, which copies only what the new snapshots added (an
    EXISTING or DELETED entry names a file an earlier sync carried); position delete files are
    taken whatever their status, since a rewritten delete manifest needs what rewriting each one
    changed."""
    paths = parsed.paths
    if only_added:
        _add_added(parsed, files)
        _add_others(parsed, delete_formats, refs, equality)
        return
    # `recorded(size, live=...)`, inlined: a million entries. A live entry's file is live.
    if DELETED not in parsed.statuses:  # every entry live (the common case): set at once
        files.update(zip(paths, [size * 2 + 1 for size in parsed.sizes], strict=True))
    else:  # a deleted entry leaves its file as live as an earlier entry made it
        for path, size, status in zip(paths, parsed.sizes, parsed.statuses, strict=True):
            files[path] = size * 2 + (status != DELETED or files.get(path, 0) & 1)
    _add_others(parsed, delete_formats, refs, equality)


def _add_added(parsed: ManifestFiles, files: dict[str, int]) -> None:
    deletes = {i for i, content, _, _ in parsed.others if content == POSITION_DELETES}
    for i, (path, size, status) in enumerate(zip(parsed.paths, parsed.sizes, parsed.statuses, strict=True)):
        if status == ADDED or i in deletes:
            files[path] = size * 2 + (status != DELETED or files.get(path, 0) & 1)


def _add_others(
    parsed: ManifestFiles, delete_formats: dict[str, str], refs: set[str], equality: set[str] | None
) -> None:
    paths = parsed.paths
    for i, content, reference, file_format in parsed.others:
        if reference:
            refs.add(reference)
        if content == POSITION_DELETES:
            delete_formats[paths[i]] = file_format  # type: ignore[assignment]
        elif content == EQUALITY_DELETES and equality is not None:
            equality.add(paths[i])
