"""Everything that crosses a Step Functions boundary: the request, the work items, step results."""

from __future__ import annotations

import re
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from icelake.assess.estimate import TableEstimate
from icelake.aws.session import DEFAULT_SESSION_SECONDS, check_session_duration
from icelake.migrate.models import Orphans
from icelake.workflow.names import Naming, split_name, template_fields

_ACCOUNT = re.compile(r"^\d{12}$")
_ROLE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourceSpec(_Frozen):
    account_id: str
    role_arn: str | None = None  # None: the orchestrator's own credentials (same account)
    external_id: str | None = None  # when the role's trust policy requires sts:ExternalId
    # The region of this side's Glue catalog, Lake Formation and KMS key (None: the workflow's own).
    # S3 requests go to each bucket's own region, which icelake asks once per bucket.
    region: str | None = None

    @field_validator("region")
    @classmethod
    def _region(cls, v: str | None) -> str | None:
        if v is not None and not _REGION.match(v):
            raise ValueError(f"region must be an AWS region name such as eu-west-1, got {v!r}")
        return v

    @field_validator("account_id")
    @classmethod
    def _account(cls, v: str) -> str:
        if not _ACCOUNT.match(v):
            raise ValueError(f"account_id must be 12 digits, got {v!r}")
        return v

    @field_validator("role_arn")
    @classmethod
    def _role(cls, v: str | None) -> str | None:
        if v is not None and not _ROLE.match(v):
            raise ValueError(f"role_arn must be an IAM role ARN, got {v!r}")
        return v


class PrefixMapSpec(_Frozen):
    source: str
    target: str


class NamesSpec(_Frozen):
    """Templates of the target names ({database} and {table} are the source table's)."""

    database: str = "{database}"
    table: str = "{table}"

    @field_validator("database")
    @classmethod
    def _database(cls, v: str) -> str:
        if "table" in template_fields(v):
            raise ValueError(
                f"names.database {v!r} uses {{table}}: a database's tables go to one target database "
                "(use target.renames to send a table elsewhere)"
            )
        return v

    @field_validator("table")
    @classmethod
    def _table(cls, v: str) -> str:
        template_fields(v)
        return v


class LakeFormationSpec(_Frozen):
    """What Register carries of the source table's Lake Formation access."""

    copy_permissions: bool = False  # the source's grants, to the principals principal_map names
    principal_map: dict[str, str] = Field(default_factory=dict)  # source principal ARN -> target's
    copy_tags: bool = False  # the LF-tags of the table and its columns (created in the target)


class TargetSpec(SourceSpec):
    bucket: str
    prefix: str = ""
    kms_key_id: str | None = None
    database_prefix: str = ""  # shorthand for names.database = "<prefix>{database}"
    names: NamesSpec | None = None
    renames: dict[str, str] = Field(default_factory=dict)  # "db.table" -> "newdb.newtable": wins
    prefix_maps: list[PrefixMapSpec] = Field(default_factory=list)  # data outside table locations
    lake_formation_principals: list[str] = Field(default_factory=list)  # SELECT, DESCRIBE on each table
    lake_formation: LakeFormationSpec = Field(default_factory=LakeFormationSpec)

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str) -> str:
        if not _BUCKET.match(v):
            raise ValueError(f"bucket must be an S3 bucket name, got {v!r}")
        return v

    @field_validator("renames")
    @classmethod
    def _renames(cls, v: dict[str, str]) -> dict[str, str]:
        for source, target in v.items():
            split_name(source, "a renames key")
            split_name(target, f"renames[{source!r}]")
        return v

    @model_validator(mode="after")
    def _one_database_rule(self) -> TargetSpec:
        if self.database_prefix and self.names is not None:
            raise ValueError(
                "give database_prefix or names, not both: database_prefix 'p_' is names.database "
                "'p_{database}'"
            )
        return self

    @property
    def naming(self) -> Naming:
        names = self.names or NamesSpec(database=self.database_prefix + "{database}")
        return Naming(
            names.database,
            names.table,
            dict(self.renames),
            self.bucket,
            self.prefix,
            tuple((m.source, m.target) for m in self.prefix_maps),
        )


class Selection(_Frozen):
    databases: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=lambda: ["*"])  # fnmatch on table names
    tables: list[str] = Field(default_factory=list)  # "database.table"

    @model_validator(mode="after")
    def _something(self) -> Selection:
        if not self.databases and not self.tables:
            raise ValueError("selection needs 'databases' or 'tables'")
        for t in self.tables:
            if t.count(".") != 1:
                raise ValueError(f"tables entries are 'database.table', got {t!r}")
        return self


