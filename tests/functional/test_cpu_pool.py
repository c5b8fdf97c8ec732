"""The manifest-rewrite worker processes die with their parent: a `kill -9` of icelake leaves no
worker (and so no resource_tracker) behind holding the caller's stdout and stderr."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

PARENT = textwrap.dedent(
    """
    import os, sys, time
    from icelake.migrate.copy.cpu_pool import cpu_pool

    with cpu_pool(2) as pool:
        futures = [pool.submit(time.sleep, 60) for _ in range(2)]
        time.sleep(2)  # the workers have started
        print(" ".join(str(p) for p in pool._processes), flush=True)
        time.sleep(60)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose (its parent, the killed process, can no longer reap it)
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_exit_when_the_parent_is_killed() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    workers = [int(p) for p in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(_alive(p) for p in workers)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in workers if _alive(p)]
    # and nothing keeps the pipe open: EOF arrives once the workers are gone
    assert parent.stdout.read() == ""
