"""`stat_near`: what exists among a few keys of a big directory, listed around the keys only,
and the same answers `stat_by_listing` (listing everything) gives."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from icelake.aws.fileio import LocalFileIO, ObjectInfo
from icelake.migrate.inventory import KEYS_PER_PAGE, stat_by_listing
from icelake.migrate.inventory_near import DENSE_PAGE, stat_near


class Counting(LocalFileIO):
    """Counts requests as S3 would be sent them: a HEAD per stat, a LIST per page of keys."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def stat(self, uri: str) -> ObjectInfo | None:
        self.calls["HEAD"] += 1
        return super().stat(uri)

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        self.calls["LIST"] += 1
        for n, item in enumerate(super().list(prefix, start_after), start=1):
            if n % KEYS_PER_PAGE == 0:
                self.calls["LIST"] += 1
            yield item


def _table(root: Path, old: int, new: int) -> tuple[list[str], list[str]]:
    """A directory of `old` files, and `new` more written together after them (a commit)."""
    data = root / "data"
    data.mkdir(parents=True)
    for i in range(old):
        (data / f"a-{i:06d}.parquet").write_bytes(b"x")
    for i in range(new):
        (data / f"b-{i:06d}.parquet").write_bytes(b"yy")
    return [f"file://{data}/a-{i:06d}.parquet" for i in range(old)], [
        f"file://{data}/b-{i:06d}.parquet" for i in range(new)
    ]


def test_new_files_of_a_big_directory_cost_their_own_pages(tmp_path: Path) -> None:
    old, new = _table(tmp_path, old=5000, new=1500)
    absent = [f"file://{tmp_path}/data/b-{i:06d}.gone" for i in range(3)] + [
        f"file://{tmp_path}/new/x.parquet"
    ]
    io = Counting()

    found = stat_near(io, new + absent, [], workers=4)

    # The 1,500 new files are settled by the pages that hold them, not by the 5,000 old ones
    assert io.calls == {"LIST": 3}
    assert all(found[u] == ObjectInfo(size=2) for u in new)
    assert all(found[u] is None for u in absent)
    # and the answers are the ones a listing of the whole table gives
    assert found == stat_by_listing(LocalFileIO(), new + absent, [f"file://{tmp_path}"], workers=2)
    assert old  # untouched


def test_keys_scattered_too_thinly_are_asked_one_by_one(tmp_path: Path) -> None:
    old, _new = _table(tmp_path, old=4 * KEYS_PER_PAGE, new=0)
    scattered = old[:: KEYS_PER_PAGE // 2]  # two a page: a page would settle fewer than DENSE_PAGE
    assert len(scattered) < DENSE_PAGE * 4
    io = Counting()

    found = stat_near(io, scattered, [], workers=4)

    # one page is listed, then the rest are asked alone: never the whole directory
    assert io.calls["LIST"] <= 2
    assert io.calls["HEAD"] == len(scattered) - 2
    assert all(found[u] == ObjectInfo(size=1) for u in scattered)


def test_full_asks_present_keys_again(tmp_path: Path) -> None:
    _old, new = _table(tmp_path, old=10, new=3)
    io = Counting()
    found = stat_near(io, new, [], workers=2, full=True)
    assert io.calls == {"LIST": 1, "HEAD": 3}
    assert all(info is not None and info.size == 2 for info in found.values())
