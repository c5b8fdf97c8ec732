"""No two source objects may land on one target key.

Two source prefixes mapped into one target directory (`--map s3://a/x=DST --map s3://b/y=DST`)
silently lost data: a file of the same name under each was copied to the same key, the second
copy overwrote the first, and the target read one file twice. Both checks here run while
planning, before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable

from icelake.errors import UnsafeTargetError
from icelake.uris import PrefixMap, canonical, is_under


def refuse_overlapping_targets(prefix_map: PrefixMap) -> None:
    """Refuse two mappings whose targets overlap, unless the inner one continues the outer one
    (`s3://a/t=s3://b/t` with `s3://a/t/data=s3://b/t/data` maps every path the same either way)."""
    for outer in prefix_map.mappings:
        for inner in prefix_map.mappings:
            if inner is outer:
                continue
            outer_target, inner_target = canonical(outer.target), canonical(inner.target)
            if not is_under(inner_target, outer_target):
                continue
            rest = inner_target[len(outer_target) :]
            if canonical(outer.source + rest) == inner.source:
                continue
            raise UnsafeTargetError(
                f"{outer.source} -> {outer.target} and {inner.source} -> {inner.target} write into the "
                f"same target prefix {inner.target}: files of the same name would overwrite each other; "
                "map each source prefix to a target prefix of its own"
            )


def refuse_duplicate_targets(paths: Iterable[str], prefix_map: PrefixMap) -> None:
    """Refuse when two different source paths map to one target key (names up to 10 pairs)."""
    seen: dict[str, str] = {}
    clashes: list[str] = []
    for path in paths:
        source = canonical(path)
        target = prefix_map.map(source)
        if target is None:
            continue
        key = canonical(target)
        first = seen.setdefault(key, source)
        if first != source:
            clashes.append(f"{first} and {source} -> {target}")
    if clashes:
        shown = "; ".join(clashes[:10]) + (f"; ... and {len(clashes) - 10} more" if len(clashes) > 10 else "")
        raise UnsafeTargetError(
            f"{len(clashes)} target key(s) would be written from two source files: {shown}; "
            "map the source prefixes to separate target prefixes; nothing was written"
        )
