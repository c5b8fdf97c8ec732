"""No two source objects may land on one target key.

Two source prefixes mapped into one target directory (`--map s3://a/x=DST --map s3://b/y=DST`)
silently lost data: a file of the same name under each was copied to the same key, the second
copy overwrote the first, and the target read one file twice. Both checks here run while
planning, before anything is written.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from icelake.aws.fileio import FileIO
from icelake.errors import TargetLockedError, UnsafeTargetError
from icelake.uris import PrefixMap, canonical, is_under

LOCK_NAME = "_icelake_lock.json"


@contextmanager
def target_lock(dst_io: FileIO, target_location: str, source_metadata: str) -> Iterator[None]:
    """Hold the target location for one migration: a second one into it (of another table, or of
    the same table at the same time) is refused naming the holder. The check that a target holds
    no other table is a read, then writes follow; without this lock two runs could both pass it.
    A lock left by a killed run on this host is taken over; one from another host is named."""
    uri = f"{target_location.rstrip('/')}/{LOCK_NAME}"
    mine = {
        "source": source_metadata,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "since": int(time.time()),
    }
    if not dst_io.create_exclusive(uri, json.dumps(mine).encode()):
        holder = _holder(dst_io, uri)
        if not _dead_here(holder) or not _retake(dst_io, uri, mine):
            raise TargetLockedError(uri, holder)
    try:
        yield
    finally:
        dst_io.delete(uri)


def _holder(dst_io: FileIO, uri: str) -> dict[str, object]:
    try:
        found = json.loads(dst_io.read(uri))
    except Exception:  # gone meanwhile, or not ours to parse: name what we know
        return {"source": "unknown"}
    return found if isinstance(found, dict) else {"source": "unknown"}


def _dead_here(holder: dict[str, object]) -> bool:
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _retake(dst_io: FileIO, uri: str, mine: dict[str, object]) -> bool:
    dst_io.delete(uri)
    return dst_io.create_exclusive(uri, json.dumps(mine).encode())


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
