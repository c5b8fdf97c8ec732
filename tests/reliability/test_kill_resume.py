"""kill -9 of `icelake migrate path` at each phase, then a resume.

Whatever phase the kill lands in: no metadata.json on the target names a file that is missing,
the killed run leaves no process holding the caller's pipes, and running the same command again
gives a target byte-identical to an uninterrupted run, with no temp file of the dead run left.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable

from icelake.aws.fileio import LocalFileIO
from icelake.migrate import migrate_table
from icelake.migrate.copy.cpu_pool import MIN_MANIFESTS_FOR_PROCESSES

IO = LocalFileIO()
COMMITS = max(60, MIN_MANIFESTS_FOR_PROCESSES + 4)  # enough manifests for the worker processes
PHASES = [
    "check target files",
    "copy files",
    "rewrite manifests",
    "rewrite manifest lists",
    "rewrite metadata.json",
]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A table of COMMITS appends."""
    root = tmp_path_factory.mktemp("kill")
    catalog = SqlCatalog("c", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/src")
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
    table = catalog.create_table("db.t", schema=schema)
    for i in range(COMMITS):
        table.append(pa.table({"id": [i], "v": [f"row {i}" * 50]}, schema=schema))
    return catalog.load_table("db.t").metadata_location


@pytest.fixture(scope="module")
def reference(source: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The target location every phase's run writes to, and what an uninterrupted run writes there
    (paths are inside the files: one location, so one reference run for all the phases)."""
    target = tmp_path_factory.mktemp("kill-target") / "dst"
    migrate_table(source, str(target), src_io=IO, dst_io=IO)
    digests = _digests(target)
    shutil.rmtree(target)
    return target, digests


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _kill_in(phase: str, meta: str, target: Path) -> list[str]:
    """Start the CLI, kill -9 it as soon as it announces `phase`; the status lines it printed."""
    exe = shutil.which("icelake", path=os.path.dirname(sys.executable)) or "icelake"
    cmd = [exe, "migrate", "path", "--metadata", meta, "--target-location", str(target), "--workers", "1"]
    child = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert child.stderr is not None
    seen: list[str] = []
    for line in child.stderr:
        seen.append(line.strip())
        if line.startswith(f"[icelake] {phase}"):
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, f"the run ended before {phase}: {seen}"
    # Nothing the dead run started keeps the pipe open (worker processes die with it).
    reader = threading.Thread(target=child.stderr.read, daemon=True)
    reader.start()
    reader.join(15)
    assert not reader.is_alive(), "a process of the killed run still holds its stderr open"
    return seen


def _readable_metadata(target: Path) -> int:
    """Every metadata.json present plans only files that exist; returns how many there are."""
    found = sorted(target.rglob("*.metadata.json"))
    for path in found:
        table = StaticTable.from_metadata(str(path))
        for task in table.scan().plan_files():
            assert Path(task.file.file_path.removeprefix("file://")).exists(), (path, task.file.file_path)
    return len(found)


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_a_kill_in_any_phase_is_resumed_to_an_identical_target(
    source: str, reference: tuple[Path, dict[str, str]], phase: str
) -> None:
    (target, uninterrupted), meta = reference, source
    shutil.rmtree(target, ignore_errors=True)  # (the previous phase's resumed target)

    seen = _kill_in(phase, meta, target)

    final = target / "metadata" / Path(meta).name
    if phase != "rewrite metadata.json":
        assert not final.exists(), f"the run finished before the kill: {seen}"
        assert _readable_metadata(target) == 0
    else:
        _readable_metadata(target)

    migrate_table(meta, str(target), src_io=IO, dst_io=IO)
    assert _digests(target) == uninterrupted
    assert not list(target.rglob(".icelake-*"))
