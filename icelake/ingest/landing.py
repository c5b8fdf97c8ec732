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
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError
from pydantic import ValidationError

from icelake.aws.fileio import FileIO, io_for, is_absent
from icelake.errors import InvalidBatchError, InvalidResponseError
from icelake.ingest.models import BatchManifest, PendingBatch
from icelake.ingest.watermark import newer_watermark

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


@dataclass(frozen=True)
class FetchedBatch:
    """Responses already fetched from one endpoint, to land as one batch: the bodies in fetch
    order, their fetch time, where the records are in each, whether they are a full load, and the
    run id (None: a new one from the fetch time)."""

    source: str
    endpoint: str
    pages: Sequence[bytes]
    fetched_at: datetime
    records_path: str = "data"
    full_load: bool = False
    run_id: str | None = None


def land_batch(io: FileIO, root: str, fetched: FetchedBatch) -> PendingBatch:
    """Land already-fetched responses as one pending batch (used by the fetcher's tests and tools)."""
    run_id = fetched.run_id or new_run_id(fetched.fetched_at)
    uri = batch_uri(root, fetched.source, fetched.endpoint, run_id)
    names = [write_page(io, uri, i + 1, body) for i, body in enumerate(fetched.pages)]
    count = sum(
        len(extract_records(json.loads(body), fetched.records_path, f"{uri}/{n}"))
        for n, body in zip(names, fetched.pages, strict=True)
    )
    manifest = BatchManifest(
        batch_id=f"{fetched.source}/{fetched.endpoint}/{run_id}",
        source=fetched.source,
        endpoint=fetched.endpoint,
        run_id=run_id,
        fetched_at=fetched.fetched_at.astimezone(UTC),
        pages=tuple(names),
        record_count=count,
        records_path=fetched.records_path,
        full_load=fetched.full_load,
    )
    write_pending(io, uri, manifest)
    return PendingBatch(uri=uri, manifest=manifest)


def read_manifest(io: FileIO, uri: str) -> BatchManifest:
    marker = f"{uri.rstrip('/')}/{PENDING}"
    try:
        body = io.read(marker)
    except (FileNotFoundError, ClientError) as exc:
        if not is_absent(exc):  # denied or throttled: not "no batch here", which callers skip
            raise
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


