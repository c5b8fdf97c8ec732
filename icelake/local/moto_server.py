"""Embedded AWS: moto as a server on loopback, reachable by boto3, pyarrow and the CLI alike.

The server holds what moto works out again for every request and every execution (`kept`); the
workflow's patches without a server (`embedded.moto_patches`) hold them too. Reference-counted
(`patching.Patches`): the last holder puts moto back exactly. Verified on embedded.MOTO_VERSION.

1. `moto.backends.list_of_moto_modules()`: moto's server looks for the backend of every request by
   listing its own package directory (about 170 stat calls, twice, under a global lock): 1.5-2 ms
   of the 8-10 ms a request costs here. The directory does not change while the process runs.
2. `AmazonStateLanguageParser.parse(definition)`: moto parses a state machine's definition again
   for every execution it starts (ANTLR in pure Python: 0.12 s for the migration's ASL on a quiet
   machine, 7.5 % of the Python samples of a run of the workflow tests). The parsed program keeps
   no execution's state: every value lives in the execution's Environment, and a Map's iterations
   already share their processor's tree while they run side by side. Kept per definition text, for
   the whole process: moto parses a definition when it creates the state machine too, and every
   e2e test creates the same machines in an embedded AWS of its own.
3. `BackendDict[account]`: every lookup of a service's backend (several per request) takes moto's
   global backend lock, lists the accounts and compares itself with every backend in use through
   Python-level `__eq__` and `__len__` calls: 2.2 % of the test workers' Python samples, each
   request waiting on the others' lock. A backend that already holds the account and is already
   listed for reset is returned at once; anything else goes the original way, under the lock.

While it runs, the process collects its cyclic garbage less often (`icelake.heap.roomy_gc`): the
demo took 28.1 s against 24.9 s with the roomier thresholds.

The server also takes this process's own botocore requests without a socket (`in_process`): a
request to its address goes straight to the WSGI app it serves, in an environ built by moto's own
request handler, and its answer back to botocore as urllib3's would be. Over loopback a request cost
7 ms of this process's CPU (client, server thread, connection made and closed: werkzeug's server
closes every connection); in process 3 ms (3,600 S3 requests from 4 threads: 23.6-26.8 s of CPU against
10.6-11.1 s). Everything above the transport is the same: botocore's hooks, signing, retries and parsers;
moto's dispatch, routes and responses. Other processes (the CLI, isolated Lambda interpreters) and
other HTTP clients (Spark's S3A, pyarrow) reach the server over loopback as before.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import os
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http.client import HTTPMessage
from typing import Any
from urllib.parse import SplitResult, urlsplit

from icelake.aws import warm
from icelake.errors import PortInUseError
from icelake.heap import roomy_gc
from icelake.local import s3tables
from icelake.local.patching import Patches

_KEPT = Patches()  # what moto recomputes (the module's docstring), kept
_IN_PROCESS = Patches()  # botocore's Endpoint._send, routing requests to a server of this process
_ROUTES: dict[str, Any] = {}  # "127.0.0.1:port" and "localhost:port" -> that server (werkzeug's)
_ROUTES_LOCK = threading.Lock()
STOP_POLL_SECONDS = 0.02  # how often a serving loop looks whether it was asked to stop


def _keep() -> None:
    from moto import backends as moto_backends
    from moto.core.base_backend import BackendDict
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    modules = tuple(moto_backends.list_of_moto_modules())
    _KEPT.replace(moto_backends, "list_of_moto_modules", lambda: iter(modules))
    parse = AmazonStateLanguageParser.__dict__["parse"].__func__  # a staticmethod's function
    _KEPT.replace(AmazonStateLanguageParser, "parse", staticmethod(_parsed(parse)))
    _KEPT.replace(BackendDict, "_create_account_specific_backend", _when_missing(BackendDict))


@functools.cache
def _parsed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """moto's ASL `parse`, its programs kept for the whole process, not for one embedded AWS."""
    return functools.lru_cache(maxsize=32)(parse)


def _when_missing(backend_dict: Any) -> Any:
    """moto's `BackendDict._create_account_specific_backend`, skipped when there is nothing to
    create: the account's backend exists and the dict is listed for reset (`reset` empties the
    dicts it lists and the list in place, so a reset dict goes the original way again)."""
    create = backend_dict._create_account_specific_backend
    listed = backend_dict._instances  # the list itself: reset() clears it in place

    def create_when_missing(self: Any, account_id: str) -> None:
        if dict.__contains__(self, account_id) and any(known is self for known in listed):
            return
        create(self, account_id)

    return create_when_missing


def acquire_kept() -> None:
    """Keep what moto recomputes (the first holder does), or count one holder more."""
    _KEPT.acquire(_keep)


def release_kept() -> None:
    """One holder less; the last restores moto."""
    _KEPT.release()


@contextmanager
def kept() -> Iterator[None]:
    """What moto recomputes, kept while the block runs."""
    acquire_kept()
    try:
        yield
    finally:
        release_kept()


LOCAL_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _refuse_taken(port: int) -> None:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is free
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise PortInUseError(port) from exc


class _Answer(io.BytesIO):
    """A whole answer, read by botocore as it reads urllib3's: read(amt), and stream() for content."""

    def stream(self, amt: int = 2**16, decode_content: bool | None = None) -> Iterator[bytes]:
        while chunk := self.read(amt):
            yield chunk


def _request_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    if isinstance(body, str):
        return body.encode()
    if hasattr(body, "read"):  # a file or botocore's stream wrappers: read whole, as urllib3 sends it
        return bytes(body.read())
    return b"".join(body)


