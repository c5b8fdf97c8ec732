"""Fetch against a real HTTP server on loopback, landing into S3 (moto) or a local directory."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import boto3
import pytest

from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.errors import (
    HTTPStatusError,
    InvalidResponseError,
    PaginationError,
    RetriesExhaustedError,
    SecretLookupError,
)
from icelake.ingest.fetch import (
    FetchDeps,
    backoff_seconds,
    fetch_to_landing,
    resolve_auth_header,
    retry_after_seconds,
)
from icelake.ingest.landing import COMPLETE, PENDING, list_pending, mark_complete
from icelake.ingest.models import AuthConfig, FetchConfig, Pagination, RetryPolicy
from tests.ingest.conftest import ApiServer, Reply, SeenRequest, paged_records

RECORDS = [{"id": i, "name": f"n{i}", "score": None if i % 3 else i} for i in range(1, 26)]
FAST_RETRY = RetryPolicy(max_attempts=3, backoff_base_s=0.1, jitter=False)


def s3_io(bucket: str = "raw-bucket") -> S3FileIO:
    client = boto3.client("s3")
    client.create_bucket(Bucket=bucket)
    return S3FileIO(client)


def s3_keys(bucket: str = "raw-bucket") -> list[str]:
    listing = boto3.client("s3").list_objects_v2(Bucket=bucket)
    return sorted(o["Key"] for o in listing.get("Contents", []))


def paging(api: ApiServer, size: int = 10) -> None:
    def behaviour(req: SeenRequest, _n: int) -> Reply:
        return Reply(body=paged_records(RECORDS, int(req.query["page"]), int(req.query["per_page"])))

    api.behaviour = behaviour


@pytest.mark.usefixtures("aws_env")
def test_page_pagination_lands_every_response_unchanged_with_auth_from_secrets_manager(
    api: ApiServer,
) -> None:
    # Given an API paging 25 records by 10 and a token in Secrets Manager
    paging(api)
    boto3.client("secretsmanager").create_secret(
        Name="api/token", SecretString=json.dumps({"token": "s3cr3t"})
    )
    config = FetchConfig(
        source="crm",
        endpoint="customers",
        url=api.url + "/customers",
        params={"status": "all"},
        auth=AuthConfig(secret_id="api/token", secret_key="token", prefix="Bearer "),
        pagination=Pagination(kind="page", size_param="per_page", page_size=10),
    )
    io = s3_io()
    sleeps: list[float] = []
    # When fetching
    result = fetch_to_landing(
        config,
        io,
        "s3://raw-bucket",
        deps=FetchDeps(
            auth_header_value=resolve_auth_header(config.auth),  # type: ignore[arg-type]
            sleep=sleeps.append,
            now=datetime(2026, 11, 1, 12, 0, tzinfo=UTC),
        ),
    )
    # Then three requests with the credential and the page parameters were made
    assert [r.query["page"] for r in api.requests] == ["1", "2", "3"]
    assert all(r.query["per_page"] == "10" and r.query["status"] == "all" for r in api.requests)
    assert {r.headers["authorization"] for r in api.requests} == {"Bearer s3cr3t"}
    assert sleeps == [] and result.requests == 3
    # And each response landed byte for byte under raw/{source}/{endpoint}/{run_id}/ with a .pending marker
    run_id = result.manifest.run_id
    assert run_id.startswith("20261101T120000")
    prefix = f"raw/crm/customers/{run_id}/"
    assert s3_keys() == [prefix + ".pending"] + [prefix + f"page-00000{i}.json" for i in (1, 2, 3)]
    for i, sent in enumerate(api.sent, start=1):
        assert io.read(f"s3://raw-bucket/{prefix}page-00000{i}.json") == sent
    assert result.manifest.record_count == 25 and result.bytes == sum(map(len, api.sent))
    pending = list_pending(io, "s3://raw-bucket", "crm", "customers")
    assert [p.manifest for p in pending] == [result.manifest]


def test_cursor_pagination_follows_the_cursor_until_it_is_null(api: ApiServer, tmp_path: Path) -> None:
    cursors = {None: ("c1", [1, 2]), "c1": ("c2", [3]), "c2": (None, [4, 5])}

    def behaviour(req: SeenRequest, _n: int) -> Reply:
        nxt, ids = cursors[req.query.get("after")]
        return Reply(body=json.dumps({"meta": {"next": nxt}, "items": [{"id": i} for i in ids]}).encode())

    api.behaviour = behaviour
    config = FetchConfig(
        source="shop",
        endpoint="orders",
        url=api.url + "/orders",
        records_path="items",
        pagination=Pagination(kind="cursor", cursor_param="after", cursor_path="meta.next"),
    )
    result = fetch_to_landing(config, LocalFileIO(), str(tmp_path))
    assert [r.query.get("after") for r in api.requests] == [None, "c1", "c2"]
    assert result.manifest.record_count == 5 and len(result.manifest.pages) == 3
    assert (Path(result.batch_uri) / PENDING).is_file()


def test_a_looping_cursor_is_refused_and_nothing_is_marked_pending(api: ApiServer, tmp_path: Path) -> None:
    api.behaviour = lambda _r, _n: Reply(body=b'{"data": [{"id": 1}], "next_cursor": "same"}')
    config = FetchConfig(source="s", endpoint="e", url=api.url, pagination=Pagination(kind="cursor"))
    with pytest.raises(PaginationError, match="twice"):
        fetch_to_landing(config, LocalFileIO(), str(tmp_path))
    assert list_pending(LocalFileIO(), str(tmp_path), "s", "e") == []
    assert not list(tmp_path.rglob(PENDING))


def test_max_pages_refuses_a_partial_batch(api: ApiServer, tmp_path: Path) -> None:
    paging(api)
    config = FetchConfig(
        source="s",
        endpoint="e",
        url=api.url,
        pagination=Pagination(kind="page", size_param="per_page", page_size=10, max_pages=2),
    )
    with pytest.raises(PaginationError, match="max_pages=2"):
        fetch_to_landing(config, LocalFileIO(), str(tmp_path))
    assert not list(tmp_path.rglob(PENDING))


def test_429_is_retried_after_the_servers_retry_after(api: ApiServer, tmp_path: Path) -> None:
    # Given an API that throttles the second request once, asking for 7 s
    def behaviour(req: SeenRequest, n: int) -> Reply:
        if n == 1:
            return Reply(status=429, body=b'{"error":"slow down"}', headers={"Retry-After": "7"})
        return Reply(body=paged_records(RECORDS, int(req.query["page"]), 10))

    api.behaviour = behaviour
    config = FetchConfig(
        source="s",
        endpoint="e",
        url=api.url,
        retry=FAST_RETRY,
        pagination=Pagination(kind="page", size_param="per_page", page_size=10),
    )
    sleeps: list[float] = []
    result = fetch_to_landing(config, LocalFileIO(), str(tmp_path), deps=FetchDeps(sleep=sleeps.append))
    # Then it waited exactly what the server asked, re-requested the same page, and landed all pages
    assert sleeps == [7.0]
    assert [r.query["page"] for r in api.requests] == ["1", "2", "2", "3"]
    assert result.requests == 4 and result.manifest.record_count == 25 and len(result.manifest.pages) == 3


def test_retry_after_is_capped_and_accepts_http_dates() -> None:
    now = datetime(2026, 11, 1, tzinfo=UTC)
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None
    policy = RetryPolicy(backoff_base_s=1, backoff_max_s=5, jitter=False)
    assert [backoff_seconds(policy, a) for a in (1, 2, 3, 4)] == [1, 2, 4, 5]
    jittered = RetryPolicy(backoff_base_s=1, backoff_max_s=5)
    assert all(2 <= backoff_seconds(jittered, 3) <= 4 for _ in range(50))


def test_persistent_5xx_exhausts_retries_with_backoff_and_lands_no_marker(
    api: ApiServer, tmp_path: Path
) -> None:
    api.behaviour = lambda _r, n: Reply(body=b'{"data": [{"id": 1}]}') if n == 0 else Reply(status=503)
    config = FetchConfig(
        source="s",
        endpoint="e",
        url=api.url,
        retry=FAST_RETRY,
        pagination=Pagination(kind="page", size_param="per_page", page_size=1),
    )
    sleeps: list[float] = []
    with pytest.raises(RetriesExhaustedError, match="failed 3 time") as info:
        fetch_to_landing(config, LocalFileIO(), str(tmp_path), deps=FetchDeps(sleep=sleeps.append))
    assert info.value.last_status == 503
    assert sleeps == [0.1, 0.2] and len(api.requests) == 4
    assert list(tmp_path.rglob("page-000001.json")) and not list(tmp_path.rglob(PENDING))


def test_a_500_then_success_recovers(api: ApiServer, tmp_path: Path) -> None:
    api.behaviour = lambda _r, n: Reply(status=500) if n == 0 else Reply(body=b'{"data": [{"id": 1}]}')
    config = FetchConfig(source="s", endpoint="e", url=api.url, retry=FAST_RETRY)
    sleeps: list[float] = []
    result = fetch_to_landing(config, LocalFileIO(), str(tmp_path), deps=FetchDeps(sleep=sleeps.append))
    assert sleeps == [0.1] and result.manifest.record_count == 1


def test_a_4xx_is_not_retried(api: ApiServer, tmp_path: Path) -> None:
    api.behaviour = lambda _r, _n: Reply(status=403, body=b'{"error":"bad token"}')
    config = FetchConfig(source="s", endpoint="e", url=api.url, retry=FAST_RETRY)
    with pytest.raises(HTTPStatusError, match="HTTP 403") as info:
        fetch_to_landing(config, LocalFileIO(), str(tmp_path), deps=FetchDeps(sleep=lambda _s: None))
    assert info.value.status == 403 and len(api.requests) == 1


def test_read_timeouts_are_retried_then_reported(api: ApiServer, tmp_path: Path) -> None:
    api.behaviour = lambda _r, _n: Reply(body=b'{"data": []}', delay_s=0.6)
    config = FetchConfig(source="s", endpoint="e", url=api.url, retry=FAST_RETRY, read_timeout_s=0.15)
    with pytest.raises(RetriesExhaustedError, match="timed out") as info:
        fetch_to_landing(config, LocalFileIO(), str(tmp_path), deps=FetchDeps(sleep=lambda _s: None))
    assert info.value.last_status is None and len(api.requests) == 3


def test_one_slow_response_is_retried(api: ApiServer, tmp_path: Path) -> None:
    api.behaviour = lambda _r, n: Reply(body=b'{"data": [{"id": 9}]}', delay_s=0.6 if n == 0 else 0)
    config = FetchConfig(source="s", endpoint="e", url=api.url, retry=FAST_RETRY, read_timeout_s=0.15)
    result = fetch_to_landing(config, LocalFileIO(), str(tmp_path), deps=FetchDeps(sleep=lambda _s: None))
    assert result.requests == 2 and result.manifest.record_count == 1


def test_connection_refused_is_retried_then_reported(tmp_path: Path) -> None:
    with ApiServer() as dead:
        url = dead.url  # the port is closed once the server is gone
    config = FetchConfig(source="s", endpoint="e", url=url, retry=FAST_RETRY)
    with pytest.raises(RetriesExhaustedError, match="connection failed"):
        fetch_to_landing(config, LocalFileIO(), str(tmp_path), deps=FetchDeps(sleep=lambda _s: None))


def test_a_non_json_body_or_missing_records_path_is_an_invalid_response(
    api: ApiServer, tmp_path: Path
) -> None:
    api.behaviour = lambda _r, _n: Reply(body=b"<html>")
    config = FetchConfig(source="s", endpoint="e", url=api.url)
    with pytest.raises(InvalidResponseError, match="not JSON"):
        fetch_to_landing(config, LocalFileIO(), str(tmp_path))
    api.behaviour = lambda _r, _n: Reply(body=b'{"rows": []}')
    with pytest.raises(InvalidResponseError, match="no 'data'"):
        fetch_to_landing(config, LocalFileIO(), str(tmp_path))


@pytest.mark.usefixtures("aws_env")
def test_pending_batches_are_listed_oldest_first_and_completed_ones_disappear(api: ApiServer) -> None:
    api.behaviour = lambda _r, n: Reply(body=json.dumps({"data": [{"id": n}]}).encode())
    config = FetchConfig(source="crm", endpoint="customers", url=api.url)
    io = s3_io()
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    # Fetched out of order: the listing must follow fetch time, not landing order
    late = fetch_to_landing(config, io, "s3://raw-bucket/lake", deps=FetchDeps(now=t0 + timedelta(hours=2)))
    early = fetch_to_landing(config, io, "s3://raw-bucket/lake", deps=FetchDeps(now=t0))
    middle = fetch_to_landing(config, io, "s3://raw-bucket/lake", deps=FetchDeps(now=t0 + timedelta(hours=1)))
    listed = list_pending(io, "s3://raw-bucket/lake", "crm", "customers")
    assert [b.uri for b in listed] == [early.batch_uri, middle.batch_uri, late.batch_uri]
    # When the oldest is completed, and the middle one crashed after writing .complete only
    mark_complete(io, early.batch_uri, {"snapshot_id": 1})
    io.write(f"{middle.batch_uri}/{COMPLETE}", b"{}")
    # Then only the newest remains pending; the marker of the completed one is gone
    assert [b.uri for b in list_pending(io, "s3://raw-bucket/lake", "crm", "customers")] == [late.batch_uri]
    assert io.stat(f"{early.batch_uri}/{PENDING}") is None
    assert json.loads(io.read(f"{early.batch_uri}/{COMPLETE}"))["snapshot_id"] == 1


@pytest.mark.usefixtures("aws_env")
def test_secret_lookup_failures_are_named() -> None:
    sm = boto3.client("secretsmanager")
    sm.create_secret(Name="plain", SecretString="abc")
    assert resolve_auth_header(AuthConfig(secret_id="plain", header="X-Api-Key")) == "abc"
    with pytest.raises(SecretLookupError, match="ResourceNotFoundException"):
        resolve_auth_header(AuthConfig(secret_id="missing"))
    with pytest.raises(SecretLookupError, match="not JSON"):
        resolve_auth_header(AuthConfig(secret_id="plain", secret_key="token"))


def test_config_rejects_names_that_would_escape_the_landing_prefix() -> None:
    with pytest.raises(ValueError, match="S3 key part"):
        FetchConfig(source="../x", endpoint="e", url="http://127.0.0.1")
    with pytest.raises(ValueError, match="http"):
        FetchConfig(source="s", endpoint="e", url="ftp://x")