def iter_batch_records(
    io: FileIO, batch: PendingBatch, *, exact: bool = False
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(page uri, record) in landing order; every record must be a JSON object. `exact`: numbers
    with a fraction or exponent are Decimals (their JSON text), not floats."""
    for name in batch.manifest.pages:
        page = f"{batch.uri}/{name}"
        try:
            body = io.read(page)
        except Exception as exc:
            raise InvalidBatchError(
                f"page {page} of batch {batch.manifest.batch_id} cannot be read: {exc}"
            ) from exc
        try:
            doc = json.loads(body, parse_float=Decimal) if exact else json.loads(body)
        except ValueError as exc:
            raise InvalidBatchError(
                f"page {page} of batch {batch.manifest.batch_id} is not valid JSON ({exc})"
            ) from exc
        try:
            records = extract_records(doc, batch.manifest.records_path, page)
        except InvalidResponseError as exc:
            raise InvalidBatchError(str(exc)) from exc
        for record in records:
            if not isinstance(record, dict):
                raise InvalidBatchError(
                    f"{page} holds a {type(record).__name__} record; records must be objects"
                )
            yield page, record


def complete_batches(uris: Sequence[str], session: Any = None) -> list[str]:
    """Mark each merged batch `.complete` (the workflow step after the merge). Idempotent."""
    return complete_or_report(uris, session)[0]


def complete_or_report(uris: Sequence[str], session: Any = None) -> tuple[list[str], list[str]]:
    """Mark each merged batch `.complete`; batches the merge moved to quarantine (no `.pending`
    left, a reason.json under quarantine/) are not marked but returned as the second list."""
    done: list[str] = []
    quarantined: list[str] = []
    for given in uris:
        uri = given.rstrip("/")
        io = io_for(uri, session=session)
        if io.stat(f"{uri}/{PENDING}") is None and io.stat(f"{uri}/{COMPLETE}") is None:
            root, _, source, endpoint, run_id = uri.rsplit("/", 4)
            where = quarantine_uri(root, source, endpoint, run_id)
            if io.stat(f"{where}/{REASON}") is not None:
                quarantined.append(where)
                continue
        advance_watermark(io, uri)
        mark_complete(io, uri)
        done.append(uri)
    return done, quarantined


def advance_watermark(io: FileIO, uri: str) -> None:
    """After a batch merged: the endpoint's watermark becomes its newest from_column value, if newer."""
    try:
        manifest = read_manifest(io, uri)
    except InvalidBatchError:
        return  # already complete (a retry): its watermark was recorded then
    if manifest.watermark_max is None:
        return
    root = root_of(uri)
    state = read_state(io, root, manifest.source, manifest.endpoint)
    newest = newer_watermark(state.get("watermark"), manifest.watermark_max)
    if newest != state.get("watermark"):
        state["watermark"] = newest
        write_state(io, root, manifest.source, manifest.endpoint, state)


# --------------------------------------------------------------------------- state, quarantine


def root_of(uri: str) -> str:
    """`{root}/raw/{source}/{endpoint}/{run_id}` -> `{root}`."""
    parts = uri.rstrip("/").rsplit("/", 4)
    if len(parts) != 5 or parts[1] != "raw":
        raise InvalidBatchError(
            f"{uri} is not a batch directory {{root}}/raw/{{source}}/{{endpoint}}/{{run_id}}"
        )
    return parts[0]


def state_uri(root: str, source: str, endpoint: str) -> str:
    """The endpoint's state: empty batches merged before its table existed, and the watermark."""
    return f"{root.rstrip('/')}/state/{source}/{endpoint}.json"


def read_state(io: FileIO, root: str, source: str, endpoint: str) -> dict[str, Any]:
    try:
        body = io.read(state_uri(root, source, endpoint))
    except (FileNotFoundError, ClientError) as exc:
        # Only absence means "no state yet": a denied or throttled read would silently drop the
        # watermark (a full fetch) and the empty batches' ledger (an older batch accepted).
        if not is_absent(exc):
            raise
        return {}
    state = json.loads(body)
    return state if isinstance(state, dict) else {}


def write_state(io: FileIO, root: str, source: str, endpoint: str, state: dict[str, Any]) -> None:
    io.write(
        state_uri(root, source, endpoint), json.dumps(state, indent=2, sort_keys=True, default=str).encode()
    )


def read_ledger(io: FileIO, batch: PendingBatch) -> dict[str, datetime]:
    """Empty batches recorded before the table existed: batch id -> fetch time."""
    m = batch.manifest
    state = read_state(io, root_of(batch.uri), m.source, m.endpoint)
    return {str(k): datetime.fromisoformat(str(v)) for k, v in state.get("empty_batches", {}).items()}


def record_in_ledger(io: FileIO, batch: PendingBatch) -> None:
    """Record an empty batch (its id and fetch time), so an older batch landed later is refused."""
    m = batch.manifest
    root = root_of(batch.uri)
    state = read_state(io, root, m.source, m.endpoint)
    state.setdefault("empty_batches", {})[m.batch_id] = m.fetched_at.astimezone(UTC).isoformat()
    write_state(io, root, m.source, m.endpoint, state)


def quarantine_uri(root: str, source: str, endpoint: str, run_id: str) -> str:
    return f"{root.rstrip('/')}/quarantine/{source}/{endpoint}/{run_id}"


REASON = "reason.json"
MAX_REASON_KEYS = 10_000


def batch_keys(io: FileIO, batch: PendingBatch, keys: Sequence[str]) -> tuple[list[dict[str, Any]], bool]:
    """The key values of a batch's records, read tolerantly (unreadable pages and records are
    skipped): at most MAX_REASON_KEYS distinct ones, and whether there were more."""
    seen: dict[str, dict[str, Any]] = {}
    more = False
    for name in batch.manifest.pages:
        try:
            doc = json.loads(io.read(f"{batch.uri}/{name}"))
            records = extract_records(doc, batch.manifest.records_path, name)
        except Exception:
            continue
        for record in records:
            if not isinstance(record, dict):
                continue
            key = {k: record.get(k) for k in keys}
            text = json.dumps(key, sort_keys=True, default=str)
            if text not in seen:
                if len(seen) >= MAX_REASON_KEYS:
                    more = True
                    continue
                seen[text] = key
    return list(seen.values()), more


def quarantine_batch(io: FileIO, batch: PendingBatch, error: Exception, *, keys: Sequence[str]) -> str:
    """Move a batch that cannot merge to `quarantine/{source}/{endpoint}/{run_id}/` with a
    reason.json (error, message, the batch's keys: SCD2 history depends on order, so whoever fixes
    it knows which keys missed this batch). Copies first, then removes `.pending` (the batch is no
    longer pending), then the pages."""
    m = batch.manifest
    src = batch.uri.rstrip("/")
    dest = quarantine_uri(root_of(src), m.source, m.endpoint, m.run_id)
    names = [*m.pages, PENDING]
    for name in names:
        io.write(f"{dest}/{name}", io.read(f"{src}/{name}"))
    found, more = batch_keys(io, batch, keys)
    reason = {
        "batch_id": m.batch_id,
        "source": m.source,
        "endpoint": m.endpoint,
        "run_id": m.run_id,
        "fetched_at": m.fetched_at.isoformat(),
        "quarantined_at": datetime.now(UTC).isoformat(),
        "error": type(error).__name__,
        "reason": str(error),
        "record_count": m.record_count,
        "key_columns": list(keys),
        "keys": found,
        "keys_truncated": more,
        "requeue": f"icelake ingest requeue {m.source} {m.run_id} --root {root_of(src)}",
    }
    io.write(f"{dest}/{REASON}", json.dumps(reason, indent=2, default=str).encode())
    io.delete(f"{src}/{PENDING}")
    for name in m.pages:
        io.delete(f"{src}/{name}")
    return dest


def find_quarantined(io: FileIO, root: str, source: str, run_id: str) -> str:
    """The quarantine directory of `run_id` of `source` (any endpoint)."""
    prefix = f"{root.rstrip('/')}/quarantine/{source}"
    found = sorted(
        {uri.rpartition("/")[0] for uri, _ in io.list(prefix) if uri.endswith(f"/{run_id}/{REASON}")}
    )
    if not found:
        raise InvalidBatchError(f"no quarantined batch {run_id} of source {source!r} under {prefix}/")
    if len(found) > 1:
        raise InvalidBatchError(f"run {run_id} of {source!r} is quarantined for several endpoints: {found}")
    return found[0]


def run_time(run_id: str) -> datetime:
    """The fetch time encoded in a run id (`20261101T120000123456Z-...`)."""
    return datetime.strptime(run_id.split("-", maxsplit=1)[0], "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)


def requeue(io: FileIO, root: str, source: str, run_id: str, now: datetime | None = None) -> PendingBatch:
    """Re-land a quarantined batch (after its cause was fixed) as pending, unchanged but marked
    requeued. Refused when a batch fetched at the same time or later was already merged (marked
    complete): SCD2 history is built in fetch order and is never rewritten."""
    where = find_quarantined(io, root, source, run_id)
    reason = json.loads(io.read(f"{where}/{REASON}"))
    manifest = BatchManifest.model_validate_json(io.read(f"{where}/{PENDING}"))
    newer = []
    for uri, _ in io.list(endpoint_prefix(root, source, manifest.endpoint)):
        directory, _, name = uri.rpartition("/")
        other = directory.rpartition("/")[2]
        if name == COMPLETE and other != run_id:
            try:
                if run_time(other) >= manifest.fetched_at:
                    newer.append(other)
            except ValueError:
                continue
    if newer:
        raise InvalidBatchError(
            f"cannot requeue {manifest.batch_id} (fetched {manifest.fetched_at.isoformat()}): "
            f"{len(newer)} later batch(es) were merged since (e.g. {sorted(newer)[-1]}), and SCD2 history "
            "is never rewritten; its keys are listed in "
            f"{where}/{REASON}: re-fetch them from the API so a new batch carries their current state"
        )
    dest = batch_uri(root, source, manifest.endpoint, run_id)
    for name in manifest.pages:
        io.write(f"{dest}/{name}", io.read(f"{where}/{name}"))
    requeued = manifest.model_copy(update={"requeued_at": (now or datetime.now(UTC)).astimezone(UTC)})
    write_pending(io, dest, requeued)
    history = {**reason, "requeued_at": requeued.requeued_at}
    io.write(f"{dest}/requeued-from-quarantine.json", json.dumps(history, indent=2, default=str).encode())
    for name in [*manifest.pages, PENDING, REASON]:
        io.delete(f"{where}/{name}")
    return PendingBatch(uri=dest, manifest=requeued)
