"""`stat_by_listing`: listings settle what exists; HEADs only for what a listing cannot settle."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import pytest

from icelake.aws.fileio import LocalFileIO, ObjectInfo
from icelake.migrate import inventory
from icelake.migrate.copy.cpu_pool import cpu_pool
from icelake.migrate.inventory import (
    KEYS_PER_PAGE,
    LIST_BUDGET,
    LIST_OVERHEAD,
    MIN_KEYS_TO_LIST,
    stat_by_listing,
)
from icelake.migrate.progress import Phase


class Counting(LocalFileIO):
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def stat(self, uri: str) -> ObjectInfo | None:
        self.calls["stat"] += 1
        return super().stat(uri)

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        self.calls["list"] += 1
        yield from super().list(prefix, start_after)


def _files(root: Path, names: list[str], size: int = 3) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / name).write_bytes(b"x" * size)
    return [f"file://{root / n}" for n in names]


def test_a_listing_settles_present_and_absent_keys_without_a_head(tmp_path: Path) -> None:
    present = _files(tmp_path / "t" / "data", [f"{i}.parquet" for i in range(MIN_KEYS_TO_LIST)])
    absent = [f"file://{tmp_path}/t/data/gone-{i}.parquet" for i in range(5)]
    io = Counting()
    found = stat_by_listing(io, present + absent, [f"file://{tmp_path}/t"], workers=2)
    assert io.calls == {"list": 1}
    assert all(found[u] == ObjectInfo(size=3) for u in present)
    assert all(found[u] is None for u in absent)


def test_a_few_keys_are_asked_one_by_one_and_full_asks_present_keys_again(tmp_path: Path) -> None:
    few = [*_files(tmp_path / "meta", ["v1.json", "v2.json"]), f"file://{tmp_path}/meta/v0.json"]
    io = Counting()
    found = stat_by_listing(io, few, [f"file://{tmp_path}/meta"], workers=2)
    assert io.calls == {"stat": 3} and found[few[2]] is None and found[few[0]] is not None
    many = _files(tmp_path / "t", [f"{i}" for i in range(MIN_KEYS_TO_LIST)])
    io = Counting()
    stat_by_listing(io, [*many, f"file://{tmp_path}/t/absent"], [f"file://{tmp_path}/t"], 2, full=True)
    assert io.calls == {"list": 1, "stat": len(many)}  # the absent key needs no HEAD


def test_a_prefix_full_of_other_objects_stops_listing_and_asks_the_rest(tmp_path: Path) -> None:
    budget = (-(-LIST_OVERHEAD * MIN_KEYS_TO_LIST // KEYS_PER_PAGE) + LIST_BUDGET) * KEYS_PER_PAGE
    others = _files(tmp_path / "shared" / "a", [f"o{i}" for i in range(budget + 10)])
    wanted = _files(tmp_path / "shared" / "z", [f"w{i}" for i in range(MIN_KEYS_TO_LIST)])
    absent = f"file://{tmp_path}/shared/z/missing"
    io = Counting()
    found = stat_by_listing(io, [*wanted, absent], [f"file://{tmp_path}/shared"], workers=2)
    assert others and io.calls["list"] == 1
    assert found[absent] is None and all(found[u] == ObjectInfo(size=3) for u in wanted)
    assert io.calls["stat"] >= 1  # what the stopped listing had not reached was asked one by one


class Prefixes(LocalFileIO):
    """Records the prefix of every listing."""

    def __init__(self) -> None:
        self.listed: list[str] = []

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        self.listed.append(prefix)
        yield from super().list(prefix, start_after)


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing split at a small scale: pages of 10 keys, split above 40 wanted keys."""
    monkeypatch.setattr(inventory, "KEYS_PER_PAGE", 10)
    monkeypatch.setattr(inventory, "SPLIT_LISTING_AT", 40)


def _partitions(data: Path, days: int = 4, files: int = 30) -> list[str]:
    names = [f"{i}.parquet" for i in range(files)]
    return [uri for day in range(days) for uri in _files(data / f"day={day}", names)]


@pytest.mark.usefixtures("small_pages")
def test_a_big_prefix_is_listed_as_its_subdirectories(tmp_path: Path) -> None:
    # Given a table whose data files sit in 4 partition directories of 30, and whose metadata
    # directory holds 12 files
    root = tmp_path / "t"
    present = _partitions(root / "data") + _files(root / "metadata", [f"m{i}.avro" for i in range(12)])
    absent = [f"file://{root}/data/day=1/gone.parquet", f"file://{root}/data/day=9/gone.parquet"]
    io = Prefixes()
    # When what exists is asked
    found = stat_by_listing(io, present + absent, [f"file://{root}"], workers=4)
    # Then every key is settled as it is
    assert all(found[u] == ObjectInfo(size=3) for u in present)
    assert all(found[u] is None for u in absent)
    # by a page of the root (more than a page: split), then one listing per partition directory
    # (side by side) and one of the metadata directory
    days = {f"file://{root}/data/day={d}" for d in (0, 1, 2, 3)}
    assert io.listed[0] == f"file://{root}"
    assert sorted(io.listed[1:]) == sorted(days | {f"file://{root}/data/day=9", f"file://{root}/metadata"})


