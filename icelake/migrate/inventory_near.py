"""What exists, for a few keys among many: an incremental sync asks about the files the source
committed since the last sync, a handful of directories in a table of a million files. Listing the
table's prefixes (`inventory.stat_by_listing`) would cost what the table holds; a HEAD per key
costs a request per file. `stat_near` lists only around the keys: each directory that holds
wanted keys from just before its first one, page by page, while a page settles enough of them to
be worth more than their HEADs (`DENSE_PAGE`), and asks the rest one by one. New files land
together (a commit's partitions, a writer's job), so a commit of a thousand files is a few pages;
at worst the listing stops after a page that settled too few, so its cost follows the keys asked
about, never the table."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Unpack

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.migrate.inventory import KEYS_PER_PAGE, StatOptions, stat_each
from icelake.migrate.plan_scan import map_in_chunks
from icelake.uris import canonical

# A page of a listing must settle this many wanted keys, or the rest are asked one by one.
DENSE_PAGE = 10


def stat_near(
    io: FileIO, uris: Iterable[str], roots: Iterable[str], workers: int, **options: Unpack[StatOptions]
) -> dict[str, ObjectInfo | None]:
    """uri -> what the object is (None: absent), as `inventory.stat_by_listing` answers (the same
    signature, `plan.reads.Stat`; `roots` and `cpu` are not needed: only the keys' own
    directories are listed). `full`: present objects are then asked one by one too."""
    phase, full = options.get("phase"), options.get("full", False)
    canonical_uris = options.get("canonical_uris", False)
    found: dict[str, ObjectInfo | None] = dict.fromkeys(uris)
    if phase:
        phase.start(len(found))
    by_directory: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for uri in found:
        c = uri if canonical_uris else canonical(uri)
        by_directory[c.rsplit("/", 1)[0]].append((c, uri))
    # S3 Tables' storage takes no listing: its keys are asked one by one.
    unsettled = [
        uri for d in [d for d in by_directory if is_table_storage(d)] for _, uri in by_directory.pop(d)
    ]

    def settle(directory: str) -> None:
        for uri, info in _listed_near(io, directory, by_directory[directory]).items():
            if info is _ASK:
                unsettled.append(uri)
            else:
                found[uri] = info
                if phase:
                    phase.advance()

    map_in_chunks(settle, list(by_directory), workers)
    asked = unsettled + ([u for u, info in found.items() if info is not None] if full else [])
    found.update(zip(asked, stat_each(io, asked, workers, phase, set(unsettled)), strict=True))
    return found


_ASK = ObjectInfo(size=-1)  # not settled by the listing: asked alone


def _listed_near(io: FileIO, directory: str, keys: list[tuple[str, str]]) -> dict[str, ObjectInfo | None]:
    """What one directory's listing says of `keys` ((canonical, as asked) pairs): found, absent, or
    `_ASK` for those past where the listing stopped."""
    keys.sort()
    wanted = dict(keys)
    first, last = keys[0][0], keys[-1][0]
    answers: dict[str, ObjectInfo | None] = {}
    reached, ended, hits = "", True, 0
    listing = io.list(directory + "/", first[:-1])  # from just before the first key
    for listed, (uri, info) in enumerate(listing, start=1):
        c = canonical(uri)
        if c > last:
            break
        reached = c
        if (asked := wanted.pop(c, None)) is not None:
            answers[asked] = info
            hits += 1
        if not wanted:
            break
        if listed % KEYS_PER_PAGE == 0:
            if hits < DENSE_PAGE:
                ended = False  # too sparse: the rest are asked alone
                break
            hits = 0
    for c, asked in wanted.items():
        answers[asked] = None if ended or c <= reached else _ASK
    return answers
