"""In what order the copies go, and how many go at once: S3 limits each key prefix, not a table.

A plan lists its copies in key order, prefix after prefix, so copying in that order sends every
request to one prefix while the others wait: the hot prefix is pushed into SlowDowns early and the
small ones sit idle. `spread_by_prefix` orders them so that each prefix's files are spread evenly
over the whole run (file i of a prefix of n files at i/n of the way): every prefix is busy from
start to end, each at its share of the table's rate, and they all finish together.

With that order, the busiest prefix gets `hot_share` of every request, so the table's rate stops
growing once that prefix reaches its limit: `limit / hot_share` copies a second. `copy_concurrency`
is how many copies in flight reach that rate; more would only queue on the hot prefix.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from icelake.migrate.copy.objects import REQUESTS_PER_COPY

# S3's documented request rates per prefix (writes: PUT/COPY/POST/DELETE; reads: GET/HEAD).
S3_WRITES_PER_PREFIX_S = 3500
S3_READS_PER_PREFIX_S = 5500
# What one S3 request of a copy takes, for files up to tens of MB (a copy makes
# `copy.REQUESTS_PER_COPY` of them, one after the other).
REQUEST_S = 0.04


def prefix_of(path: str) -> str:
    """A path's prefix as S3 limits it: everything up to its last '/'."""
    return path[: path.rfind("/")]


def spread_by_prefix(paths: Sequence[str]) -> list[str]:
    """`paths` reordered so that each prefix's paths are spread evenly over the list (stable within
    a prefix). Linear in the paths, plus one sort of floats."""
    groups: dict[str, list[int]] = {}
    for at, path in enumerate(paths):
        groups.setdefault(prefix_of(path), []).append(at)
    if len(groups) < 2:
        return list(paths)
    position = [0.0] * len(paths)
    for members in groups.values():
        step = 1.0 / len(members)
        for i, at in enumerate(members):
            position[at] = (i + 0.5) * step
    return [paths[at] for at in sorted(range(len(paths)), key=position.__getitem__)]


def hot_share(paths: Iterable[str]) -> tuple[int, float]:
    """(how many prefixes, the busiest one's share of the paths)."""
    counts = Counter(map(prefix_of, paths))
    total = sum(counts.values())
    return len(counts), (max(counts.values()) / total if total else 0.0)


def copy_concurrency(
    share: float,
    *,
    limit_per_s: float = S3_WRITES_PER_PREFIX_S,
    seconds_per_copy: float | None = None,
) -> int:
    """Copies in flight that take a table, spread by prefix with `share` in its busiest prefix, to
    the rate where that prefix reaches `limit_per_s`."""
    if share <= 0:
        return 1
    per_copy = sum(REQUESTS_PER_COPY.values()) * REQUEST_S if seconds_per_copy is None else seconds_per_copy
    return max(1, math.ceil(limit_per_s / share * per_copy))
