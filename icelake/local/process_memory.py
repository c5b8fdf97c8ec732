"""Resident memory of this process, as Linux accounts it (/proc/self/status).

Lambda reports "Max Memory Used" as the peak resident set of its process. Embedded AWS runs every
handler in one shared process, so a handler's own peak is measured as the process's peak while it
runs: the kernel's high-water mark (VmHWM) is reset to the current size before the call
(/proc/self/clear_refs, "5") and read after it.
"""

from __future__ import annotations

import re
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _kib(field: str) -> int:
    found = re.search(rf"^{field}:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    if found is None:
        raise OSError(f"{_STATUS} has no {field}: resident memory is measured on Linux only")
    return int(found.group(1))


def rss_mib() -> float:
    """The resident set now."""
    return _kib("VmRSS") / 1024


def peak_rss_mib() -> float:
    """The highest resident set since the process started or since `reset_peak`."""
    return _kib("VmHWM") / 1024


def reset_peak() -> None:
    """Make the high-water mark the current resident set (also what getrusage's ru_maxrss reads)."""
    _CLEAR_REFS.write_text("5")
