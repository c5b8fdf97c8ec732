"""What exists, learned by listing: one ListObjectsV2 request answers for up to 1,000 keys, where
a HEAD answers for one. Planning a table of a million files thus costs about a thousand requests
per side instead of two million.

A listing says which keys exist, their size and ETag; it does not carry user metadata or checksum
values. Keys a listing cannot settle are asked one by one (`io.stat`):
- keys under a prefix too big to be worth listing for them (a handful of keys in a shared prefix of
  many objects): listing stops after `LIST_OVERHEAD` times the wanted keys plus `LIST_BUDGET` pages;
- keys the caller needs in full (`full=True` for present keys: the skip-or-conflict decision on a
  resumed target needs the metadata that names the copy's source).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.migrate.plan_scan import map_ahead, map_in_chunks
from icelake.migrate.progress import ProgressSink
from icelake.uris import canonical, is_under

KEYS_PER_PAGE = 1000  # ListObjectsV2's page size
MIN_KEYS_TO_LIST = 50  # fewer wanted keys under a root: HEAD them (a listing may cost more)
# A listing gives up (and leaves the rest to HEADs) after reading this many times the keys it is
# after, plus LIST_BUDGET pages: other objects beside the table's own (Hadoop's .crc files, orphans,
# other tables) are expected, a prefix a hundred times bigger than the table is not.
LIST_OVERHEAD = 3
LIST_BUDGET = 5
# A listing's pages come one after another (each names where the next starts). A prefix holding
# more wanted keys than this is listed as its subdirectories instead, side by side, as long as
# they hold a page of wanted keys each on average: at most one extra request per listing. Before
# splitting, one page of the prefix is read: a prefix that ends within it (the empty target of a
# first migration) is settled by that one request instead of one per subdirectory (`_listings`).
SPLIT_LISTING_AT = 10 * KEYS_PER_PAGE


def stat_by_listing(
    io: FileIO,
    uris: Iterable[str],
    roots: Iterable[str],
    workers: int,
    progress: ProgressSink | None = None,
    phase: str = "",
    *,
    full: bool = False,
) -> dict[str, ObjectInfo | None]:
    """uri -> what the object is (None: absent), for every uri; `roots` are the prefixes to list
    (the uris under none of them are asked one by one). `full`: present objects are then asked
    one by one too, for what a listing does not say."""
    wanted = list(dict.fromkeys(uris))
    if progress:
        progress.start(phase, len(wanted))
    # root -> the uris under it. Canonical forms are recomputed where needed rather than held:
    # for a million local paths they would be another million strings at the plan's peak.
    under: dict[str, list[str]] = defaultdict(list)
    alone: list[str] = []
    ordered_roots = sorted({canonical(r).rstrip("/") for r in roots}, key=len, reverse=True)
    for uri in wanted:
        c = canonical(uri)
        root = next((r for r in ordered_roots if is_under(c, r)), None)
        if root is None:
            alone.append(uri)
        else:
            under[root].append(uri)
    for root in [r for r, keys in under.items() if len(keys) < MIN_KEYS_TO_LIST]:
        alone.extend(under.pop(root))

    found: dict[str, ObjectInfo | None] = {}

    def list_root(item: tuple[str, list[str]]) -> dict[str, ObjectInfo | None]:
        root, keys = item
        return _listed(io.list(root), keys, progress, phase)

    listings = [part for r, keys in under.items() for part in _listings(io, r, keys, found, progress, phase)]
    under.clear()  # the listings hold the keys now
    # A few listings in flight, taken in order: a pool's map would keep every finished listing's
    # answer until the loop reached it (a million keys' worth of small dicts beside `found`).
    for answer in map_ahead(list_root, listings, max(1, min(workers, len(listings)))):
        found.update(answer)
    unsettled = [u for u in wanted if u not in found]  # the keys left alone, and those over budget
    counted = set(unsettled)
    if full:
        unsettled += [u for u, info in found.items() if info is not None]

    def head(uri: str) -> ObjectInfo | None:
        info = io.stat(uri)
        if progress and uri in counted:
            progress.advance(phase)
        return info

    found.update(zip(unsettled, map_in_chunks(head, unsettled, workers), strict=True))
    assert len(found) == len(wanted)  # every wanted key, settled by a listing or a HEAD
    return found  # not copied in the callers' order: a million-key dict twice at once is the peak


def _split_listing(root: str, keys: list[str]) -> list[tuple[str, list[str]]]:
    """(prefix, its wanted keys) to list: `root` itself, or its subdirectories (recursively) when it
    has more than SPLIT_LISTING_AT wanted keys, all of them in subdirectories, a page's worth per
    subdirectory on average. A table's data/ of a million files in a thousand partitions is then a
    thousand short listings that run in parallel rather than a thousand pages in a row."""
    if len(keys) <= SPLIT_LISTING_AT:
        return [(root, keys)]
    children: dict[str, list[str]] = defaultdict(list)
    start = len(root) + 1
    for uri in keys:
        child, slash, _name = canonical(uri)[start:].partition("/")
        if not slash:
            return [(root, keys)]  # a wanted key directly in root: only root's listing has it
        children[child].append(uri)
    if len(children) == 1:  # one subdirectory holds them all: list it alone (the same pages)
        return _split_listing(f"{root}/{next(iter(children))}", keys)
    if len(keys) < KEYS_PER_PAGE * len(children):
        return [(root, keys)]
    return [part for child, group in children.items() for part in _split_listing(f"{root}/{child}", group)]


def _listings(
    io: FileIO,
    root: str,
    keys: list[str],
    found: dict[str, ObjectInfo | None],
    progress: ProgressSink | None,
    phase: str,
) -> list[tuple[str, list[str]]]:
    """The listings that settle `keys` under `root`: its subdirectories' when it has many keys
    (`_split_listing`), unless one page of `root` is all there is, which then settles them into
    `found` at once (the empty target of a first migration: one request, not one a partition)."""
    parts = _split_listing(root, keys)
    if len(parts) > 1 and (page := whole_listing(io, root)) is not None:
        found.update(_listed(page, keys, progress, phase))
        return []
    return parts


def whole_listing(io: FileIO, root: str) -> list[tuple[str, ObjectInfo]] | None:
    """Everything under `root` when it ends within one page (one request), else None."""
    page = list(itertools.islice(io.list(root), KEYS_PER_PAGE))
    return page if len(page) < KEYS_PER_PAGE else None


def _listed(
    listing: Iterable[tuple[str, ObjectInfo]], keys: list[str], progress: ProgressSink | None, phase: str
) -> dict[str, ObjectInfo | None]:
    """The keys (as given) a complete `listing` of their prefix settles: present ones with their
    info, absent ones as None. A listing that runs over its budget settles only what it saw present."""
    wanted = {canonical(uri): uri for uri in keys}
    budget = (math.ceil(LIST_OVERHEAD * len(keys) / KEYS_PER_PAGE) + LIST_BUDGET) * KEYS_PER_PAGE
    seen: dict[str, ObjectInfo | None] = {}
    for listed, (uri, info) in enumerate(listing, start=1):
        key = wanted.get(canonical(uri))
        if key is not None:
            seen[key] = info
            if progress:
                progress.advance(phase)
        if listed >= budget:
            return seen  # a prefix full of other objects: the rest are asked one by one
    for key in keys:
        if key not in seen:
            seen[key] = None  # a complete listing did not have it: absent (S3 lists consistently)
            if progress:
                progress.advance(phase)
    return seen
