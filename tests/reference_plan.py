"""The reference way to plan: every manifest entry decoded by fastavro, one HEAD per object on
its own pool task, a plain thread pool. Slow and obvious; the tests assert that icelake's fast
plan (`icelake.migrate.plan.FAST_READS`) gives exactly the plan this one gives."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar, Unpack

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.migrate.inventory import StatOptions
from icelake.migrate.plan.reads import PlanReads
from icelake.migrate.plan_scan import fastavro_entries

T = TypeVar("T")
R = TypeVar("R")


def thread_map(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def head_each(
    io: FileIO, uris: Iterable[str], roots: Iterable[str], workers: int, **options: Unpack[StatOptions]
) -> dict[str, ObjectInfo | None]:
    """`io.stat` (a HEAD) of every uri, on threads; `roots`, `full`, `cpu` and `canonical_uris` do
    not matter: a HEAD says it all."""
    uris, phase = list(uris), options.get("phase")
    if phase:
        phase.start(len(uris))

    def one(uri: str) -> ObjectInfo | None:
        info = io.stat(uri)
        if phase:
            phase.advance()
        return info

    return dict(zip(uris, thread_map(one, uris, workers), strict=True))


REFERENCE_READS = PlanReads(entries=fastavro_entries, stat=head_each, map=thread_map)
