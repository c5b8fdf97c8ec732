"""A migration request and its work items: what a run is asked to move, where to, and how (the
request the CLI, CDK's configuration and the workflow's Inventory all read), and one table of it,
pinned, as the Map iterates over it. Below both the assessment and the workflow, which read
requests alike."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from icelake.aws.session import DEFAULT_SESSION_SECONDS, check_session_duration
from icelake.request.names import Naming, split_name, template_fields

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