class Options(_Frozen):
    concurrency: int = Field(default=4, ge=1, le=1000)
    # metadata | sample | rows: what Validate checks (migrate/validate.py; docs/migration.md)
    validation: Literal["metadata", "sample", "rows"] = "metadata"
    # live | all: what the target keeps of the older logged metadata versions
    # (icelake/migrate/history.py; README "History")
    history: Literal["live", "all"] = "live"
    dry_run: bool = False
    # A table copies in the Glue job when it has more to copy than either threshold, else in a Lambda
    # (15-minute limit). See benchmarks/WORKFLOW_RESULTS.md for the measurement behind the defaults.
    glue_threshold_bytes: int = Field(default=100 * 1024**3, ge=0)
    glue_threshold_files: int = Field(default=20_000, ge=0)
    # DurationSeconds of each assumed-role session (900..3600: role chaining). Sessions refresh before
    # they expire either way, so long Glue copies never run out of credentials.
    session_duration_seconds: int = DEFAULT_SESSION_SECONDS
    # After a validated sync, delete target objects that icelake wrote for the table in any run and
    # that the table's current metadata no longer reaches (the source expired their snapshots).
    prune: bool = True
    # mode "cutover": sync, then check the source did not move; sync again at most this many times.
    cutover_attempts: int = Field(default=3, ge=1, le=10)
    # mode "cutover": also set the source Glue table parameter icelake.promoted_to (the source stack
    # must grant it: source_allow_mark). Off by default: the source is never written.
    mark_source: bool = False
    # mode "assess": days both copies are kept while syncing (the estimate's storage_month).
    sync_days: float = Field(default=30, ge=0, le=3650)

    @field_validator("session_duration_seconds")
    @classmethod
    def _duration(cls, v: int) -> int:
        return check_session_duration(v)


class MigrationRequest(_Frozen):
    run_id: str
    source: SourceSpec
    target: TargetSpec
    selection: Selection
    # cutover: a last incremental sync, a proof that the source did not move during it, and the
    # target promoted to the table's home (docs/runbook.md "Cutover").
    # assess: Inventory, an Assess step per table, then Report writes runs/<run_id>/assessment.json
    # and assessment.html (icelake/assess); no target is touched.
    mode: Literal["full", "incremental", "cutover", "assess"] = "full"
    options: Options = Field(default_factory=Options)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9_.:-]{1,80}$", v):
            raise ValueError(f"run_id must be 1-80 letters, digits or _.:-, got {v!r}")
        return v


class WorkItem(_Frozen):
    """One table to migrate: what the Map iterates over."""

    run_id: str
    source_database: str
    source_table: str
    source_metadata_location: str  # pinned at inventory time
    target_database: str
    target_table: str
    target_location: str
    request: MigrationRequest
    # The source table is gone, but icelake migrated it before: its target is reported, not touched.
    source_dropped: bool = False
    execution_arn: str | None = None  # the run's execution: lets a later run see this run ended
    # Target tables icelake registered for this source table under names the request no longer
    # gives it (a rename added or changed): left as they are, and reported in the outcome.
    earlier_targets: list[str] = Field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.source_database}.{self.source_table}"

    @property
    def target_name(self) -> str:
        return f"{self.target_database}.{self.target_table}"


class InventoryResult(_Frozen):
    run_id: str
    tables: int
    worklist_bucket: str
    worklist_key: str
    concurrency: int
    mode: str = "full"  # the request's: "assess" takes the state machine's assessment branch


class AssessResult(_Frozen):
    """What the Assess step returns for a table (its assessment is kept in the artifacts bucket)."""

    table: str
    blockers: int
    warnings: int
    assessment_key: str


class PlanResult(_Frozen):
    item: WorkItem
    engine: Literal["lambda", "glue", "none"]  # none: already in sync (incremental) or dry run
    files_planned: int
    bytes_planned: int
    files_to_copy: int
    bytes_to_copy: int
    previous_target_metadata: str | None  # Glue table's metadata_location before this run
    target_table_existed: bool
    target_metadata_location: str  # where the copy step will put the current metadata
    journal_key: str  # artifacts key: the target keys this run creates (all rollback may delete)
    journal_uri: str = ""  # the same journal as a URI (the Glue job adds what its own plan creates)
    # Where the table was planned: a table whose snapshot summaries put it over the Glue thresholds
    # is planned by the Glue job (files_* and bytes_* are then the summaries' upper bounds).
    planned_in: Literal["lambda", "glue"] = "lambda"
    copy_result_uri: str  # where the copy step (Lambda or Glue) writes its MigrationResult
    # The Plan step's own account: the S3 requests its clients sent, by kind, and its seconds.
    requests: dict[str, int] = {}
    seconds: float = 0.0
    # What the plan predicts the copy and Validate will send ("copy", "validate" -> requests by
    # kind): with `requests`, the table's estimate in its outcome (empty when the Glue job plans).
    expected_requests: dict[str, dict[str, int]] = {}
    # Set when the table is left alone (engine "none"): its outcome and why.
    stopped: Literal["diverged", "source_dropped", "busy", "promoted"] | None = None
    stop_reason: str | None = None
    orphans: Orphans = Orphans()  # what only older logged versions reach (a table planned here)


