"""How the engine runs a migration, as one frozen object: built once where a run starts (the
`icelake migrate path` command, a workflow step, the Glue job, a benchmark) and passed whole to
`migrate_table`, `run_migration` and `build_plan`, instead of a dozen knobs through every call."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from icelake.migrate.check.record import RecordBuilder
from icelake.migrate.copy.objects import CopySettings
from icelake.migrate.history import History
from icelake.migrate.plan.reads import FAST_READS, PlanReads
from icelake.migrate.plan.since import FULL, Since
from icelake.migrate.progress import NoProgress, ProgressSink


@dataclass(frozen=True)
class EngineSettings:
    workers: int = 16  # parallel file operations (threads) of this process
    # Worker processes for the CPU-bound phases (parsing manifests and metadata.json files, the
    # rewrites). None: a whole migration uses one per CPU, a plan alone (the Plan step, an
    # assessment) runs on threads only.
    processes: int | None = None
    # What the target keeps of older logged versions (icelake.migrate.history): live or all.
    history: History = "live"
    overwrite: bool = False  # replace target files that exist with different content
    dry_run: bool = False  # plan only; write nothing
    lock_target: bool = True  # hold the target location while writing (the workflow holds its ledger)
    copy: CopySettings = field(default_factory=CopySettings)
    progress: ProgressSink = field(default_factory=NoProgress)
    # How the plan reads manifests and learns what exists: the fast reads, or the tests' reference.
    reads: PlanReads = FAST_READS
    tally: bool = False  # count the table's files by kind (`FileTally`, what an assessment reports)
    # Where a sync may start (`plan.since`): a full plan unless told the last synced version.
    since: Since = FULL
    # Where the proof of each object written goes (the copy record, `check/record.py`), if kept.
    record: RecordBuilder | None = None

    def migration_processes(self) -> int:
        """Worker processes of a whole migration: every CPU unless told."""
        return self.processes if self.processes is not None else (os.cpu_count() or 1)

    def plan_processes(self) -> int:
        """Worker processes of a plan made alone: threads only unless told."""
        return self.processes if self.processes is not None else 1


# The defaults, one frozen instance: what a caller that says nothing gets (a function default).
DEFAULT_SETTINGS = EngineSettings()
