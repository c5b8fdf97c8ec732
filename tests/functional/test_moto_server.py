"""The embedded AWS server's port: one the system binds when none is given (two test processes
start servers at once), and a clear refusal, not a hang, when the given one is taken."""

from __future__ import annotations

import os
import socket
import urllib.request

import pytest

from icelake.errors import PortInUseError
from icelake.local.moto_server import embedded_aws


def _answers(endpoint: str) -> bool:
    with urllib.request.urlopen(f"{endpoint}/moto-api/data.json", timeout=10) as response:
        return bool(response.status == 200)


def test_without_a_port_the_server_binds_one_the_system_picks_and_names_it() -> None:
    before = os.environ.get("AWS_ENDPOINT_URL")
    with embedded_aws() as first, embedded_aws() as second:
        assert first != second
        assert _answers(first) and _answers(second)
        assert second == f"http://127.0.0.1:{os.environ['MOTO_PORT']}"  # the innermost server's port
        assert os.environ["AWS_ENDPOINT_URL"] == second
    assert os.environ.get("AWS_ENDPOINT_URL") == before  # restored


@pytest.mark.timeout(60)
def test_a_taken_port_is_refused_at_once_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = pytest.raises(PortInUseError, match=rf"port {port} on 127.0.0.1 is in use.*--port 0")
        with refused, embedded_aws(port):
            pass