@pytest.mark.usefixtures("small_pages")
def test_an_empty_target_is_settled_by_one_page_not_a_listing_per_partition(tmp_path: Path) -> None:
    # Given the keys of 4 partitions of 30 files that a first migration will write, and a target
    # that holds only 3 unrelated objects so far
    root = tmp_path / "t"
    wanted = [u.replace("/src/", "/t/") for u in _partitions(tmp_path / "src" / "data")]
    others = _files(root / "metadata", ["a", "b", "c"])
    io = Prefixes()
    # When what exists is asked
    found = stat_by_listing(io, wanted, [f"file://{root}"], workers=4)
    # Then the one page of the root that holds everything answers: all absent, one listing
    assert others and found == dict.fromkeys(wanted)
    assert io.listed == [f"file://{root}"]


@pytest.mark.usefixtures("small_pages")
def test_a_prefix_with_wanted_keys_of_its_own_is_listed_whole(tmp_path: Path) -> None:
    # Given the same partitions plus one wanted file directly in data/
    root = tmp_path / "t"
    present = _partitions(root / "data") + _files(root / "data", ["loose.parquet"])
    io = Prefixes()
    found = stat_by_listing(io, present, [f"file://{root}"], workers=4)
    # Then data/ is listed once, as only its own listing can say whether the loose file exists
    assert all(found[u] == ObjectInfo(size=3) for u in present)
    assert io.listed == [f"file://{root}/data"]


@pytest.mark.usefixtures("small_pages")
def test_small_subdirectories_are_not_split(tmp_path: Path) -> None:
    # Given 60 wanted keys spread over 12 directories (5 each: less than a page per directory)
    root = tmp_path / "t"
    present = _partitions(root, days=12, files=5)
    io = Prefixes()
    found = stat_by_listing(io, present, [f"file://{root}"], workers=4)
    # Then one listing of the root: splitting would cost more requests than it saves pages
    assert all(found[u] == ObjectInfo(size=3) for u in present)
    assert io.listed == [f"file://{root}"]


class Ranges(LocalFileIO):
    """Records where every listing starts and how many objects each read; lists as S3 does
    (`listing_waits`: its pages wait on the network)."""

    listing_waits = True

    def __init__(self) -> None:
        self.listed: list[tuple[str, str | None]] = []
        self.read: list[int] = []

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        self.listed.append((prefix, start_after))
        self.read.append(0)
        at = len(self.read) - 1
        for item in super().list(prefix, start_after):
            self.read[at] += 1
            yield item


def _unpartitioned(tmp_path: Path) -> tuple[Path, list[str], list[str], str, list[str]]:
    """(data directory, its 100 files, 3 absent keys, a plain-path alias of present[23], the
    wanted keys: present[:90] in reverse, the absent ones and the alias); 7 unwanted objects sort
    after every wanted key."""
    data = tmp_path / "t" / "data"
    present = _files(data, [f"{i:03}.parquet" for i in range(100)])
    _files(data, [f"zz-{i}" for i in range(7)])
    absent = [f"file://{data}/{i:03}-gone.parquet" for i in (5, 50, 99)]
    alias = f"{data}/023.parquet"  # a plain path: the same object as present[23]
    return data, present, absent, alias, [*reversed(present[:90]), *absent, alias]


@pytest.mark.usefixtures("small_pages")
def test_a_prefix_of_many_keys_and_no_subdirectories_is_listed_in_ranges_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inventory, "RANGE_KEYS", 25)
    # Given an unpartitioned data directory of 100 files, 10 of them not wanted (deleted), 7 unwanted
    # objects after the last wanted key, one wanted key spelled twice, and 3 wanted keys that do not exist
    data, present, absent, alias, wanted = _unpartitioned(tmp_path)
    io = Ranges()
    # When what exists is asked
    found = stat_by_listing(io, wanted, [f"file://{tmp_path}/t"], workers=4)
    # Then every key is settled as it is, by listings alone
    assert all(found[u] == ObjectInfo(size=3) for u in [*present[:90], alias])
    assert all(found[u] is None for u in absent)
    # by ranges of 25 wanted keys in key order, each from the last key of the one before, none
    # splitting the two spellings of one object, and the last stopping at the last wanted key
    starts = [after for prefix, after in io.listed if prefix == f"file://{data}"]
    assert starts == [None, present[23], present[48], present[72]]
    # each object read once, but the one that ends a range (the first listing is the page of the
    # root that tells a big prefix from one that ends within a page)
    assert io.listed[0] == (f"file://{tmp_path}/t", None)
    assert sum(io.read[1:]) <= 100 + len(starts)
    # A local walk (CPU-bound: threads would only contend) lists the prefix once, from its start
    local = Prefixes()
    assert stat_by_listing(local, wanted, [f"file://{tmp_path}/t"], workers=4) == found
    assert local.listed == [f"file://{data}"]


