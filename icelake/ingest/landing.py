"""The raw landing zone: `raw/{source}/{endpoint}/{run_id}/` with `.pending` and `.complete` markers.

A batch directory holds the API responses unchanged (`page-000001.json`, ...). The `.pending`
marker is written last, after every page landed, and holds the BatchManifest: a batch without it
is an interrupted fetch and is never merged. After the merge committed, `.complete` is written and
`.pending` removed; a batch showing both (a crash in between) counts as complete.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError
from pydantic import ValidationError

from icelake.aws.fileio import FileIO, io_for
from icelake.ingest.errors import InvalidBatchError, InvalidResponseError
from icelake.ingest.models import BatchManifest, PendingBatch

PENDING = ".pending"
COMPLETE = ".complete"


def new_run_id(now: datetime) -> str:
    """Sorts like time: `20261101T120000123456Z-1a2b3c4d`."""
    return f"{now.astimezone(UTC):%Y%m%dT%H%M%S%fZ}-{secrets.token_hex(4)}"


def endpoint_prefix(root: str, source: str, endpoint: str) -> str:
    return f"{root.rstrip('/')}/raw/{source}/{endpoint}"


def batch_uri(root: str, source: str, endpoint: str, run_id: str) -> str:
    return f"{endpoint_prefix(root, source, endpoint)}/{run_id}"


def page_name(index: int) -> str:
    return f"page-{index:06d}.json"


def write_page(io: FileIO, uri: str, index: int, body: bytes) -> str:
    name = page_name(index)
    io.write(f"{uri}/{name}", body)
    return name


def write_pending(io: FileIO, uri: str, manifest: BatchManifest) -> None:
    io.write(f"{uri}/{PENDING}", manifest.model_dump_json(indent=2).encode())


def land_batch(
    io: FileIO,
    root: str,
    *,
    source: str,
    endpoint: str,
    pages: Sequence[bytes],
    fetched_at: datetime,
    records_path: str = "data",
    full_load: bool = False,
    run_id: str | None = None,
) -> PendingBatch:
    """Land already-fetched responses as one pending batch (used by the fetcher's tests and tools)."""
    run_id = run_id or new_run_id(fetched_at)
    uri = batch_uri(root, source, endpoint, run_id)
    names = [write_page(io, uri, i + 1, body) for i, body in enumerate(pages)]
    count = sum(
        len(extract_records(json.loads(body), records_path, f"{uri}/{n}"))
        for n, body in zip(names, pages, strict=True)
    )
    manifest = BatchManifest(
        batch_id=f"{source}/{endpoint}/{run_id}",
        source=source,
        endpoint=endpoint,
        run_id=run_id,
        fetched_at=fetched_at.astimezone(UTC),
        pages=tuple(names),
        record_count=count,
        records_path=records_path,
        full_load=full_load,
    )
    write_pending(io, uri, manifest)
    return PendingBatch(uri=uri, manifest=manifest)


def read_manifest(io: FileIO, uri: str) -> BatchManifest:
    marker = f"{uri.rstrip('/')}/{PENDING}"
    try:
        body = io.read(marker)
    except (FileNotFoundError, ClientError) as exc:
        raise InvalidBatchError(
            f"{uri} has no readable {PENDING} marker ({exc}): it is not a landed batch"
        ) from exc
    try:
        return BatchManifest.model_validate_json(body)
    except ValidationError as exc:
        raise InvalidBatchError(f"the marker {marker} is damaged: {exc}") from exc


def list_pending(io: FileIO, root: str, source: str, endpoint: str) -> list[PendingBatch]:
    """Every batch with a `.pending` and no `.complete` marker, oldest first."""
    prefix = endpoint_prefix(root, source, endpoint)
    markers: dict[str, set[str]] = {}
    for uri, _info in io.list(prefix):
        directory, _, name = uri.rpartition("/")
        if name in (PENDING, COMPLETE):
            markers.setdefault(directory, set()).add(name)
    batches = [
        PendingBatch(uri=directory, manifest=read_manifest(io, directory))
        for directory, names in markers.items()
        if names == {PENDING}
    ]
    return sorted(batches, key=lambda b: (b.manifest.fetched_at, b.manifest.run_id))


def mark_complete(io: FileIO, uri: str, detail: dict[str, Any] | None = None) -> None:
    """Write `.complete`, then drop `.pending`. Idempotent."""
    uri = uri.rstrip("/")
    body = {"completed_at": datetime.now(UTC).isoformat(), **(detail or {})}
    io.write(f"{uri}/{COMPLETE}", json.dumps(body, default=str).encode())
    io.delete(f"{uri}/{PENDING}")


def extract_records(doc: Any, records_path: str, where: str) -> list[Any]:
    """The record list at a dotted path of a response document."""
    node = doc
    for part in [p for p in records_path.split(".") if p]:
        if not isinstance(node, dict) or part not in node:
            raise InvalidResponseError(where, f"no {records_path!r} in the response")
        node = node[part]
    if not isinstance(node, list):
        raise InvalidResponseError(
            where, f"{records_path or 'the body'!r} is {type(node).__name__}, not a list"
        )
    return node


def iter_batch_records(io: FileIO, batch: PendingBatch) -> Iterator[tuple[str, dict[str, Any]]]:
    """(page uri, record) in landing order; every record must be a JSON object."""
    for name in batch.manifest.pages:
        page = f"{batch.uri}/{name}"
        try:
            body = io.read(page)
        except Exception as exc:
            raise InvalidBatchError(
                f"page {page} of batch {batch.manifest.batch_id} cannot be read: {exc}"
            ) from exc
        for record in extract_records(json.loads(body), batch.manifest.records_path, page):
            if not isinstance(record, dict):
                raise InvalidBatchError(
                    f"{page} holds a {type(record).__name__} record; records must be objects"
                )
            yield page, record


def complete_batches(uris: Sequence[str], session: Any = None) -> list[str]:
    """Mark each merged batch `.complete` (the workflow step after the merge). Idempotent."""
    done = []
    for uri in uris:
        mark_complete(io_for(uri, session=session), uri)
        done.append(uri.rstrip("/"))
    return done
