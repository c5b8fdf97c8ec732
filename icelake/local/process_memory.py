"""Resident memory of this process, as Linux accounts it (/proc/self/status).

Lambda reports "Max Memory Used" as the peak resident set of its process. Embedded AWS runs every
handler in one shared process, so a handler's own peak is measured as the process's peak while it
runs: the kernel's high-water mark (VmHWM) is reset to the current size before the call
(/proc/self/clear_refs, "5") and read after it.
"""

from __future__ import annotations

import re
from pathlib import Path

_CLEAR_REFS = Path("/proc/self/clear_refs")


def _kib(field: str, pid: int | str = "self") -> int:
    status = Path(f"/proc/{pid}/status")
    found = re.search(rf"^{field}:\s+(\d+) kB", status.read_text(), re.MULTILINE)
    if found is None:
        raise OSError(f"{status} has no {field}: resident memory is measured on Linux only")
    return int(found.group(1))


def rss_mib() -> float:
    """The resident set now."""
    return _kib("VmRSS") / 1024


def peak_rss_mib(pid: int | str = "self") -> float:
    """The highest resident set of this process (or `pid`) since it started (its exec: unlike
    getrusage's ru_maxrss, which keeps the size of the process that forked it) or since `reset_peak`."""
    return _kib("VmHWM", pid) / 1024


def child_pids(parent: int) -> list[int]:
    """The processes whose parent is `parent` now."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(entry.name))
    return found


def reset_peak() -> None:
    """Make the high-water mark the current resident set (also what getrusage's ru_maxrss reads)."""
    _CLEAR_REFS.write_text("5")