def _environ(server: Any, request: Any, url: SplitResult, data: bytes) -> dict[str, Any]:
    """The WSGI environ the server's own request handler (moto's) builds for this request."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    headers = HTTPMessage()
    for name, value in request.headers.items():
        headers[name] = value.decode("latin-1") if isinstance(value, bytes) else value
    if "Host" not in headers:  # what urllib3 adds
        headers["Host"] = url.netloc
    if "chunked" in headers.get("Transfer-Encoding", ""):  # the body is whole here: sent by its length
        del headers["Transfer-Encoding"]
    if data and "Content-Length" not in headers:
        headers["Content-Length"] = str(len(data))
    handler = object.__new__(MotoRequestHandler)  # what the server makes per connection, minus socket
    handler.headers = headers
    handler.path = f"{url.path}?{url.query}" if url.query else url.path
    handler.command = request.method
    handler.request_version = "HTTP/1.1"
    handler.rfile = io.BytesIO(data)
    handler.server = server
    handler.connection = None  # no peer certificate: plain HTTP
    handler.client_address = ("127.0.0.1", 0)
    environ: dict[str, Any] = handler.make_environ()
    return environ


def _run(app: Callable[..., Iterable[bytes]], environ: dict[str, Any], started: list[Any]) -> bytes:
    written: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started[:] = [status, headers]
        return written.append

    answer = app(environ, start_response)
    try:
        written.extend(answer)
    finally:
        close = getattr(answer, "close", None)
        if close is not None:
            close()
    return b"".join(written)


def _dispatch(server: Any, request: Any, url: SplitResult) -> Any:
    """One botocore request answered by the server's WSGI app in this thread."""
    from botocore.awsrequest import AWSResponse, HeadersDict
    from werkzeug.exceptions import InternalServerError

    environ = _environ(server, request, url, _request_bytes(request.body))
    started: list[Any] = []
    try:
        body = _run(server.app, environ, started)
    except Exception:  # as werkzeug's server: logged, and answered 500 (botocore may retry it)
        logging.getLogger("werkzeug").exception("Error on request")
        body = _run(InternalServerError(), environ, started)
    status, pairs = started
    headers = HeadersDict()
    for name, value in pairs:  # a repeated header joined, as urllib3 joins it
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return AWSResponse(request.url, int(status.split(None, 1)[0]), headers, _Answer(body))


def _route_in_process() -> None:
    from botocore.endpoint import Endpoint

    send = Endpoint.__dict__["_send"]

    def in_process_send(self: Any, request: Any) -> Any:
        url = urlsplit(request.url)
        server = _ROUTES.get(url.netloc)
        return send(self, request) if server is None else _dispatch(server, request, url)

    _IN_PROCESS.replace(Endpoint, "_send", in_process_send)


@contextmanager
def in_process(server: Any, port: int) -> Iterator[None]:
    """This process's botocore requests to 127.0.0.1:port (or localhost) go to `server` (werkzeug's)
    without a socket while the block runs (the module's docstring)."""
    names = (f"127.0.0.1:{port}", f"localhost:{port}")
    _IN_PROCESS.acquire(_route_in_process)
    with _ROUTES_LOCK:
        _ROUTES.update(dict.fromkeys(names, server))
    try:
        yield
    finally:
        with _ROUTES_LOCK:
            for name in names:
                _ROUTES.pop(name, None)
        _IN_PROCESS.release()


def _moto_server(port: int) -> Any:
    """moto's threaded server on 127.0.0.1, which stops within STOP_POLL_SECONDS. moto's serves
    with socketserver's default poll interval, so each stop waited up to 0.5 s for the loop to look
    at its flag (0.27 s on average: most of an end-to-end test's teardown, with one embedded AWS to
    each test); its socket is closed too, where moto's stop leaves it open."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    class QuickStop(ThreadedMotoServer):
        def _server_entry(self) -> None:  # moto's own, but for the poll interval
            app = DomainDispatcherApplication(create_backend_app)
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever(poll_interval=STOP_POLL_SECONDS)

        def stop(self) -> None:
            super().stop()
            if self._server is not None:
                self._server.server_close()

    return QuickStop(ip_address="127.0.0.1", port=port, verbose=False)


@contextmanager
def embedded_aws(port: int | None = None, *, over_loopback_only: bool = False) -> Iterator[str]:
    """Start moto on 127.0.0.1 and point AWS clients at it; yields the endpoint URL.

    The previous environment is restored on exit. MOTO_PORT is set because moto's own
    Step Functions interpreter calls back to localhost on that port. This process's botocore
    clients reach it without a socket (`in_process`) unless `over_loopback_only`.
    """
    # One line per HTTP request and a stack per failed task state drown what the user should see.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    # No port given: the server binds one the system picks (0), so two servers started at once (two
    # test processes) never race for the port a probe found free, nor reset each other's state.
    if port:
        _refuse_taken(port)  # moto's server would wait forever for a bind that failed in its thread
    server = _moto_server(port or 0)
    # S3 Tables as AWS serves it, in every embedded AWS (moto builds a service's routes at first use)
    with s3tables.patched(), kept(), roomy_gc():
        server.start()
        port = server.get_host_and_port()[1]
        endpoint = f"http://127.0.0.1:{port}"
        # moto's backends are process-global: start every embedded AWS from an empty state.
        urllib.request.urlopen(
            urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=30
        )
        env = {**LOCAL_CREDENTIALS, "AWS_ENDPOINT_URL": endpoint, "MOTO_PORT": str(port)}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        warm.forget()  # sessions kept from an earlier embedded AWS hold credentials this one never issued
        routed = contextlib.nullcontext() if over_loopback_only else in_process(server._server, port)
        try:
            with routed:
                yield endpoint
        finally:
            warm.forget()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            server.stop()
