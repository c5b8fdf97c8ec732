"""Page through an HTTP JSON API and land every response unchanged as one pending batch."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import boto3
import requests
from botocore.exceptions import ClientError
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from icelake.aws.clients import new_session
from icelake.aws.fileio import FileIO, io_for
from icelake.errors import (
    HTTPStatusError,
    InvalidResponseError,
    PaginationError,
    RetriesExhaustedError,
    RetryableFetchError,
    SecretLookupError,
)
from icelake.ingest.landing import (
    batch_uri,
    extract_records,
    list_pending,
    new_run_id,
    read_state,
    write_page,
    write_pending,
)
from icelake.ingest.models import (
    AuthConfig,
    BatchManifest,
    FetchConfig,
    FetchCursor,
    FetchOutcome,
    FetchResult,
    RetryPolicy,
)
from icelake.ingest.watermark import newer_watermark, since_value

Sleep = Callable[[float], None]


def resolve_auth_header(auth: AuthConfig, session: boto3.Session | None = None) -> str:
    """The header value for `auth`, read from Secrets Manager (never logged)."""
    client = (session or new_session()).client("secretsmanager")
    try:
        secret = client.get_secret_value(SecretId=auth.secret_id).get("SecretString")
    except ClientError as exc:
        raise SecretLookupError(auth.secret_id, exc.response.get("Error", {}).get("Code", str(exc))) from exc
    if secret is None:
        raise SecretLookupError(auth.secret_id, "it holds binary data, not a SecretString")
    value = str(secret)
    if auth.secret_key is not None:
        try:
            doc = json.loads(secret)
        except json.JSONDecodeError as exc:
            raise SecretLookupError(
                auth.secret_id, f"it is not JSON, so it has no key {auth.secret_key!r}"
            ) from exc
        if not isinstance(doc, dict) or not isinstance(doc.get(auth.secret_key), str):
            raise SecretLookupError(auth.secret_id, f"it has no string key {auth.secret_key!r}")
        value = str(doc[auth.secret_key])
    return auth.prefix + value


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After as delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, float((when - (now or datetime.now(UTC))).total_seconds()))


def backoff_seconds(policy: RetryPolicy, attempt: int, rng: random.Random | None = None) -> float:
    """Exponential backoff for the `attempt`-th failure (1-based), capped, with equal jitter."""
    delay = min(policy.backoff_max_s, policy.backoff_base_s * 2.0 ** (attempt - 1))
    if policy.jitter:
        delay = delay / 2 + (rng or random).uniform(0, delay / 2)
    return delay


@dataclass
class _Counters:
    requests: int = 0
    bytes: int = 0


def _get_once(
    http: requests.Session, config: FetchConfig, params: dict[str, str], headers: dict[str, str]
) -> requests.Response:
    try:
        response = http.get(
            config.url,
            params=params,
            headers=headers,
            timeout=(config.connect_timeout_s, config.read_timeout_s),
        )
    except requests.Timeout:
        raise RetryableFetchError(
            f"timed out (connect {config.connect_timeout_s}s, read {config.read_timeout_s}s)"
        ) from None
    except requests.ConnectionError as exc:
        raise RetryableFetchError(f"connection failed ({type(exc).__name__})") from None
    if response.status_code < 400:
        return response
    if response.status_code not in config.retry.retry_statuses:
        raise HTTPStatusError(config.url, response.status_code, response.text[:200])
    after = retry_after_seconds(response.headers.get("Retry-After"))
    response.close()
    capped = None if after is None else min(after, config.retry.max_retry_after_s)
    raise RetryableFetchError(f"HTTP {response.status_code}", response.status_code, capped)


def _pause(policy: RetryPolicy) -> Callable[[RetryCallState], float]:
    """The wait before the next attempt: the server's Retry-After when it sent one, else backoff."""

    def pause(state: RetryCallState) -> float:
        failed = state.outcome.exception() if state.outcome is not None else None
        if isinstance(failed, RetryableFetchError) and failed.retry_after is not None:
            return failed.retry_after
        return backoff_seconds(policy, state.attempt_number)

    return pause


def get_with_retries(
    http: requests.Session,
    config: FetchConfig,
    params: dict[str, str],
    headers: dict[str, str],
    *,
    counters: _Counters,
    sleep: Sleep,
) -> requests.Response:
    """GET with the policy's retries (tenacity): timeouts, failed connections and the retryable
    statuses are tried again after the server's Retry-After or the backoff; another 4xx/5xx raises
    at once; the last failure is reported once the attempts run out."""
    policy = config.retry
    retrying = Retrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=_pause(policy),
        retry=retry_if_exception_type(RetryableFetchError),
        sleep=sleep,
        reraise=True,
    )
    try:
        for attempt in retrying:
            with attempt:
                counters.requests += 1
                return _get_once(http, config, params, headers)
    except RetryableFetchError as exc:
        raise RetriesExhaustedError(config.url, policy.max_attempts, exc.failure, exc.status) from exc
    raise AssertionError("tenacity ended without a result or an error")


def _dig(doc: Any, path: str) -> Any:
    node = doc
    for part in [p for p in path.split(".") if p]:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


