"""icelake.heap.roomy_gc: the roomy thresholds while any block holds them, then what was before."""

from __future__ import annotations

import gc
from contextlib import ExitStack

import pytest

from icelake.heap import ROOMY_GC_THRESHOLDS, roomy_gc


def test_overlapping_blocks_keep_the_roomy_thresholds_until_the_last_one_ends(
    python_gc_defaults: tuple[int, int, int],
) -> None:
    first, second = ExitStack(), ExitStack()
    first.enter_context(roomy_gc())
    assert gc.get_threshold() == ROOMY_GC_THRESHOLDS
    second.enter_context(roomy_gc())  # another thread's verify, say, started before the first ended
    first.close()
    assert gc.get_threshold() == ROOMY_GC_THRESHOLDS  # the second still runs
    second.close()
    assert gc.get_threshold() == python_gc_defaults


def test_the_thresholds_come_back_when_the_block_raises(python_gc_defaults: tuple[int, int, int]) -> None:
    with pytest.raises(RuntimeError), roomy_gc():
        raise RuntimeError("a failed check")
    assert gc.get_threshold() == python_gc_defaults
