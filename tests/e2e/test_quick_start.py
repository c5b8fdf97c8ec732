"""The README's local quick start, verbatim: `icelake local up --with-lake` in one shell, the
`export` line it prints and `icelake migrate start --request tests/events/migrate_request.json`
in another. Every table of the source database `sales` must end migrated."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def _icelake() -> str:
    return shutil.which("icelake", path=os.path.dirname(sys.executable)) or "icelake"


def _clean_env() -> dict[str, str]:
    """The user's shell: no endpoint or credentials of the test session."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


def test_the_readme_quick_start_migrates_the_sample_tables(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    assert "icelake local up --with-lake" in readme
    assert "icelake migrate start --request tests/events/migrate_request.json" in readme

    env = {**_clean_env(), "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [_icelake(), "local", "up", "--with-lake", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=REPO,
    )
    assert server.stdout is not None
    printed: list[str] = []
    try:
        timer = threading.Timer(300, server.kill)  # never hang the suite on a server that did not start
        timer.start()
        for line in server.stdout:
            printed.append(line.rstrip())
            if line.startswith("Ctrl-C stops it"):
                break
        timer.cancel()
        exports = next(line for line in printed if line.strip().startswith("export "))
        shell = {**_clean_env()}
        for assignment in shlex.split(exports.strip())[1:]:
            key, _, value = assignment.partition("=")
            shell[key] = value
        assert any("sales.customers" in line and "sales.orders" in line for line in printed), printed

        started = subprocess.run(
            [_icelake(), "migrate", "start", "--request", "tests/events/migrate_request.json"],
            capture_output=True,
            text=True,
            env=shell,
            cwd=REPO,
            timeout=600,
            check=False,
        )
        assert started.returncode == 0, started.stdout + started.stderr
        output = started.stdout + started.stderr
        assert "Traceback" not in output
        for table in ("sales.orders", "sales.customers"):
            assert any(table in line and "migrated" in line for line in output.splitlines()), output
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
