"""Where the commands print: results on stdout, messages on stderr, and how a command's failure
ends (one line on stderr, never a traceback). Below the command modules that share it
(icelake/cli.py, icelake/assess/cli.py, icelake/ingest/cli.py), which import nothing of each other's
for it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import typer
from rich.console import Console

from icelake.errors import IcelakeError
from icelake.explain import explain

PIPE_WIDTH = 160  # rich assumes 80 columns off a terminal, which cuts table names and errors

err = Console(stderr=True, soft_wrap=True)  # one line per message, never hard-wrapped in logs


def say(text: str) -> None:
    """One line on stderr as written: no markup and no highlighting (a name in [brackets] stays)."""
    err.print(text, highlight=False, markup=False, soft_wrap=True)


def stdout_console() -> Console:
    """A console for results on stdout: the terminal's width, or a wide one in logs and pipes."""
    return Console(width=None if sys.stdout.isatty() else PIPE_WIDTH)


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """Every failure of a command ends in one line on stderr, never a traceback: exit 2 for bad
    input (icelake's own refusals), 1 for the environment (file system, AWS, network)."""
    try:
        yield
    except typer.Exit:
        raise
    except (IcelakeError, ValueError) as exc:
        err.print(f"icelake: error: {exc}", highlight=False, soft_wrap=True, markup=False)
        raise typer.Exit(2) from exc
    except Exception as exc:
        message = explain(exc) or f"unexpected error: {type(exc).__name__}: {exc}"
        err.print(f"icelake: error: {message}", highlight=False, soft_wrap=True, markup=False)
        raise typer.Exit(1) from exc
