"""A table of many manifests is planned with its manifests parsed in worker processes: the plan is
the one the reference path (fastavro decoding, one HEAD per file, all in this process) makes."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from benchmarks.synthetic_table import build_synthetic_table
from icelake.aws.fileio import LocalFileIO, ObjectInfo
from icelake.migrate import inventory
from icelake.migrate.copy.cpu_pool import MIN_MANIFESTS_FOR_PROCESSES
from icelake.migrate.copy.engine import migrate_table
from icelake.migrate.plan import source as plan_source
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.progress import NoProgress
from icelake.migrate.settings import EngineSettings
from icelake.uris import local_path
from tests.pool_starts import count_pool_starts
from tests.reference_plan import REFERENCE_READS

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _summary(plan: TablePlan) -> dict[str, Any]:
    return {
        "copies": sorted((c.source, c.target, c.info.size) for c in plan.copies),
        "manifests": list(plan.manifests.values()),  # in the order the lists first name them
        "manifest_lists": plan.manifest_lists,
        "metadata_files": plan.metadata_files,
        "files_planned": plan.files_planned,
        "bytes_planned": plan.bytes_planned,
        "prefix_counts": dict(plan.prefix_counts),
    }


class RangesWalked(LocalFileIO):
    """Counts the source ranges walked in worker processes (`list_range` given `cpu`)."""

    def __init__(self) -> None:
        self.in_processes = 0

    def list_range(
        self, prefix: str, start_after: str | None, until: str, cpu: Executor | None = None
    ) -> Iterable[tuple[str, ObjectInfo]]:
        self.in_processes += cpu is not None
        return super().list_range(prefix, start_after, until, cpu)


def test_manifests_parsed_in_processes_make_the_reference_plan(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hadoop_catalog: Callable[[str], str]
) -> None:
    snapshots = MIN_MANIFESTS_FOR_PROCESSES + 4
    built = build_synthetic_table(
        spark,
        hadoop_catalog("plan_processes"),
        snapshots=snapshots,
        files_per_snapshot=40,
        partitions_per_snapshot=4,
        touch=True,
    )
    # The source check's walk in ranges of 100 files, in the worker processes (as a million files
    # are; pages of 10 keys: the table's root does not end within its first page)
    monkeypatch.setattr(inventory, "KEYS_PER_PAGE", 10)
    monkeypatch.setattr(inventory, "RANGE_KEYS", 100)
    monkeypatch.setattr(plan_source, "LOCAL_FILES_PER_JOB", 1)
    io = RangesWalked()

    def plan(processes: int, reads: Any = None) -> TablePlan:
        settings = EngineSettings(overwrite=False, workers=4, progress=NoProgress(), processes=processes)
        if reads:
            settings = replace(settings, reads=reads)
        return build_plan(
            built.current_metadata, str(tmp_path / "target" / "t"), [], io, io, settings=settings
        )

    in_processes = plan(processes=2)
    assert len(in_processes.manifests) >= MIN_MANIFESTS_FOR_PROCESSES  # so the processes ran
    assert io.in_processes >= len(in_processes.copies) // 100
    assert len(in_processes.copies) == snapshots * 40
    assert _summary(in_processes) == _summary(plan(processes=1)) == _summary(plan(1, REFERENCE_READS))

    # A damaged manifest list is refused in processes as in this one, with the same explanation
    # (the worker's error does not cross back: the list is read again here, which raises it)
    damaged = Path(local_path(in_processes.manifest_lists[len(in_processes.manifest_lists) // 2]))
    damaged.write_bytes(damaged.read_bytes()[:-40])
    errors = []
    for processes in (2, 1):
        with pytest.raises(Exception) as raised:
            plan(processes=processes)
        errors.append((type(raised.value), str(raised.value)))
    assert errors[0] == errors[1]
    assert str(damaged.name) in errors[0][1]


def test_a_migration_starts_its_worker_processes_once_for_the_plan_and_every_rewrite(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hadoop_catalog: Callable[[str], str]
) -> None:
    # Given a table of more manifests, lists and metadata files than are worth worker processes
    built = build_synthetic_table(
        spark,
        hadoop_catalog("shared_pool"),
        snapshots=MIN_MANIFESTS_FOR_PROCESSES + 2,
        files_per_snapshot=3,
        partitions_per_snapshot=1,
        file_size=64,
        touch=True,
    )
    started = count_pool_starts(monkeypatch)
    target = tmp_path / "target" / "t"

    def migrate(processes: int) -> dict[str, bytes]:
        io = LocalFileIO()
        result = migrate_table(
            built.current_metadata,
            str(target),
            src_io=io,
            dst_io=io,
            settings=EngineSettings(processes=processes),
        )
        assert result.files_copied == (MIN_MANIFESTS_FOR_PROCESSES + 2) * 3
        return {str(p.relative_to(target)): p.read_bytes() for p in sorted(target.rglob("*")) if p.is_file()}

    # When it is migrated on threads alone, and again (to the same place) with two worker processes
    alone = migrate(processes=1)
    assert started == []
    shutil.rmtree(target)
    shared = migrate(processes=2)
    # Then one pool of two processes served the plan and the rewrites (each used to start its own:
    # a spawn, the imports and the patterns compiled again, about half a second each time), and
    # the target holds the same files, byte for byte, as the migration without processes made
    assert started == [2]
    assert shared == alone
    assert any(name.endswith(".avro") for name in shared)
