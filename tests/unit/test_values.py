"""Validate's row comparison: exact, NaN-safe, order-free, and total over mixed and NULL values."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from icelake.migrate.check.values import compare_rows, row_key, value_key

NAN = float("nan")


def test_nan_equals_nan_and_the_sign_of_zero_counts() -> None:
    assert value_key(NAN) == value_key(float("nan"))
    assert value_key(-NAN) == value_key(NAN)  # one NaN, whatever its sign or payload bits
    assert value_key(-0.0) != value_key(0.0)
    assert value_key(math.inf) != value_key(-math.inf)
    assert compare_rows([(1, NAN)], [(1, NAN)]).equal
    assert not compare_rows([(1, -0.0)], [(1, 0.0)]).equal


def test_types_are_told_apart_and_nulls_are_values() -> None:
    assert value_key(1) != value_key(1.0) != value_key(True)
    assert value_key(None) != value_key(0)
    assert value_key(Decimal("1.10")) != value_key(Decimal("1.1"))  # the scale is part of the value
    assert value_key(dt.date(2026, 1, 1)) != value_key("2026-01-01")
    assert compare_rows([(None, "a"), (1, None)], [(1, None), (None, "a")]).equal


def test_duplicates_are_counted_and_reported_per_side() -> None:
    diff = compare_rows([(1,), (1,), (2,)], [(1,), (2,), (3,)])
    assert (diff.only_in_source, diff.only_in_target) == (1, 1)
    assert not diff.equal


def test_nested_values() -> None:
    a = [({"x": 1, "y": [NAN, None]}, [("k", -0.0)])]
    assert compare_rows(a, [({"x": 1, "y": [NAN, None]}, [("k", -0.0)])]).equal
    assert not compare_rows(a, [({"x": 1, "y": [NAN, None]}, [("k", 0.0)])]).equal


values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(), st.binary())


@given(st.lists(st.tuples(values, values), max_size=20), st.randoms())
def test_any_permutation_compares_equal(rows: list[tuple[object, object]], rnd: object) -> None:
    shuffled = list(rows)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert compare_rows(rows, shuffled).equal
    assert sorted(map(row_key, rows), key=repr) == sorted(map(row_key, shuffled), key=repr)
