"""icelake.heap.roomy_gc: the roomy thresholds while any block holds them, then what was before."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from icelake.heap import ROOMY_GC_THRESHOLDS, roomy_gc

DEFAULTS = (700, 10, 10)


@pytest.fixture
def defaults() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(*DEFAULTS)
    yield
    gc.set_threshold(*saved)


def test_overlapping_blocks_keep_the_roomy_thresholds_until_the_last_one_ends(defaults: None) -> None:
    first, second = ExitStack(), ExitStack()
    first.enter_context(roomy_gc())
    assert gc.get_threshold() == ROOMY_GC_THRESHOLDS
    second.enter_context(roomy_gc())  # another thread's verify, say, started before the first ended
    first.close()
    assert gc.get_threshold() == ROOMY_GC_THRESHOLDS  # the second still runs
    second.close()
    assert gc.get_threshold() == DEFAULTS


def test_the_thresholds_come_back_when_the_block_raises(defaults: None) -> None:
    with pytest.raises(RuntimeError), roomy_gc():
        raise RuntimeError("a failed check")
    assert gc.get_threshold() == DEFAULTS
