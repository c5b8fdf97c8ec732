"""Fixtures for the ingestion tests: a real HTTP API on loopback, embedded AWS (moto)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from moto import mock_aws


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class SeenRequest:
    path: str
    query: dict[str, str]
    headers: dict[str, str]


Behaviour = Callable[[SeenRequest, int], Reply]  # (request, 0-based request number) -> reply


class ApiServer:
    """A ThreadingHTTPServer on 127.0.0.1 answering GETs with whatever `behaviour` decides."""

    def __init__(self) -> None:
        self.behaviour: Behaviour = lambda _req, _n: Reply()
        self.requests: list[SeenRequest] = []
        self.sent: list[bytes] = []
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parsed = urlparse(self.path)
                req = SeenRequest(
                    parsed.path,
                    {k: v[-1] for k, v in parse_qs(parsed.query).items()},
                    {k.lower(): v for k, v in self.headers.items()},
                )
                with api._lock:
                    number = len(api.requests)
                    api.requests.append(req)
                reply = api.behaviour(req, number)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(reply.body)
                    if reply.status < 400:
                        with api._lock:
                            api.sent.append(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        ThreadingHTTPServer.block_on_close = False
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer() as server:
        yield server


def paged_records(records: list[dict[str, Any]], page: int, size: int) -> bytes:
    chunk = records[(page - 1) * size : page * size]
    return json.dumps({"data": chunk, "page": page}).encode()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in-process, with fake credentials and no endpoint override."""
    for key in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        yield


@pytest.fixture(scope="session")
def ingest_catalog(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Hadoop Iceberg catalog `ingest` in a temp dir, added to the shared SparkSession."""
    warehouse = tmp_path_factory.mktemp("ingest-warehouse")
    spark.conf.set("spark.sql.catalog.ingest", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.ingest.type", "hadoop")
    spark.conf.set("spark.sql.catalog.ingest.warehouse", str(warehouse))
    return "ingest"
