"""An HTTP proxy on 127.0.0.1 that makes S3 (moto) behave like S3 under load: some requests are
answered `503 SlowDown` without reaching the server, and some responses are lost after the server
acted on the request (the connection closes before a byte of the answer). Seeded, so a failing
seed can be replayed."""

from __future__ import annotations

import http.client
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from icelake.local.moto_server import STOP_POLL_SECONDS

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}


@dataclass
class FaultStats:
    requests: int = 0
    slowed: int = 0
    dropped: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


@contextmanager
def fault_proxy(
    upstream: str, *, seed: int, slow_down: float = 0.10, drop_response: float = 0.05
) -> Iterator[tuple[str, FaultStats]]:
    """Yields (proxy endpoint URL, counters) for requests to `upstream` (http://host:port)."""
    target = urlsplit(upstream)
    rng = random.Random(seed)
    stats = FaultStats()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0], 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _forward(self) -> None:
            body = self._body()
            with stats.lock:
                stats.requests += 1
                roll = rng.random()
            if roll < slow_down:
                with stats.lock:
                    stats.slowed += 1
                self.send_response(503, "Slow Down")
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(SLOW_DOWN)))
                self.end_headers()
                self.wfile.write(SLOW_DOWN)
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Content-Length"] = str(len(body))
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
            finally:
                conn.close()
            if roll < slow_down + drop_response:
                with stats.lock:
                    stats.dropped += 1
                self.close_connection = True  # the request took effect; its answer is lost
                return
            self.send_response(answer.status, answer.reason)
            for k, v in answer.getheaders():
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            # A HEAD answer has no body but the object's length.
            length = answer.getheader("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length or str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": STOP_POLL_SECONDS}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", stats
    finally:
        server.shutdown()
        server.server_close()
