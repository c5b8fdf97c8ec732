"""Where the commands print results."""

from __future__ import annotations

import sys

from rich.console import Console

PIPE_WIDTH = 160  # rich assumes 80 columns off a terminal, which cuts table names and errors


def stdout_console() -> Console:
    """A console for results on stdout: the terminal's width, or a wide one in logs and pipes."""
    return Console(width=None if sys.stdout.isatty() else PIPE_WIDTH)
