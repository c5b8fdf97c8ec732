"""The results files' tables: where a benchmark's new row goes."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def head_commit() -> str:
    """The short hash of the commit checked out: what a result was measured at."""
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO, check=False
    ).stdout.strip()


def saved_result(kind: str, res: dict[str, Any]) -> tuple[str, str, Path]:
    """`res` with its commit, as benchmarks/results/<kind>-<files>-<day>-<commit>.json (the day
    of its `recorded_at`); returns the day, the commit and the file."""
    commit = head_commit()
    day = res["recorded_at"][:10]
    path = REPO / "benchmarks" / "results" / f"{kind}-{res['files']}-{day}-{commit}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({**res, "commit": commit}, indent=2) + "\n")
    return day, commit, path


def run_facts() -> dict[str, Any]:
    """Where and when a result was measured: its row's first columns (date, commit, cores, load)."""
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": head_commit(),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "load_average": round(os.getloadavg()[0], 1),
    }


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


def record_row(doc: Path, heading: str, section: str, row: str) -> None:
    """`row` into the results table below `heading` in `doc`; when `doc` has no such section yet,
    it is added at the end: the heading, then `section` (its prose and the table's header)."""
    text = doc.read_text()
    if heading not in text:
        text += f"\n{heading}\n\n{section}"
    doc.write_text(with_row(text, heading, row))
