"""The files of a verify checked against the copy record in chunks that run side by side: a
Lambda's threads or the Glue job's Spark tasks (`copy.engine.Runner`), the same code either way.

A chunk is either a range of the table location's keys or a batch of HEADs:
- a file the record proves by its ETag (a copy), or one not on the record (checked by size),
  under the table location, is answered by a listing: the sorted keys are cut into ranges of
  `RANGE_KEYS`, each listed from after the previous range's last key to its own (StartAfter), so
  a million files are fifty listings side by side, not a thousand pages one after another (fewer
  than `MIN_KEYS_TO_LIST` such files are HEADed: a listing may cost more);
- a rewritten file (recorded by its SHA-256, which a listing does not carry) or one outside the
  location gets a HEAD (`ChecksumMode=ENABLED`), `HEAD_BATCH` to a chunk.

Each chunk sends `chunk_requests` requests: the estimate (`assess/estimate/verify_estimate.py`)
and `make bench-verify` count them so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.migrate.check.record import Proof, differs
from icelake.migrate.inventory import MIN_KEYS_TO_LIST
from icelake.uris import canonical, is_under

KEYS_PER_PAGE = 1000  # ListObjectsV2's page
RANGE_KEYS = 20 * KEYS_PER_PAGE  # files a listing chunk answers for: 21 pages at most
HEAD_BATCH = 20  # HEADs a chunk sends, one after another: small, so that chunks run side by side


class FileToProve(NamedTuple):
    path: str
    recorded: int | None  # the size the metadata records (None: it records none)
    what: str  # "data file", "manifest", ...
    proof: Proof | None  # as the record has it (None: not on the record)


class Chunk(NamedTuple):
    """Files a task checks: by the listing of `location` after `after` up to `until` (canonical
    uris), or, with no location, by a HEAD each."""

    files: tuple[FileToProve, ...]
    location: str | None = None
    after: str | None = None
    until: str | None = None


class ChunkResult(NamedTuple):
    damaged: list[tuple[str, str, str]]  # (path, what, problem)
    heads: int
    unrecorded: int  # files not on the record, checked by size only


def by_listing(file: FileToProve, location: str) -> bool:
    """Whether a listing of `location` proves `file`: under it, and on the record by an ETag or
    not on it at all."""
    under = bool(location) and is_under(canonical(file.path), location)
    return under and (file.proof is None or bool(file.proof.etag))


def chunks_of(files: Iterable[FileToProve], location: str) -> list[Chunk]:
    """The listing ranges (by key) and the HEAD batches of `files`; `location` is canonical ("":
    nothing is listed)."""
    listed: list[tuple[str, FileToProve]] = []
    headed: list[FileToProve] = []
    for f in files:
        if by_listing(f, location):
            listed.append((canonical(f.path), f))
        else:
            headed.append(f)
    if len(listed) < MIN_KEYS_TO_LIST:
        headed += [f for _c, f in listed]
        listed = []
    listed.sort(key=lambda kv: kv[0])
    out: list[Chunk] = []
    # The first range starts just before its first key (the location's other objects before it
    # are not read), each next one after the previous range's last key
    after: str | None = listed[0][0][:-1] if listed else None
    for start in range(0, len(listed), RANGE_KEYS):
        part = listed[start : start + RANGE_KEYS]
        until = part[-1][0]
        out.append(Chunk(tuple(f for _c, f in part), location, after, until))
        after = until
    out += [Chunk(tuple(headed[i : i + HEAD_BATCH])) for i in range(0, len(headed), HEAD_BATCH)]
    return out


def check_chunk(open_io: Callable[[], FileIO], chunk: Chunk) -> ChunkResult:
    """Every file of `chunk` against its proof (or its recorded size when it has none)."""
    io = open_io()
    if chunk.location is not None and chunk.until is not None:
        listed = {
            canonical(uri): info for uri, info in io.list_range(chunk.location, chunk.after, chunk.until)
        }
        return judged(chunk.files, {f.path: listed.get(canonical(f.path)) for f in chunk.files}, 0)
    return judged(chunk.files, {f.path: io.stat(f.path) for f in chunk.files}, len(chunk.files))


def judged(files: Iterable[FileToProve], found: Mapping[str, ObjectInfo | None], heads: int) -> ChunkResult:
    """Each file against what S3 says of it now (`found`, by path: None is absent)."""
    damaged: list[tuple[str, str, str]] = []
    unrecorded = 0
    for f in files:
        if f.proof is None:
            unrecorded += 1
            problem = _by_size(f.recorded, found[f.path])
        else:
            problem = differs(f.proof, found[f.path])
        if problem is not None:
            damaged.append((f.path, f.what, problem))
    return ChunkResult(damaged, heads, unrecorded)


def listing_pages(listed: int) -> int:
    """The pages of the ranges that answer for `listed` files, when they hold no other keys."""
    if listed < MIN_KEYS_TO_LIST:
        return 0
    full, rest = divmod(listed, RANGE_KEYS)
    return full * list_pages(RANGE_KEYS) + (list_pages(rest) if rest else 0)


def list_pages(keys_in_range: int) -> int:
    """The pages a listing of a range holding `keys_in_range` keys reads: its full pages, then the
    one that holds the first key past the range (one fewer when the range ends the listing on a
    page's last key)."""
    return keys_in_range // KEYS_PER_PAGE + 1


def _by_size(recorded: int | None, info: ObjectInfo | None) -> str | None:
    if info is None:
        return "missing at the target"
    if recorded is not None and recorded >= 0 and info.size != recorded:
        return f"{info.size} bytes, its metadata records {recorded}"
    return None
