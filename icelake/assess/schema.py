"""assessment.json's schema (docs/assessment.md describes every field): each table's assessment,
its findings (blockers and warnings), the run's totals and its layout on the Map's lanes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from icelake.assess.estimate.model import Lane, TableEstimate
from icelake.assess.estimate.sync_window import CutoverFreeze, SyncWindow
from icelake.assess.pages.kinds import KindSummary
from icelake.objects.model import CatalogObject

SCHEMA_VERSION = 1


class Finding(BaseModel):
    """A blocker (what would fail) or a warning (what would work worse than expected)."""

    model_config = ConfigDict(frozen=True)
    kind: str
    message: str
    objects: list[str] = []  # the first SHOWN objects it is about (findings.SHOWN)
    count: int = 0  # how many objects in all


class PrefixUse(BaseModel):
    model_config = ConfigDict(frozen=True)
    prefix: str
    files: int
    mapped: bool
    target: str | None = None


class DeleteFiles(BaseModel):
    model_config = ConfigDict(frozen=True)
    position: int = 0
    equality: int = 0
    deletion_vectors: int = 0


class VerifyEstimate(BaseModel):
    """A verify (or repair) run of the migrated target (icelake/assess/estimate/verify_estimate.py):
    its files check's requests, its seconds in each engine, and the engine the Verify step gives it."""

    model_config = ConfigDict(frozen=True)
    files: int  # data and delete files checked
    requests: dict[str, int]  # head, list, get
    duration_s: dict[str, float]  # "lambda", "glue": the check's seconds in each engine, its start included
    engine: Literal["lambda", "glue"]
    engine_rule: str


class TableBucket(BaseModel):
    """A table bucket's unreferenced-file removal, which takes the files a table no longer
    references (a rolled back run's, a sync's pruned ones: a table bucket takes no DeleteObject)."""

    model_config = ConfigDict(frozen=True)
    arn: str
    region: str
    removal_enabled: bool | None = None  # None: not read
    unreferenced_days: int | None = None
    noncurrent_days: int | None = None
    said: str  # in a line


class S3TablesTable(BaseModel):
    """A table of a table bucket (target.kind s3tables): its name in Athena, whether it exists, and
    what it keeps after cutover (icelake/assess/gather/table_bucket.py)."""

    model_config = ConfigDict(frozen=True)
    athena_name: str  # s3tablescatalog/<bucket>.<namespace>.<table>
    exists: bool  # made by an earlier run (else Plan creates it)
    # PutTableMaintenanceConfiguration's value of each type cutover sets ({} when refused)
    maintenance_at_cutover: dict[str, Any] = {}
    keeps: str  # the snapshots it keeps after cutover, and where that comes from
    compaction: str
    first_compaction_usd: float | None = None  # compacting its current data files once (at most)
    first_compaction: str = ""  # how that was reckoned, or why there is none
    table_bucket: TableBucket | None = None  # its bucket's unreferenced-file removal


class TableAssessment(BaseModel):
    """One table: counts over every retained snapshot (what a migration copies)."""

    model_config = ConfigDict(frozen=True)
    table: str
    source_metadata_location: str
    target_location: str
    planned: bool  # False: the planner refused the table (see blockers); sizes from its summaries
    format_version: int | None = None
    snapshots: int = 0
    refs: int = 0
    data_files: int = 0
    data_bytes: int = 0
    delete_files: DeleteFiles = DeleteFiles()
    delete_bytes: int = 0
    metadata_files: int = 0  # metadata.json files, manifest lists and manifests
    metadata_bytes: int = 0
    statistics_files: int = 0
    files_to_copy: int = 0  # not yet at the target
    bytes_to_copy: int = 0
    prefixes: list[PrefixUse] = []
    commits_per_day: dict[str, float] = {}  # "7d", "30d"
    bytes_added_per_day: dict[str, float] = {}
    files_added_per_day: dict[str, float] = {}  # data and delete files
    daily_commits: list[int] = []  # the last 30 days, oldest first
    engine: Literal["lambda", "glue"] = "lambda"
    engine_rule: str | None = None  # which rule chose it (icelake/assess/estimate/engine_choice.py)
    blockers: list[Finding] = []
    warnings: list[Finding] = []
    estimate: TableEstimate | None = None
    # The syncs until cutover priced (sync_window.py), and the cutover's write freeze.
    sync_window: SyncWindow | None = None
    cutover: CutoverFreeze | None = None
    s3tables: S3TablesTable | None = None  # target.kind s3tables
    verify: VerifyEstimate | None = None  # a verify run of the migrated target (day 2)


class RunEstimate(BaseModel):
    """The tables laid out on the Map's lanes."""

    model_config = ConfigDict(frozen=True)
    concurrency: int
    duration_s: float
    duration_range_s: tuple[float, float] | None = None  # (low, high): the tables' ranges on the lanes
    lanes: list[Lane]


class Totals(BaseModel):
    model_config = ConfigDict(frozen=True)
    tables: int = 0
    blocked_tables: int = 0
    data_files: int = 0
    data_bytes: int = 0
    delete_files: int = 0
    delete_bytes: int = 0
    metadata_files: int = 0
    metadata_bytes: int = 0
    statistics_files: int = 0
    files_to_copy: int = 0
    bytes_to_copy: int = 0
    blockers: int = 0
    warnings: int = 0
    requests: dict[str, int] = {}
    cost_usd: dict[str, float] = {}
    sync_window_requests: dict[str, int] = {}  # the tables' sync windows, added up
    sync_window_cost_usd: dict[str, float] = {}


class Assessment(BaseModel):
    """assessment.json (docs/assessment.md describes every field)."""

    model_config = ConfigDict(frozen=True)
    schema_version: int = SCHEMA_VERSION
    generated_at: str
    scope: dict[str, Any]  # what was assessed: the request's selection, or the one table
    tables: list[TableAssessment]
    totals: Totals
    run: RunEstimate
    model: dict[str, Any]  # the throughput model and the price table used
    # The findings grouped by kind across the tables: {kind: {count, tables, message, hint}}.
    warnings_by_kind: dict[str, KindSummary] = {}
    blockers_by_kind: dict[str, KindSummary] = {}
    # Every catalog entry of the selection with its kind and what icelake does with it (views and
    # resource links carried, tables of other formats not moved: icelake/objects/), and their count
    # by kind.
    objects: list[CatalogObject] = []
    objects_by_kind: dict[str, int] = {}
