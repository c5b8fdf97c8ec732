"""Local Spark's Python daemon: a zip archive is read again only when it changed (Python 3.12's
lazy `zipimporter.invalidate_caches`), every local session's tasks run under it, and its workers
start with icelake's task modules imported."""

from __future__ import annotations

import os
import zipfile
import zipimport
from pathlib import Path

import pytest

from icelake.local.spark import daemon


def _zip(path: Path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in modules.items():
            archive.writestr(f"{name}.py", source)


def test_an_unchanged_archive_is_not_read_again_and_a_changed_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches", daemon.invalidate_if_changed)
    archive = tmp_path / "shipped.zip"
    _zip(archive, {"first": "X = 1\n"})
    importer = zipimport.zipimporter(str(archive))

    importer.invalidate_caches()  # the first call reads and stamps it
    read = importer._files  # type: ignore[attr-defined]  # the archive's directory as last read
    for _ in range(3):
        importer.invalidate_caches()
    assert importer._files is read  # type: ignore[attr-defined]  # not read again: unchanged

    _zip(archive, {"first": "X = 1\n", "second": "Y = 2\n"})  # rewritten in place (addPyFile)
    os.utime(archive, ns=(1, 1))  # another stamp even within the file system's time resolution
    importer.invalidate_caches()
    assert importer._files is not read  # type: ignore[attr-defined]
    assert importer.find_spec("second") is not None

    archive.unlink()  # gone: read again (and found empty), as Python's own does
    importer.invalidate_caches()
    assert importer.find_spec("first") is None


@pytest.mark.spark
def test_a_local_sessions_tasks_run_under_the_daemon_with_icelakes_task_modules_imported(
    spark: object,
) -> None:
    task_modules = daemon.TASK_MODULES

    def worker_state(_rows: object) -> list[tuple[str, bool]]:
        import sys
        import zipimport

        imported = all(name in sys.modules for name in task_modules)
        return [(zipimport.zipimporter.invalidate_caches.__name__, imported)]

    states = spark.sparkContext.parallelize(range(2), 2).mapPartitions(worker_state).collect()  # type: ignore[attr-defined]
    assert states == [("invalidate_if_changed", True)] * 2
