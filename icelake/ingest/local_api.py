"""A small HTTP JSON API on 127.0.0.1 for local runs and tests of the ingestion workflow.

`ApiServer` answers GETs with whatever its `behaviour` decides (tests script throttling and
failures with it). `GeneratedSource` is a deterministic dimension that changes from run to run
(new keys, changed values including NULL transitions, deleted keys, a stale duplicate per run) and
`serve_pages` serves its current records with page pagination and a bearer token, the way a real
API would.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from icelake.local.moto_server import STOP_POLL_SECONDS

__all__ = [
    "ApiServer",
    "Behaviour",
    "GeneratedSource",
    "Reply",
    "RunChanges",
    "SeenRequest",
    "paged_records",
    "serve_pages",
]


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
    """A ThreadingHTTPServer on 127.0.0.1 (free port) answering GETs with whatever `behaviour` decides."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour: Behaviour = behaviour or (lambda _req, _n: Reply())
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
        # socketserver's default poll (0.5 s) made each stop wait that long
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": STOP_POLL_SECONDS}, daemon=True
        )

    def __enter__(self) -> ApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def paged_records(records: list[dict[str, Any]], page: int, size: int) -> bytes:
    chunk = records[(page - 1) * size : page * size]
    return json.dumps({"data": chunk, "page": page}).encode()


def serve_pages(
    records: Callable[[], list[dict[str, Any]]],
    *,
    path: str = "/customers",
    token: str | None = None,
    page_param: str = "page",
    size_param: str = "per_page",
    default_size: int = 100,
) -> Behaviour:
    """A behaviour serving `records()` page by page (`?page=1&per_page=100`, pages from 1); an
    empty page ends the listing. With `token`, requests without `Authorization: Bearer <token>`
    get 401."""

    def behaviour(req: SeenRequest, _n: int) -> Reply:
        if req.path != path:
            return Reply(404, json.dumps({"error": f"no such endpoint {req.path}"}).encode())
        if token is not None and req.headers.get("authorization") != f"Bearer {token}":
            return Reply(401, b'{"error": "unauthorized"}')
        try:
            page = int(req.query.get(page_param, "1"))
            size = int(req.query.get(size_param, str(default_size)))
        except ValueError:
            return Reply(400, b'{"error": "bad paging parameters"}')
        if page < 1 or size < 1:
            return Reply(400, b'{"error": "bad paging parameters"}')
        return Reply(body=paged_records(records(), page, size))

    return behaviour


@dataclass(frozen=True)
class RunChanges:
    """What one `GeneratedSource.advance` did (the versions a full-load SCD2 merge must produce)."""

    run: int
    inserted: tuple[int, ...]  # new keys
    changed: tuple[int, ...]  # keys whose tracked values changed
    null_transitions: tuple[int, ...]  # changed keys whose `email` went NULL -> value or value -> NULL
    deleted: tuple[int, ...]  # keys no longer served


class GeneratedSource:
    """A deterministic customer dimension that changes from run to run.

    Records: `id` (key), `name`, `email` (nullable), `tier`, `updated_at` (the run number). Each
    `advance()` inserts new keys, changes some keys (half of them flip `email` between NULL and a
    value, the rest change `tier`), deletes a few keys, and leaves the rest alone. Every run's
    listing also carries one stale duplicate of a changed key (older `updated_at`, a bogus tier)
    that a correct merge must ignore. `advance(quiet=True)` changes nothing (a re-delivery).
    """

    def __init__(self, initial: int = 50, *, seed: int = 7, change_rate: float = 0.1) -> None:
        self.rng = random.Random(seed)
        self.change_rate = change_rate
        self.run = 0
        self.next_id = initial + 1
        self.current: dict[int, dict[str, Any]] = {i: self._new(i) for i in range(1, initial + 1)}
        self.stale: list[dict[str, Any]] = []
        self.history: list[RunChanges] = [RunChanges(0, tuple(self.current), (), (), ())]
        self._lock = threading.Lock()

    def _new(self, key: int) -> dict[str, Any]:
        return {
            "id": key,
            "name": f"customer {key}",
            "email": None if key % 4 == 0 else f"c{key}@example.com",
            "tier": "basic",
            "updated_at": self.run,
        }

    def records(self) -> list[dict[str, Any]]:
        """The listing the API serves now: every live record by key, then the stale duplicates."""
        with self._lock:
            return [dict(self.current[k]) for k in sorted(self.current)] + [dict(r) for r in self.stale]

    def advance(self, *, quiet: bool = False) -> RunChanges:
        with self._lock:
            self.run += 1
            self.stale = []
            if quiet:
                changes = RunChanges(self.run, (), (), (), ())
                self.history.append(changes)
                return changes
            keys = sorted(self.current)
            n = max(2, int(len(keys) * self.change_rate))
            picked = self.rng.sample(keys, min(len(keys), 2 * n))
            changed, deleted = sorted(picked[:n]), sorted(picked[n : n + max(1, n // 2)])
            nulls = []
            for i, key in enumerate(changed):
                row = dict(self.current[key], updated_at=self.run)
                if i % 2 == 0:
                    row["email"] = None if row["email"] is not None else f"c{key}.r{self.run}@example.com"
                    nulls.append(key)
                else:
                    row["tier"] = f"tier-{self.run}-{key % 3}"
                self.current[key] = row
            self.stale.append(dict(self.current[changed[0]], tier="stale", updated_at=self.run - 1))
            for key in deleted:
                del self.current[key]
            inserted = []
            for _ in range(n):
                key = self.next_id
                self.next_id += 1
                self.current[key] = self._new(key)
                inserted.append(key)
            changes = RunChanges(self.run, tuple(inserted), tuple(changed), tuple(nulls), tuple(deleted))
            self.history.append(changes)
            return changes