OutcomeStatus = Literal[
    "migrated",
    "in_sync",
    "dry_run",
    "promoted",
    "diverged",
    "source_dropped",
    "busy",
    "failed",
    "rolled_back",
]
# The CloudWatch metric (namespace icelake) that counts each outcome: the Report Lambda publishes
# them and the dashboard graphs them, from this one table.
OUTCOME_METRICS: dict[str, str] = {
    status: "Tables" + "".join(part.title() for part in status.split("_"))
    for status in get_args(OutcomeStatus)
}
FILES_PRUNED_METRIC = "FilesPruned"


class TableOutcome(_Frozen):
    run_id: str
    table: str
    # diverged: someone else committed to the target table since icelake last registered it;
    # nothing was written and nothing rolled back (see README "Outcome states").
    # source_dropped: the source table no longer exists; its target was left as it is.
    # busy: another run that is still going holds the table; this run left it alone.
    # promoted: a cutover ended with the target as the table's home; every later run reports it
    # and writes nothing.
    status: OutcomeStatus
    target_metadata_location: str | None = None
    files_copied: int = 0
    files_verified: int = 0  # of the copies: checksum equal to the source's (end to end)
    bytes_copied: int = 0
    files_rewritten: int = 0
    files_skipped: int = 0
    snapshots_validated: int = 0
    validation: str | None = None  # the tier Validate completed, and why it is less than asked
    # Where each phase ran: plan, copy ("lambda" or "glue") and validate ("glue" when the Glue job
    # compared the rows, else "lambda").
    engines: dict[str, str] = {}
    files_pruned: int = 0  # objects of snapshots the source expired, deleted from the target
    # Files only older logged metadata versions reach, present at the source: copied under
    # options.history "all", else not; `history_note` says which and what to do about them.
    orphans: Orphans = Orphans()
    history_note: str | None = None
    # cutover: the source's last snapshot and the target's current one (equal when promoted)
    source_snapshot_id: int | None = None
    target_snapshot_id: int | None = None
    sync_again: bool = False  # cutover: the source moved during the sync; the state machine loops
    target: str | None = None  # the target table's "database.table"
    # What the run did not do for this table that someone should know of (an earlier target left
    # in place, a source grant whose principal has no mapping, ...).
    warnings: list[str] = []
    error: str | None = None
    seconds: float = 0.0
    # The table's own account: S3 requests by kind (copy, list, head, get, put, delete) that the
    # steps' clients sent, each phase's seconds (plan, copy, validate, rollback), and what those
    # cost by the target region's price table (icelake/assess/cost.py; empty where none ships).
    requests: dict[str, int] = {}
    duration_s: dict[str, float] = {}
    cost_usd: dict[str, float] = {}
    # The estimate model applied to this run's own plan (icelake/assess/estimate.py): what
    # report.html sets beside the account above. None when the Glue job planned the table.
    estimate: TableEstimate | None = None


RunState = Literal["succeeded", "partial", "failed"]


class RunReport(_Frozen):
    """What the Report step writes to runs/<run_id>/report.json: every table's outcome."""

    run_id: str
    status: RunState
    tables: list[TableOutcome]
    report_uri: str
    report_html_uri: str = ""  # report.html beside it: the same run for people to read


class RunSummary(_Frozen):
    """What the Report step returns (the execution's output): small whatever the number of tables."""

    run_id: str
    status: RunState
    tables: int
    counts: dict[str, int]  # TableOutcome.status -> number of tables
    files_pruned: int = 0
    report_uri: str  # the RunReport with every table
    report_html_uri: str = ""

    def metrics(self) -> dict[str, int]:
        """CloudWatch metric -> value for this run: every outcome (zeros too, so graphs show them)."""
        values = {metric: self.counts.get(status, 0) for status, metric in OUTCOME_METRICS.items()}
        return values | {FILES_PRUNED_METRIC: self.files_pruned}