class WalkedElsewhere(Prefixes):
    """Records the ranges handed to worker processes (`list_range` with `cpu`)."""

    def __init__(self) -> None:
        super().__init__()
        self.ranges: list[tuple[str | None, str]] = []

    def list_range(
        self, prefix: str, start_after: str | None, until: str, cpu: Executor | None = None
    ) -> Iterable[tuple[str, ObjectInfo]]:
        if cpu is not None:
            self.ranges.append((start_after, until))
        return super().list_range(prefix, start_after, until, cpu)


@pytest.mark.usefixtures("small_pages")
def test_a_local_walk_given_worker_processes_is_walked_there_in_ranges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inventory, "RANGE_KEYS", 25)
    # Given the unpartitioned directory of the ranges test above, and what one walk here finds in it
    _data, present, absent, alias, wanted = _unpartitioned(tmp_path)
    one_walk = stat_by_listing(Prefixes(), wanted, [f"file://{tmp_path}/t"], workers=4)
    # When what exists is asked with two worker processes
    io = WalkedElsewhere()
    with cpu_pool(2) as cpu:
        assert cpu is not None
        found = stat_by_listing(io, wanted, [f"file://{tmp_path}/t"], workers=4, cpu=cpu)
    # Then the answers are those of one walk in this process, key for key and in the same order
    assert list(found.items()) == list(one_walk.items())
    assert all(found[u] == ObjectInfo(size=3) for u in [*present[:90], alias])
    assert all(found[u] is None for u in absent)
    # found by ranges of 25 wanted keys (as S3 is listed) walked in the workers, each from the
    # last key of the one before to its own, the last one ending at the last wanted key; this
    # process only listed the root's first page
    starts = [None, present[23], present[48], present[72]]
    assert io.ranges == list(zip(starts, [*starts[1:], absent[-1]], strict=True))
    assert io.listed == [f"file://{tmp_path}/t"]


@pytest.mark.usefixtures("small_pages")
def test_ranges_walked_elsewhere_that_hold_just_the_wanted_keys_are_settled_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inventory, "RANGE_KEYS", 25)
    # Given an unpartitioned directory whose 100 files are all wanted (a table's data, as planned)
    present = _files(tmp_path / "t" / "data", [f"{i:03}.parquet" for i in range(100)])
    wanted = list(reversed(present))
    one_walk = stat_by_listing(Prefixes(), wanted, [f"file://{tmp_path}/t"], workers=4)
    whole: list[bool] = []
    settle_range = inventory._Answers._settle_range

    def recorded(answers: Any, listing: Any, keys: list[str]) -> bool:
        whole.append(settled := settle_range(answers, listing, keys))
        return settled

    monkeypatch.setattr(inventory._Answers, "_settle_range", recorded)
    # When what exists is asked with two worker processes
    with cpu_pool(2) as cpu:
        assert cpu is not None
        found = stat_by_listing(WalkedElsewhere(), wanted, [f"file://{tmp_path}/t"], workers=4, cpu=cpu)
    # Then the answers are those of one walk here, key for key, in order, keyed by the caller's strings
    assert list(found.items()) == list(one_walk.items())
    assert all(key is given for key, given in zip(found, wanted, strict=True))
    assert all(info == ObjectInfo(size=3) for info in found.values())
    # And each of the four ranges was settled whole, as it came back
    assert whole == [True] * 4


def test_the_answers_are_keyed_by_the_callers_own_strings_in_their_order(tmp_path: Path) -> None:
    # Given wanted keys made as new strings (equal to what the listing yields, not the same objects)
    present = _files(tmp_path / "t", [f"{i}.parquet" for i in range(MIN_KEYS_TO_LIST)])
    wanted = ["".join(u) for u in reversed(present)] + [f"file://{tmp_path}/t/gone"]
    found = stat_by_listing(Counting(), wanted, [f"file://{tmp_path}/t"], workers=2)
    # Then the answers hold the caller's strings, not the listing's (a million of those would be
    # a second copy of every path of a big table), in the order they were given
    assert list(found) == wanted
    assert all(key is given for key, given in zip(found, wanted, strict=True))


