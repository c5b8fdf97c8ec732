"""Copies ordered across prefixes (copy_schedule) and S3 requests paced per prefix (aws.pacing)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from icelake.aws import pacing
from icelake.aws.pacing import CUT, GROWTH, MIN_RATE, Pacer, lane_of
from icelake.migrate.copy.schedule import copy_concurrency, hot_share, spread_by_prefix


def _paths(counts: dict[str, int]) -> list[str]:
    return [f"s3://b/t/data/{p}/{i:05d}.parquet" for p, n in counts.items() for i in range(n)]


def test_every_prefix_is_spread_over_the_whole_run() -> None:
    paths = _paths({"hot": 300, "a": 100, "b": 100, "c": 10})
    spread = spread_by_prefix(paths)
    assert sorted(spread) == sorted(paths)
    for tenth in range(10):  # each tenth of the run holds each prefix's share, to within a file
        window = Counter(p.split("/")[-2] for p in spread[tenth * 51 : (tenth + 1) * 51])
        assert abs(window["hot"] - 30) <= 1 and abs(window["a"] - 10) <= 1 and window["c"] <= 1
    hot = [p for p in spread if "/hot/" in p]
    assert hot == sorted(hot)  # a prefix's own files keep their order


def test_the_busiest_prefix_sizes_the_concurrency() -> None:
    assert hot_share(_paths({"hot": 30, "a": 20, "b": 20, "c": 30})) == (4, 0.3)
    # S3 takes 3,500 writes a second per prefix: at 30 % in one prefix, 11,667 copies a second,
    # each a CopyObject of 40 ms: 467 in flight; one prefix alone: 140.
    assert copy_concurrency(0.3) == 467
    assert copy_concurrency(1.0) == 140
    assert copy_concurrency(0.5, limit_per_s=200, seconds_per_copy=0.1) == 40


def test_a_slowdown_paces_its_prefix_and_no_other(tmp_path: Path) -> None:
    p = Pacer(str(tmp_path / "lanes"))
    hot = lane_of("PUT", "http://s3.local/bucket/t/data/hot/f1.parquet")
    cold = lane_of("PUT", "http://s3.local/bucket/t/data/cold/f1.parquet")
    for _ in range(50):
        assert p.wait_turn(hot) == 0.0  # unthrottled until S3 says otherwise
    assert p.answered(hot, 200) is None
    assert p.answered(hot, 503) == 0.0  # retried, paced, whatever botocore's attempt count
    rate = p.rate(hot)
    assert MIN_RATE <= rate <= CUT * 50 / 0.05  # cut from the rate it was sent at (50 in >= 0.05 s)
    waits = [p.wait_turn(hot) for _ in range(10)]
    assert 0 < waits[0] < waits[-1]  # queued one slot after another
    assert p.rate(hot) == pytest.approx(rate + 10 * GROWTH)  # and growing back with every send
    p.answered(hot, 503)  # the same overshoot: no second cut
    assert p.rate(hot) == pytest.approx(rate + 10 * GROWTH)
    assert p.wait_turn(cold) == 0.0
    # reads of the same prefix are another lane
    assert p.wait_turn(lane_of("HEAD", "http://s3.local/bucket/t/data/hot/f1.parquet")) == 0.0


def test_processes_share_a_prefix_pace_through_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "lanes")
    one, other = Pacer(path), Pacer(path)  # as two task processes of one executor map it
    lane = lane_of("PUT", "http://s3.local/bucket/t/data/hot/f.parquet")
    for _ in range(20):
        one.wait_turn(lane)
    one.answered(lane, 503)
    assert other.wait_turn(lane) > 0


def test_a_listing_is_paced_by_its_prefix() -> None:
    assert lane_of("GET", "http://h/bucket?list-type=2&prefix=t%2Fdata%2Fhot%2F") == b"r|h|/bucket/t/data/hot"


def test_the_lanes_file_can_be_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pacing.ENV_FILE, str(tmp_path / "named"))
    monkeypatch.setattr(pacing, "_PACER", None)
    assert pacing.pacer().path == str(tmp_path / "named")
    assert (tmp_path / "named").stat().st_size == pacing.SLOTS * pacing.SLOT.size
