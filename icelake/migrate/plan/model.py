"""What a plan is: the table's files to copy and rewrite, what they reach and what they are
(`TablePlan`), decided by `build_plan` and carried out by the engine."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import (
    ManifestRef,
)
from icelake.migrate.avro.patch import PlannedManifest
from icelake.migrate.history import History
from icelake.migrate.models import Orphans
from icelake.migrate.plan.copies import Copies
from icelake.migrate.plan.since import SyncKind
from icelake.uris import PrefixMap


@dataclass(frozen=True)
class DeleteFileTask:
    source: str  # canonical
    target: str
    file_format: str


@dataclass(frozen=True)
class FileTally:
    """Every file the retained snapshots reference (what a migration carries over), by kind, with
    the bytes the source holds: what an assessment reports of a table."""

    data_files: int = 0
    data_bytes: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    deletion_vectors: int = 0  # Puffin files of deletion vectors (v3)
    delete_bytes: int = 0
    statistics_files: int = 0
    statistics_bytes: int = 0
    orc_delete_files: int = 0  # position deletes in ORC, which icelake cannot rewrite


@dataclass
class TablePlan:
    source_metadata: str
    target_metadata: str
    meta: mj.Metadata
    prefix_map: PrefixMap
    metadata_files: list[str]  # logged ones that exist, oldest first, then the current one
    manifest_lists: list[str]
    manifests: dict[str, ManifestRef]
    delete_files: list[DeleteFileTask]
    copies: Copies  # files missing at the target (or replaced with --overwrite)
    skipped_copies: int
    bytes_planned: int
    files_planned: int
    prefix_counts: Counter[str] = field(default_factory=Counter)
    # Data manifests as the plan read them: their rewrite splices paths where the plan found them.
    planned_manifests: dict[str, PlannedManifest] = field(default_factory=dict)
    history: History = "live"
    # Files only older logged versions reach, present at the source (history.py): copied under
    # `all`, reported either way.
    orphans: Orphans = field(default_factory=Orphans)
    # Manifests that carried lists name and the source no longer has (their lists keep the
    # recorded length: the target's version dangles where the source's does).
    absent_manifests: dict[str, int] = field(default_factory=dict)
    # What the table's files are, counted when the plan is asked to (`build_plan(tally=True)`).
    tally: FileTally | None = None
    # A full plan carries everything; an incremental one what the source committed since the last
    # sync (`plan.incremental`), and says why a full one ran instead.
    sync: SyncKind = "full"
    sync_reason: str = ""
    # Of an incremental plan: every logged version the target keeps (a full plan's are its
    # metadata files), and the manifests the target holds already -> their length there.
    kept_logs: frozenset[str] | None = None
    reused_lengths: dict[str, int] = field(default_factory=dict)

    def map_path(self, uri: str) -> str:
        return self.prefix_map.require(uri)

    def manifest_entries(self) -> int:
        """Entries of the manifests this plan read, what each pass over them decodes: its data
        manifests' as it walked them (a merged manifest repeats its files' entries), and at least
        one a live data file the tally counted (a plan without the walk's record), and each delete
        file once."""
        walked = sum(sum(m.spans.counts) for m in self.planned_manifests.values())
        tally = self.tally or FileTally()
        deletes = tally.position_delete_files + tally.equality_delete_files + tally.deletion_vectors
        return max(walked, tally.data_files) + deletes
