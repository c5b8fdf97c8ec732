"""The results files' tables: where a benchmark's new row goes."""

from __future__ import annotations


def with_row(text: str, heading: str, row: str) -> str:
    """`text` with `row` after the last row of the first table below the line that starts with
    `heading` (the results table; later ones in a section break figures down)."""
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(heading))
    while at < len(lines) and not lines[at].startswith("|"):
        at += 1
    while at < len(lines) and lines[at].startswith("|"):
        at += 1
    return "\n".join([*lines[:at], row, *lines[at:]])
