"""Embedded AWS: moto as a server on loopback, reachable by boto3, pyarrow and the CLI alike."""

from __future__ import annotations

import logging
import os
import socket
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from icelake.aws import warm
from icelake.errors import PortInUseError
from icelake.local import s3tables

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


@contextmanager
def embedded_aws(port: int | None = None) -> Iterator[str]:
    """Start moto on 127.0.0.1 and point AWS clients at it; yields the endpoint URL.

    The previous environment is restored on exit. MOTO_PORT is set because moto's own
    Step Functions interpreter calls back to localhost on that port.
    """
    from moto.server import ThreadedMotoServer

    # One line per HTTP request and a stack per failed task state drown what the user should see.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    # No port given: the server binds one the system picks (0), so two servers started at once (two
    # test processes) never race for the port a probe found free, nor reset each other's state.
    if port:
        _refuse_taken(port)  # moto's server would wait forever for a bind that failed in its thread
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port or 0, verbose=False)
    # S3 Tables as AWS serves it, in every embedded AWS (moto builds a service's routes at first use)
    with s3tables.patched():
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
        try:
            yield endpoint
        finally:
            warm.forget()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            server.stop()
