"""What planning reads of each manifest entry, and a thread pool map for many small calls.

`build_plan` needs six fields of each manifest entry (status, content, file_path,
file_size_in_bytes, referenced_data_file and, for position deletes, file_format). Decoding every
entry with fastavro builds the statistics maps and partition values too; `entry_fields` finds the
six fields with `avro_patch`'s skippers instead and leaves any file they do not read exactly to
fastavro (`entry_fields_fastavro`, which gives the same tuples, or the same error).
"""

from __future__ import annotations

import functools
import itertools
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

import fastavro

from icelake.errors import NotPatchable
from icelake.migrate.avro.entries import EntryFields, PathSpans, read_entry_fields
from icelake.migrate.avro.files import is_rewritable_delete, manifest_entries
from icelake.migrate.avro.patch import PlannedManifest, manifest_digest

T = TypeVar("T")
R = TypeVar("R")

# A pool task per item costs tens of microseconds (a Future, a lock, a queue round trip) and keeps
# every Future alive until the map ends: items go to the pool in runs of at most this many, small
# enough that the runs still spread over the workers for slow calls (S3 HEADs).
MAX_CHUNK = 64


def entry_fields(uri: str, data: bytes) -> list[EntryFields]:
    """(status, content, file_path, file_size_in_bytes, referenced_data_file, file_format) of every
    entry of a manifest; file_format is None unless the entry is a position delete."""
    try:
        return read_entry_fields(data, _fastavro_accepts)
    except NotPatchable:
        return entry_fields_fastavro(uri, data)


def planned_entries(uri: str, data: bytes) -> tuple[list[EntryFields], PlannedManifest | None]:
    """`entry_fields`, and, for a data manifest read with the skippers (every entry data, none
    with a referenced_data_file), where its paths sit: its rewrite then splices them there
    (`avro_patch.splice_manifest`) instead of walking every entry again."""
    spans = PathSpans()
    try:
        entries = read_entry_fields(data, _fastavro_accepts, spans)
    except NotPatchable:
        return entry_fields_fastavro(uri, data), None
    if any(content or reference for _, content, _, _, reference, _ in entries):
        return entries, None
    return entries, PlannedManifest(len(data), manifest_digest(data), spans)


def fastavro_entries(uri: str, data: bytes) -> tuple[list[EntryFields], PlannedManifest | None]:
    """`planned_entries` by decoding every entry with fastavro (the reference path: no spans)."""
    return entry_fields_fastavro(uri, data), None


def entry_fields_fastavro(uri: str, data: bytes) -> list[EntryFields]:
    """`entry_fields` by decoding every entry with fastavro (the reference path)."""
    out: list[EntryFields] = []
    for entry in manifest_entries(uri, data):
        df = entry["data_file"]
        path = df["file_path"]
        status = entry["status"]
        size = df["file_size_in_bytes"]
        reference = df.get("referenced_data_file")
        file_format = df["file_format"] if is_rewritable_delete(df) else None
        out.append((status, df.get("content", 0), path, size, reference, file_format))
    return out


@functools.lru_cache(maxsize=64)
def _fastavro_accepts(schema_text: str) -> bool:
    try:
        fastavro.parse_schema(json.loads(schema_text))
    except Exception:
        return False
    return True


def map_in_chunks(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """`list(pool.map(fn, items))` on `workers` threads, with runs of items as pool tasks: the
    same results in the same order, and the first exception in item order is raised."""
    if not items:
        return []
    chunk = max(1, min(MAX_CHUNK, len(items) // (workers * 8)))

    def run(start: int) -> list[R]:
        return [fn(item) for item in items[start : start + chunk]]

    out: list[R] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(run, range(0, len(items), chunk)):
            out.extend(part)
    return out


# Threads fetching metadata files ahead of the parser. Parsing a manifest of 1,000 entries takes
# about as long as an S3 GET's first byte, so a few keep the parser busy; more would only take
# the GIL from it.
READ_AHEAD = 4


def fetched_ahead(uris: Sequence[str], fetch: Callable[[str], R]) -> Iterator[tuple[str, R]]:
    """(uri, fetch(uri)) for every uri, in order, fetched READ_AHEAD at a time ahead of the caller."""
    return zip(uris, map_ahead(fetch, uris, READ_AHEAD), strict=True)


def map_ahead(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """`map(fn, items)` on `workers` threads, yielded lazily in item order, with at most
    2 x `workers` items in flight. For fetches with latency (an S3 GET waits tens of ms for its
    first byte, so a thousand manifests read one after another wait tens of seconds); the bound
    keeps only a few fetched objects in memory. Parse in the consumer: CPU-bound work on the
    threads would only contend for the GIL."""
    if workers <= 1:
        yield from map(fn, items)
        return
    pending: deque[Future[R]] = deque()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= 2 * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:  # the consumer stopped early or a call failed: start no more
                future.cancel()


def map_unordered(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """`fn` over `items` on `workers` threads, results yielded as they finish (in no order), with
    at most 2 x `workers` items in flight: a million copies are neither a million futures at once
    nor held up behind one slow file. A call that fails stops the rest (none further is started)."""
    pending: set[Future[R]] = set()
    todo = iter(items)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        try:
            for item in itertools.islice(todo, 2 * max(1, workers)):
                pending.add(pool.submit(fn, item))
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
                    for item in itertools.islice(todo, 1):
                        pending.add(pool.submit(fn, item))
        finally:
            for future in pending:  # the consumer stopped early or a call failed: start no more
                future.cancel()