def test_keys_spelled_otherwise_are_settled_by_the_listing_each_as_spelled(tmp_path: Path) -> None:
    # Given the same file asked as file:///x and as /x and file:/x, among enough keys to be listed
    present = _files(tmp_path / "t", [f"{i}.parquet" for i in range(MIN_KEYS_TO_LIST)])
    bare = f"{tmp_path}/t/0.parquet"
    spellings = [bare, f"file:{bare}", f"file:{tmp_path}/t/gone"]
    io = Counting()
    found = stat_by_listing(io, [*present, *spellings], [f"file://{tmp_path}/t"], workers=2)
    # Then one listing settles every spelling: present ones with their size, the absent one as None
    assert io.calls == {"list": 1}
    assert found[bare] == found[f"file:{bare}"] == found[present[0]] == ObjectInfo(size=3)
    assert found[f"file:{tmp_path}/t/gone"] is None


def test_a_listing_does_not_settle_the_keys_of_a_root_inside_its_own(tmp_path: Path) -> None:
    # Given two roots, one inside the other: the inner one holds too few wanted keys to be listed
    # (they are asked one by one) and the outer one enough
    outer = _files(tmp_path / "t", [f"{i}.parquet" for i in range(MIN_KEYS_TO_LIST)])
    inner = _files(tmp_path / "t" / "data", ["a.parquet", "b.parquet"])
    io = Counting()
    found = stat_by_listing(
        io,
        [*outer, *inner, f"file://{tmp_path}/t/data/gone"],
        [f"file://{tmp_path}/t", f"file://{tmp_path}/t/data"],
        2,
    )
    # Then the outer listing (which sees the inner files) leaves the inner keys to their HEADs,
    # as their root says, and every key is answered as it is
    assert io.calls == {"list": 1, "stat": 3}
    assert all(found[u] == ObjectInfo(size=3) for u in [*outer, *inner])
    assert found[f"file://{tmp_path}/t/data/gone"] is None


class Tally:
    """A progress sink that keeps what it was told."""

    def __init__(self) -> None:
        self.totals: dict[str, int] = {}
        self.done: Counter[str] = Counter()

    def start(self, phase: str, total: int) -> None:
        self.totals[phase] = total

    def advance(self, phase: str, amount: int = 1) -> None:
        self.done[phase] += amount


@pytest.mark.usefixtures("small_pages")
def test_progress_counts_every_key_once_however_it_is_settled(tmp_path: Path) -> None:
    # Given keys settled every way: split listings (present and absent), HEADs under a small
    # root, a listing stopped by its budget, and a key asked twice
    root = tmp_path / "t"
    present = _partitions(root / "data", days=4, files=30)
    few = _files(root / "small", ["a", "b"])
    crowded = _files(tmp_path / "crowded" / "a", [f"o{i}" for i in range(200)])
    late = _files(tmp_path / "crowded" / "z", [f"w{i}" for i in range(MIN_KEYS_TO_LIST)])
    absent = [f"file://{root}/data/day=1/gone.parquet"]
    keys = [*present, *few, *late, *absent, present[0]]
    roots = [f"file://{root}/data", f"file://{root}/small", f"file://{tmp_path}/crowded"]
    tally = Tally()
    found = stat_by_listing(Counting(), keys, roots, 4, phase=Phase(tally, "check"))
    # Then the bar ends exactly at its total: each distinct key told once
    assert crowded and len(found) == len(keys) - 1
    assert tally.totals == {"check": len(found)} and tally.done == {"check": len(found)}


@pytest.mark.parametrize("roots", [["t"], ["t", "t/data/b"]], ids=["one root", "nested roots"])
def test_uris_known_canonical_are_settled_as_if_made_canonical(tmp_path: Path, roots: list[str]) -> None:
    # Given canonical keys under a table's root (two directories), some absent, one outside it
    # and one that is the root itself
    wanted = [
        *_files(tmp_path / "t" / "data" / "a", [f"{i}.parquet" for i in range(MIN_KEYS_TO_LIST)], size=5),
        *_files(tmp_path / "t" / "data" / "b", [f"{i}.parquet" for i in range(MIN_KEYS_TO_LIST)], size=7),
        *[f"file://{tmp_path}/t/data/a/gone-{i}.parquet" for i in range(3)],
        *_files(tmp_path / "elsewhere", ["x.parquet"]),
        f"file://{tmp_path}/t",
    ]
    listed = [f"file://{tmp_path}/{r}" for r in roots]
    # When they are settled as known canonical, and as keys made canonical again
    io, io_made = Counting(), Counting()
    known = stat_by_listing(io, wanted, listed, workers=2, canonical_uris=True)
    made = stat_by_listing(io_made, wanted, listed, workers=2)
    # Then the answers are the same, by the same requests, and right
    assert known == made and io.calls == io_made.calls
    assert list(known) == wanted
    assert sum(info is None for info in known.values()) == 4  # the 3 gone, and the root (a directory)
    assert {info.size for info in known.values() if info} == {3, 5, 7}
    assert io.calls["stat"] == 1  # the one outside every root, asked by itself