@dataclass(frozen=True)
class PagePosition:
    """Where the walk over the API's pages stands before a request."""

    page: int | None = None
    cursor: str | None = None
    seen: tuple[str, ...] = ()


def _request_headers(config: FetchConfig, auth_header_value: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", **config.headers}
    if config.auth is not None:
        if auth_header_value is None:
            raise ValueError("config.auth is set: pass the header value from resolve_auth_header()")
        headers[config.auth.header] = auth_header_value
    return headers


def _json_body(url: str, body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError as exc:
        raise InvalidResponseError(url, f"the body is not JSON ({exc})") from exc


def walk_pages(
    config: FetchConfig,
    http: requests.Session,
    auth_header_value: str | None,
    counters: _Counters,
    sleep: Sleep,
    *,
    start: PagePosition | None = None,
    extra_params: dict[str, str] | None = None,
) -> Iterator[tuple[bytes, list[Any], PagePosition | None]]:
    """(raw response body, records, the position of the next page or None after the last) in
    order, from `start` (the first page by default) until the pagination's end."""
    pg = config.pagination
    headers = _request_headers(config, auth_header_value)
    params = {**config.params, **(extra_params or {})}
    if pg.kind == "page" and pg.size_param and pg.page_size:
        params[pg.size_param] = str(pg.page_size)
    start = start or PagePosition()
    page_no = start.page if start.page is not None else pg.start_page
    cursor: str | None = start.cursor
    seen_cursors: set[str] = set(start.seen)
    seen_order = list(start.seen)
    done_before = len(start.seen) if pg.kind == "cursor" else page_no - pg.start_page
    for count in range(done_before + 1, pg.max_pages + 1):
        if pg.kind == "page":
            params[pg.page_param] = str(page_no)
        elif pg.kind == "cursor" and cursor is not None:
            params[pg.cursor_param] = cursor
        response = get_with_retries(http, config, params, headers, counters=counters, sleep=sleep)
        body = response.content
        counters.bytes += len(body)
        doc = _json_body(response.url, body)
        records = extract_records(doc, config.records_path, response.url)
        if pg.kind == "none":
            yield body, records, None
            return
        if pg.kind == "page":
            if not records or (pg.page_size is not None and len(records) < pg.page_size):
                yield body, records, None
                return
            page_no += 1
            yield body, records, PagePosition(page=page_no)
            continue
        nxt = _dig(doc, pg.cursor_path)
        if nxt is None or nxt == "":
            yield body, records, None
            return
        cursor = str(nxt)
        if cursor in seen_cursors:
            raise PaginationError(
                f"{config.url} returned cursor {cursor!r} twice after {count} page(s): the API loops; "
                "nothing was marked pending"
            )
        seen_cursors.add(cursor)
        seen_order.append(cursor)
        yield body, records, PagePosition(cursor=cursor, seen=tuple(seen_order))
    raise PaginationError(
        f"{config.url} still had more pages after pagination.max_pages={pg.max_pages}; refusing to land a "
        "partial batch: raise max_pages or narrow the request"
    )


def iter_pages(
    config: FetchConfig,
    http: requests.Session,
    auth_header_value: str | None,
    counters: _Counters,
    sleep: Sleep,
) -> Iterator[tuple[bytes, int]]:
    """(raw response body, record count) in order, following the configured pagination until its end."""
    for body, records, _next in walk_pages(config, http, auth_header_value, counters, sleep):
        yield body, len(records)


@dataclass(frozen=True)
class FetchDeps:
    """What a fetch reaches the API and tells time through, each replaceable (the tests do): the
    credential's header value (from resolve_auth_header()), the HTTP session (None: one of its own,
    closed at the end), the batch's fetch time (None: now), the sleep between attempts and the
    clock the invocation budget is measured on."""

    auth_header_value: str | None = None
    http: requests.Session | None = None
    now: datetime | None = None
    sleep: Sleep = time.sleep
    clock: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class _Run:
    """The run a fetch lands its pages in."""

    run_id: str
    fetched_at: datetime
    since: str | None
    invocation: int  # this invocation's number in the run, from 1


def _run_of(resume: FetchCursor | None, now: datetime | None, since: str | None) -> _Run:
    """Which run the pages land in: the one `resume` goes on with, or a new one fetched `now`."""
    if resume is not None:
        return _Run(resume.run_id, resume.fetched_at, resume.since, resume.invocations + 1)
    fetched_at = (now or datetime.now(UTC)).astimezone(UTC)
    return _Run(new_run_id(fetched_at), fetched_at, since, 1)


def _resumed(resume: FetchCursor | None) -> tuple[list[str], int, Any, PagePosition | None]:
    """What the run already landed (page names, records, newest watermark value) and where its walk
    goes on: nothing and the first page for a new run."""
    if resume is None:
        return [], 0, None, None
    start = PagePosition(resume.next_page, resume.next_cursor, resume.seen_cursors)
    return list(resume.pages), resume.record_count, resume.watermark_max, start


def _since_params(config: FetchConfig, since: str | None) -> dict[str, str]:
    """The query parameter asking for records since the watermark: none without a watermark or a value."""
    return {config.watermark.param: since} if config.watermark is not None and since is not None else {}


def _newest_in(config: FetchConfig, found: list[Any], newest: Any) -> Any:
    """The newest watermark value once this page's records are seen (unchanged without a watermark)."""
    column = config.watermark.from_column if config.watermark is not None else None
    if column is not None:
        for record in found:
            if isinstance(record, dict):
                newest = newer_watermark(newest, record.get(column))
    return newest


def _out_of_budget(config: FetchConfig, elapsed: float, this_call: int) -> bool:
    """Whether this invocation stops after its `this_call`-th page: its time or its page budget ran out."""
    return elapsed >= config.invocation_budget_s or (
        config.max_pages_per_invocation is not None and this_call >= config.max_pages_per_invocation
    )


def _cursor(run: _Run, names: list[str], records: int, newest: Any, position: PagePosition) -> FetchCursor:
    """Where the next invocation goes on: the pages landed so far and the next page's position."""
    return FetchCursor(
        next_page=position.page,
        next_cursor=position.cursor,
        seen_cursors=position.seen,
        invocations=run.invocation,
        **_landed(run, names, records, newest),
    )


def _manifest(config: FetchConfig, run: _Run, names: list[str], records: int, newest: Any) -> BatchManifest:
    """The batch's manifest: every page landed so far (provisional while a cursor is set)."""
    return BatchManifest(
        batch_id=f"{config.source}/{config.endpoint}/{run.run_id}",
        source=config.source,
        endpoint=config.endpoint,
        records_path=config.records_path,
        full_load=config.full_load,
        **_landed(run, names, records, newest),
    )


def _landed(run: _Run, names: list[str], records: int, newest: Any) -> dict[str, Any]:
    """What a cursor and a manifest both say of the run's pages landed so far."""
    return {
        "run_id": run.run_id,
        "fetched_at": run.fetched_at,
        "pages": tuple(names),
        "record_count": records,
        "since": run.since,
        "watermark_max": newest,
    }


def fetch_to_landing(
    config: FetchConfig,
    io: FileIO,
    root: str,
    *,
    deps: FetchDeps = FetchDeps(),
    resume: FetchCursor | None = None,
    since: str | None = None,
) -> FetchResult:
    """Fetch every page, land each unchanged, then write the `.pending` marker (last, so a dead run
    leaves no marker and its pages are never merged). When the invocation budget
    (`invocation_budget_s`, `max_pages_per_invocation`) runs out first, return a `cursor` instead:
    the pages so far stay landed and `fetch_to_landing(..., resume=cursor)` goes on with the next.
    `deps`: the credential, the HTTP session and the clocks (FetchDeps(): none, its own, the real ones)."""
    started = deps.clock()
    run = _run_of(resume, deps.now, since)
    uri = batch_uri(root, config.source, config.endpoint, run.run_id)
    counters = _Counters()
    own_http = deps.http is None
    session = deps.http or requests.Session()
    names, records, newest, start = _resumed(resume)
    extra = _since_params(config, run.since)
    cursor: FetchCursor | None = None
    try:
        pages = walk_pages(
            config, session, deps.auth_header_value, counters, deps.sleep, start=start, extra_params=extra
        )
        for this_call, (body, found, position) in enumerate(pages, start=1):
            names.append(write_page(io, uri, len(names) + 1, body))
            records += len(found)
            newest = _newest_in(config, found, newest)
            out_of_budget = _out_of_budget(config, deps.clock() - started, this_call)
            if position is not None and out_of_budget:
                cursor = _cursor(run, names, records, newest, position)
                break
    finally:
        if own_http:
            session.close()
    manifest = _manifest(config, run, names, records, newest)
    if cursor is None:
        write_pending(io, uri, manifest)
    return FetchResult(
        batch_uri=uri, manifest=manifest, requests=counters.requests, bytes=counters.bytes, cursor=cursor
    )


def fetch_source(
    config: FetchConfig,
    raw_root: str,
    session: boto3.Session | None = None,
    resume: FetchCursor | None = None,
) -> FetchOutcome:
    """The fetch step: resolve the credential, land a new batch (asking for records since the
    watermark, if configured), list every batch still pending. When the invocation budget runs
    out first, `more` is set and `cursor` is the next invocation's `resume`."""
    io = io_for(raw_root, session=session)
    auth = resolve_auth_header(config.auth, session) if config.auth is not None else None
    since = None
    if config.watermark is not None and resume is None:
        merged = read_state(io, raw_root, config.source, config.endpoint).get("watermark")
        since = since_value(config.watermark, merged)
    result = fetch_to_landing(
        config, io, raw_root, deps=FetchDeps(auth_header_value=auth), resume=resume, since=since
    )
    pending = [] if result.cursor else list_pending(io, raw_root, config.source, config.endpoint)
    return FetchOutcome(
        batch_uri=result.batch_uri,
        batch_id=result.manifest.batch_id,
        record_count=result.manifest.record_count,
        requests=result.requests,
        pending=tuple(b.uri for b in pending),
        more=result.cursor is not None,
        cursor=result.cursor,
    )
