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
from concurrent.futures import Executor
from typing import NamedTuple, TypedDict, Unpack

from icelake.aws.fileio import FileIO, ListedRange, ObjectInfo
from icelake.migrate.copy.table_storage import is_table_storage, without_table_storage
from icelake.migrate.plan_scan import map_ahead, map_in_chunks
from icelake.migrate.progress import Phase
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
# On S3 (`FileIO.listing_waits`), a listing still left with more wanted keys than this (a prefix of
# many small subdirectories, or of none: an unpartitioned table's data/) is listed as ranges of its
# sorted keys side by side, each from after the previous range's last key (StartAfter) to its own:
# one request more per range, and a thousand pages no longer wait for each other. A local walk,
# whose time is a stat per file, is listed in such ranges when worker processes are given (`cpu`).
RANGE_KEYS = 20 * KEYS_PER_PAGE
WALKS_IN_FLIGHT = 4  # threads waiting on ranges walked in worker processes (twice as many ranges held)


class _Listing(NamedTuple):
    """A listing of `prefix` that settles `keys`: those after `after` up to `until` when bounded."""

    prefix: str
    keys: list[str]
    after: str | None = None
    until: str | None = None


# What a key's entry in the answers holds until a listing or a HEAD settles it (compared by identity).
_UNSETTLED = ObjectInfo(size=-1)


class StatOptions(TypedDict, total=False):
    """How a stat of many uris (`stat_by_listing`, `inventory_near.stat_near`, `plan.reads.Stat`)
    may go about it: `phase` is told the progress; `full` asks present objects for everything a
    HEAD says; `cpu` are worker processes a CPU-bound listing may run in; `canonical_uris` says
    every uri is spelled canonically already. Each is optional (None or False when absent)."""

    phase: Phase | None
    full: bool
    cpu: Executor | None
    canonical_uris: bool


def stat_by_listing(
    io: FileIO, uris: Iterable[str], roots: Iterable[str], workers: int, **options: Unpack[StatOptions]
) -> dict[str, ObjectInfo | None]:
    """uri -> what the object is (None: absent), for every uri, in the order given; `roots` are
    the prefixes to list (the uris under none of them are asked one by one). `full`: present
    objects are then asked one by one too, for what a listing does not say. `cpu`: worker
    processes for listings that are CPU-bound (a local walk of many files, in ranges).
    `canonical_uris`: every uri is spelled canonically already (a plan's keys), and is not made
    canonical again (a million calls for a big table's source check)."""
    phase, full, cpu = options.get("phase"), options.get("full", False), options.get("cpu")
    canonical_uris = options.get("canonical_uris", False)
    # The answers, made first with the callers' own strings as keys, and filled in place: a
    # listed key is looked up here as the listing spells it, and an assignment to a key a dict
    # holds keeps the key it holds. No second million-key map (listed spelling -> caller's) is
    # needed, nor a million listed strings kept (those are the two costs of a big table's check).
    found: dict[str, ObjectInfo | None] = dict.fromkeys(uris, _UNSETTLED)
    if phase:
        phase.start(len(found))
    # S3 Tables' storage takes no listing: the keys there are asked one by one (HEAD), as keys
    # under no root are; a plan asks only about what it would copy or write.
    ordered_roots = sorted(
        {canonical(r).rstrip("/") for r in without_table_storage(list(roots))}, key=len, reverse=True
    )
    under, aliases = _group(found, ordered_roots, canonical_uris)
    answers = _Answers(found, aliases, phase)

    def list_part(part: _Listing) -> None:
        answers.settle_by(_listed(io, part, cpu), part.keys, _inner(part.prefix, ordered_roots))

    in_ranges = io.listing_waits or cpu is not None
    listings = [
        part
        for r, keys in under.items()
        for part in _listings(io, r, keys, answers, ordered_roots, not aliases, in_ranges)
    ]
    under.clear()  # the listings hold the keys now
    # Ranges walked in worker processes come back whole (20,000 keys each): only a few at a time.
    in_flight = workers if cpu is None else WALKS_IN_FLIGHT
    for _done in map_ahead(list_part, listings, max(1, min(in_flight, len(listings)))):
        pass
    unsettled = [u for u, info in found.items() if info is _UNSETTLED]  # alone, or over budget
    counted = set(unsettled)
    if full:
        unsettled += [u for u, info in found.items() if info is not None and info is not _UNSETTLED]
    found.update(zip(unsettled, stat_each(io, unsettled, workers, phase, counted), strict=True))
    # Every wanted key is settled, by a listing or a HEAD.
    assert all(info is not _UNSETTLED for info in found.values())
    return found


