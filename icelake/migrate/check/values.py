"""Exact, order-free comparison of rows read back from two tables.

Python's `==` says NaN != NaN (a correct copy of a table holding NaN "differs from itself") and
0.0 == -0.0 (a copy that lost a sign would pass), and sorting rows of mixed or NULL values raises
or depends on repr. A copy must be exact, so every value maps to a key that is equal exactly when
the stored values are: floats by their IEEE-754 bits, which is also how Iceberg and Spark order
them (Java's Double.compare: NaN equals NaN, -0.0 sorts before 0.0). Rows are then compared as
multisets of keys, which needs no order at all.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Key = tuple[Any, ...]


_SCALAR_TAGS: dict[type, int] = {type(None): 0, bool: 1, int: 2, str: 4}


def value_key(value: Any) -> Key:
    """A hashable key, equal for two values exactly when a byte-exact copy would keep them equal."""
    tag = _SCALAR_TAGS.get(type(value))  # exact types: a bool is not the int 1
    if tag is not None:
        return (tag, value)
    if isinstance(value, float):
        # One NaN spelling: engines may rewrite a NaN's payload bits, Iceberg treats all as one.
        return (3, b"nan" if math.isnan(value) else struct.pack(">d", value))
    if isinstance(value, bytes | bytearray | memoryview):
        return (5, bytes(value))
    if isinstance(value, Mapping):  # a struct (field order is the schema's) or a map
        return (6, tuple((value_key(k), value_key(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):  # a list, or a map read as (key, value) pairs
        return (7, tuple(value_key(v) for v in value))
    # Decimals, dates, times and timestamps: their type and exact text (Decimal keeps its scale).
    return (8, type(value).__name__, str(value))


def row_key(row: Iterable[Any]) -> Key:
    return tuple(value_key(v) for v in row)


@dataclass(frozen=True)
class RowDiff:
    only_in_source: int
    only_in_target: int

    @property
    def equal(self) -> bool:
        return self.only_in_source == 0 and self.only_in_target == 0


def compare_rows(source: Iterable[Iterable[Any]], target: Iterable[Iterable[Any]]) -> RowDiff:
    """How many rows (counted with duplicates) one side holds that the other does not."""
    a = Counter(row_key(r) for r in source)
    b = Counter(row_key(r) for r in target)
    return RowDiff(only_in_source=sum((a - b).values()), only_in_target=sum((b - a).values()))