def stat_each(
    io: FileIO, uris: list[str], workers: int, phase: Phase | None, counted: set[str]
) -> list[ObjectInfo | None]:
    """A HEAD (`io.stat`) of each uri on `workers` threads, in order; `phase` advances for the
    uris in `counted` (those no listing settled, not those asked again for what a HEAD says)."""

    def head(uri: str) -> ObjectInfo | None:
        info = io.stat(uri)
        if phase and uri in counted:
            phase.advance()
        return info

    return map_in_chunks(head, uris, workers)


def _group(
    uris: Iterable[str], ordered_roots: list[str], canonical_uris: bool = False
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(root -> the uris to list it for, canonical -> the uris spelled otherwise). The uris under
    no root, or under one with too few of them to be worth a listing, are left to be asked one by
    one. `canonical_uris`: every uri is canonical (no aliases)."""
    under: dict[str, list[str]] = {r: [] for r in ordered_roots}
    aliases: dict[str, list[str]] = defaultdict(list)
    if canonical_uris and len(ordered_roots) == 1:  # a table's own location: one comprehension
        root, prefix = ordered_roots[0], ordered_roots[0] + "/"
        under[root] = [uri for uri in uris if uri.startswith(prefix) or uri == root]
    else:
        inside = [(r, r + "/", under[r]) for r in ordered_roots]
        for uri in uris:
            c = uri if canonical_uris else canonical(uri)
            if c != uri:
                aliases[c].append(uri)
            for root, prefix, keys in inside:  # the longest root first (is_under, inlined: a million calls)
                if c.startswith(prefix) or c == root:
                    keys.append(uri)
                    break
    for root in [r for r, keys in under.items() if len(keys) < MIN_KEYS_TO_LIST]:
        del under[root]
    return under, aliases


def _inner(root: str, ordered_roots: list[str]) -> list[str]:
    """The roots inside `root` (listed on their own, or asked one by one): a listing of `root`
    sees their objects but does not settle their keys."""
    return [r for r in ordered_roots if r != root and is_under(r, root)]


class _Answers:
    """The answers being filled in by listings that run side by side, each for keys of its own."""

    def __init__(
        self,
        found: dict[str, ObjectInfo | None],
        aliases: dict[str, list[str]],
        phase: Phase | None,
    ) -> None:
        self.found = found
        self.aliases = aliases
        self.phase = phase

    def settle_by(self, listing: Iterable[tuple[str, ObjectInfo]], keys: list[str], inner: list[str]) -> None:
        """Settles `keys` by a complete `listing` of their prefix (whose objects under the `inner`
        roots are not theirs): present ones with their info, absent ones as None. A listing that
        runs over its budget settles only what it saw present; the rest are asked one by one."""
        found = self.found
        # With no alias and no inner root, every wanted key is canonical and only a canonical
        # spelling is looked up, so a listed uri found as it is needs no canonical form.
        plain = not self.aliases and not inner
        if plain and self._settle_range(listing, keys):
            return
        budget = (math.ceil(LIST_OVERHEAD * len(keys) / KEYS_PER_PAGE) + LIST_BUDGET) * KEYS_PER_PAGE
        settled = 0  # told to the progress a page at a time: a bar's advance costs microseconds
        for listed, (uri, info) in enumerate(listing, start=1):
            # Most listed objects are wanted keys spelled as the listing spells them: one lookup.
            if plain and found.get(uri) is _UNSETTLED:
                found[uri] = info  # under the key the dict holds: the caller's string
                settled += 1
            else:
                settled += self._settle_spellings(canonical(uri), info, inner)
            if settled >= KEYS_PER_PAGE:
                self._advance(settled)
                settled = 0
            if listed >= budget:
                self._advance(settled)
                return  # a prefix full of other objects
        for key in keys:
            if found[key] is _UNSETTLED:
                found[key] = None  # a complete listing did not have it: absent (S3 lists consistently)
                settled += 1
        self._advance(settled)

    def _settle_range(self, listing: Iterable[tuple[str, ObjectInfo]], keys: list[str]) -> bool:
        """Settles `keys` at once if `listing` is a range walked in a worker process that holds
        just these keys, in their order (`_ranges` sorts them), rather than key by key: a million
        for a big table's check. False, settling nothing, if it is not."""
        if not (isinstance(listing, ListedRange) and listing.keys == keys):
            return False
        self.found.update(zip(keys, map(ObjectInfo, listing.sizes), strict=True))
        self._advance(len(keys))
        return True

    def _settle_spellings(self, c: str, info: ObjectInfo, inner: list[str]) -> int:
        """Settles the keys that spell the listed object `c` (canonical), unless it is under an
        `inner` root; returns how many were settled."""
        if inner and _under_any(c, inner):
            return 0
        found, settled = self.found, 0
        for key in (c, *self.aliases.get(c, ())):
            if found.get(key) is _UNSETTLED:
                found[key] = info
                settled += 1
        return settled

    def _advance(self, settled: int) -> None:
        if self.phase and settled:
            self.phase.advance(settled)


def _under_any(path: str, roots: list[str]) -> bool:
    return any(is_under(path, r) for r in roots)


def _listed(io: FileIO, part: _Listing, cpu: Executor | None) -> Iterable[tuple[str, ObjectInfo]]:
    """What `part` lists: everything under its prefix, or the objects of its range (a listing is
    in key order: the first object past `until` ends it, and no further page is asked)."""
    if part.until is None:
        return io.list(part.prefix, start_after=part.after)
    return io.list_range(part.prefix, part.after, part.until, cpu)


def _ranges(part: _Listing, keys_canonical: bool) -> list[_Listing]:
    """`part` as listings of RANGE_KEYS of its keys each, in key order (one listing if fewer). A
    range never ends between two spellings of one object: the range that lists it settles both."""
    keys = part.keys
    if len(keys) <= RANGE_KEYS:
        return [part]
    spelled = (lambda k: k) if keys_canonical else canonical
    keys.sort(key=None if keys_canonical else canonical)
    ranges: list[_Listing] = []
    start, after = 0, None
    while start < len(keys):
        end = min(start + RANGE_KEYS, len(keys))
        while end < len(keys) and spelled(keys[end]) == spelled(keys[end - 1]):
            end += 1
        until = spelled(keys[end - 1])
        ranges.append(_Listing(part.prefix, keys[start:end], after, until))
        start, after = end, until
    return ranges


def _split_listing(root: str, keys: list[str], keys_canonical: bool) -> list[tuple[str, list[str]]]:
    """(prefix, its wanted keys) to list: `root` itself, or its subdirectories (recursively) when it
    has more than SPLIT_LISTING_AT wanted keys, all of them in subdirectories, a page's worth per
    subdirectory on average. A table's data/ of a million files in a thousand partitions is then a
    thousand short listings that run in parallel rather than a thousand pages in a row.
    `keys_canonical`: every key is spelled canonically (none is made canonical again)."""
    if len(keys) <= SPLIT_LISTING_AT:
        return [(root, keys)]
    start = len(root) + 1
    spelled = keys if keys_canonical else [canonical(k) for k in keys]
    if (end := spelled[0].find("/", start)) >= 0:
        child = spelled[0][: end + 1]  # root/child/: when every key is in it, list it alone
        if all(c.startswith(child) for c in spelled):
            return _split_listing(child[:-1], keys, keys_canonical)
    children: dict[str, list[str]] = {}
    most = len(keys) // KEYS_PER_PAGE  # more subdirectories than pages: not split (see below)
    for uri, c in zip(keys, spelled, strict=True):
        end = c.find("/", start)
        if end < 0:
            return [(root, keys)]  # a wanted key directly in root: only root's listing has it
        group = children.get(name := c[start:end])
        if group is None:
            if len(children) == most:  # known before every key is grouped (5,000 partitions of 200)
                return [(root, keys)]
            group = children[name] = []
        group.append(uri)
    if len(keys) < KEYS_PER_PAGE * len(children):
        return [(root, keys)]
    return [
        part
        for child, group in children.items()
        for part in _split_listing(f"{root}/{child}", group, keys_canonical)
    ]


def _listings(
    io: FileIO,
    root: str,
    keys: list[str],
    answers: _Answers,
    ordered_roots: list[str],
    keys_canonical: bool,
    in_ranges: bool,
) -> list[_Listing]:
    """The listings that settle `keys` under `root`: its subdirectories' when it has many keys
    (`_split_listing`), each in ranges when it still has many and `in_ranges` (`_ranges`), unless
    one page of `root` is all there is, which then settles them at once (the empty target of a
    first migration: one request, not one a partition)."""
    parts = [_Listing(prefix, part_keys) for prefix, part_keys in _split_listing(root, keys, keys_canonical)]
    if in_ranges:
        parts = [ranged for part in parts for ranged in _ranges(part, keys_canonical)]
    if len(parts) > 1 and (page := whole_listing(io, root)) is not None:
        answers.settle_by(page, keys, _inner(root, ordered_roots))
        return []
    return parts


def whole_listing(io: FileIO, root: str) -> list[tuple[str, ObjectInfo]] | None:
    """Everything under `root` when it ends within one page (one request), else None (also when
    `root` takes no listing: S3 Tables' storage)."""
    if is_table_storage(root):
        return None
    page = list(itertools.islice(io.list(root), KEYS_PER_PAGE))
    return page if len(page) < KEYS_PER_PAGE else None
