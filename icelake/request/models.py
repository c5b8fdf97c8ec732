"""A migration request and its work items: what a run is asked to move, where to, and how (the
request the CLI, CDK's configuration and the workflow's Inventory all read), and one table of it,
pinned, as the Map iterates over it. Below both the assessment and the workflow, which read
requests alike."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from icelake.aws.session import DEFAULT_SESSION_SECONDS, check_session_duration
from icelake.errors import IcelakeError
from icelake.request.consumers import ConsumersSpec
from icelake.request.fields import KMS_ARN, KMS_EXAMPLE, KMS_KEY, check_prefix, check_principal
from icelake.request.names import Naming, split_name, template_fields
from icelake.request.pricing import check_priced, check_prices_uri, price_region
from icelake.request.s3tables import S3TablesMaintenance, parse_table_bucket_arn, s3tables_problems
from icelake.request.schedule import interval_seconds
from icelake.throughput import ThroughputModel

_ACCOUNT = re.compile(r"^\d{12}$")
_ROLE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
# A source database or table name as a Glue catalog may hold it: 1-255 characters, no dot (the
# separator of 'database.table'), no space or control character at either end.
_SOURCE_NAME = re.compile(r"^[^\s.\x00-\x1f](?:[^.\x00-\x1f]{0,253}[^\s.\x00-\x1f])?$")


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
            raise ValueError(
                "role_arn must be an IAM role ARN such as "
                f"'arn:aws:iam::222222222222:role/icelake-target-write', got {v!r}"
            )
        return v

    @field_validator("external_id")
    @classmethod
    def _external_id(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[\w+=,.@:/-]{2,1224}$", v):
            raise ValueError(
                f"external_id must be 2-1224 letters, digits or +=,.@:/-_ (as STS takes it), such as "
                f"'icelake-migration', got {v!r}"
            )
        return v


class PrefixMapSpec(_Frozen):
    source: str
    target: str

    @field_validator("source", "target")
    @classmethod
    def _uri(cls, v: str, info: ValidationInfo) -> str:
        example = f"s3://{'source-lake/extra' if info.field_name == 'source' else 'target-lake/extra'}"
        field = f"prefix_maps {info.field_name}"
        scheme, sep, rest = v.partition("://")
        if not sep or scheme not in ("s3", "file") or (scheme == "s3" and not rest.split("/")[0]):
            raise ValueError(f"{field} {v!r} is not an s3://bucket/prefix URI, such as {example!r}")
        if scheme == "s3":
            bucket, _, key = rest.partition("/")
            if not _BUCKET.match(bucket):
                raise ValueError(f"{field} {v!r} names no S3 bucket: give one such as {example!r}")
            if key:
                check_prefix(key, field, example)
        return v


class NamesSpec(_Frozen):
    """Templates of the target names ({database} and {table} are the source table's)."""

    database: str = "{database}"
    table: str = "{table}"

    @field_validator("database")
    @classmethod
    def _database(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("names.database is empty: give a template such as '{database}_eu'")
        if "table" in template_fields(v):
            raise ValueError(
                f"names.database {v!r} uses {{table}}: a database's tables go to one target database "
                "(use target.renames to send a table elsewhere)"
            )
        return v

    @field_validator("table")
    @classmethod
    def _table(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("names.table is empty: give a template such as '{table}' or '{table}_v2'")
        template_fields(v)
        return v


def _each_name(v: dict[str, str], field: str, check: Callable[[str, str], object]) -> dict[str, str]:
    """A source -> target map whose keys and values `check` each (it raises, naming the one
    wrong: a key as "a <field> key", a value as "<field>[<its key>]")."""
    for source, target in v.items():
        check(source, f"a {field} key")
        check(target, f"{field}[{source!r}]")
    return v


class LakeFormationSpec(_Frozen):
    """What Register carries of the source table's Lake Formation access."""

    copy_permissions: bool = False  # the source's grants, to the principals principal_map names
    principal_map: dict[str, str] = Field(default_factory=dict)  # source principal ARN -> target's
    copy_tags: bool = False  # the LF-tags of the table and its columns (created in the target)

    @field_validator("principal_map")
    @classmethod
    def _principals(cls, v: dict[str, str]) -> dict[str, str]:
        return _each_name(v, "principal_map", check_principal)


class TargetSpec(SourceSpec):
    # glue: a Glue catalog over an S3 bucket (bucket, prefix); s3tables: a table bucket
    # (table_bucket_arn; its region is the target's), each table's storage chosen by the service
    kind: Literal["glue", "s3tables"] = "glue"
    table_bucket_arn: str | None = None
    bucket: str | None = Field(default=None, validate_default=True)  # required with kind glue
    prefix: str = ""
    kms_key_id: str | None = None
    database_prefix: str = ""  # shorthand for names.database = "<prefix>{database}"
    names: NamesSpec | None = None
    renames: dict[str, str] = Field(default_factory=dict)  # "db.table" -> "newdb.newtable": wins
    prefix_maps: list[PrefixMapSpec] = Field(default_factory=list)  # data outside table locations
    lake_formation_principals: list[str] = Field(default_factory=list)  # SELECT, DESCRIBE on each table
    lake_formation: LakeFormationSpec = Field(default_factory=LakeFormationSpec)

    @model_validator(mode="before")
    @classmethod
    def _region_of_table_bucket(cls, data: Any) -> Any:
        """With kind s3tables and no region, the target region is the table bucket's."""
        if isinstance(data, dict) and data.get("kind") == "s3tables" and data.get("region") is None:
            try:
                return {**data, "region": parse_table_bucket_arn(str(data.get("table_bucket_arn"))).region}
            except ValueError:
                return data  # refused by _s3tables, with the ARN named
        return data

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            if info.data.get("kind", "glue") == "glue":
                raise PydanticCustomError("missing", "Field required")
            return v
        if not _BUCKET.match(v):
            raise ValueError(f"bucket must be an S3 bucket name, got {v!r}")
        return v

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        return check_prefix(v, "prefix", "warehouse/sales")

    @field_validator("database_prefix")
    @classmethod
    def _database_prefix(cls, v: str) -> str:
        if not re.match(r"^[a-z0-9_-]{0,200}$", v):
            raise ValueError(
                f"database_prefix {v!r} must be lower-case letters, digits, _ or - (Glue keeps names in "
                "lower case), such as 'migrated_'"
            )
        return v

    @field_validator("lake_formation_principals")
    @classmethod
    def _readers(cls, v: list[str]) -> list[str]:
        for i, principal in enumerate(v):
            check_principal(principal, f"lake_formation_principals[{i}]")
        return v

    @field_validator("kms_key_id")
    @classmethod
    def _kms(cls, v: str | None) -> str | None:
        if v is not None and not (KMS_KEY.match(v) or KMS_ARN.match(v)):
            raise ValueError(
                f"kms_key_id {v!r} is not a KMS key ARN, alias ARN or key id: give one such as "
                f"{KMS_EXAMPLE!r}"
            )
        return v

    @model_validator(mode="after")
    def _kms_in_region(self) -> TargetSpec:
        arn = KMS_ARN.match(self.kms_key_id or "")
        if arn and self.region and arn.group(1) != self.region:
            raise ValueError(
                f"kms_key_id {self.kms_key_id!r} is a key of {arn.group(1)}, and the target is in "
                f"{self.region}: S3 encrypts with a key of the bucket's region; give one such as "
                f"{KMS_EXAMPLE.replace('eu-west-1', self.region)!r}"
            )
        return self

    @field_validator("renames")
    @classmethod
    def _renames(cls, v: dict[str, str]) -> dict[str, str]:
        return _each_name(v, "renames", split_name)

    @model_validator(mode="after")
    def _s3tables(self) -> TargetSpec:
        problems = s3tables_problems(self)  # icelake/request/s3tables.py
        if problems:
            raise ValueError("; ".join(problems))
        return self

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
            self.bucket or "",
            self.prefix,
            tuple((m.source, m.target) for m in self.prefix_maps),
            self.table_bucket_arn if self.kind == "s3tables" else None,
        )


class Selection(_Frozen):
    databases: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=lambda: ["*"])  # fnmatch on table names
    tables: list[str] = Field(default_factory=list)  # "database.table"

    @model_validator(mode="after")
    def _something(self) -> Selection:
        if not self.databases and not self.tables:
            raise ValueError("selection needs 'databases' or 'tables', such as {\"databases\": [\"sales\"]}")
        for d in self.databases:
            if not _SOURCE_NAME.match(d):
                raise ValueError(f"databases entries are database names such as 'sales', got {d!r}")
        for t in self.tables:
            if t.count(".") != 1 or not all(_SOURCE_NAME.match(p) for p in t.split(".")):
                raise ValueError(f"tables entries are 'database.table' such as 'sales.orders', got {t!r}")
        for p in self.patterns:
            if not p.strip():
                raise ValueError("patterns entries are table name patterns such as '*' or 'orders_*', got ''")
        twice = sorted(t for t, n in Counter(self.tables).items() if n > 1)
        if twice:
            raise ValueError(f"tables lists {twice[0]} more than once: list each table once")
        return self


class Options(_Frozen):
    """README's "Options" table is generated from these fields and their comments (tools/options_table.py)."""

    # Tables migrated (or assessed) at once: the Distributed Map's MaxConcurrency. Tables that go to
    # the Glue job also wait for its MaxConcurrentRuns (the deployment's map_concurrency).
    concurrency: int = Field(default=4, ge=1, le=1000)
    # metadata | sample | rows: what Validate checks (migrate/check/validate.py; docs/migration.md)
    validation: Literal["metadata", "sample", "rows"] = "metadata"
    # live | all: what the target keeps of the older logged metadata versions
    # (icelake/migrate/history.py; README "History")
    history: Literal["live", "all"] = "live"
    # Plan every table with the deployed roles and report, writing nothing: each ends dry_run.
    dry_run: bool = False
    # A table copies in the Glue job when it has more to copy than either threshold, else in a Lambda
    # (15-minute limit). See benchmarks/WORKFLOW_RESULTS.md for the measurement behind the defaults.
    glue_threshold_bytes: int = Field(default=100 * 1024**3, ge=0)
    # The file-count threshold of the same choice (see glue_threshold_bytes).
    glue_threshold_files: int = Field(default=20_000, ge=0)
    # modes verify and repair: a table with more data and delete files than this has its files checked
    # in the Glue job; None: as the estimate says (a Lambda check past 60 % of its timeout goes to Glue;
    # icelake/assess/estimate/verify_estimate.py).
    verify_glue_threshold_files: int | None = Field(default=None, ge=0)
    # modes verify and repair: the S3 URI of the manifest.json of an S3 Inventory report of the target
    # bucket (CSV or Parquet, with Size and ETag): it answers for the copies in place of listing the
    # table location; files written since the report are HEADed, damage since it is not seen
    # (icelake/migrate/check/inventory_report.py says what it costs and how fresh it is).
    inventory_report: str | None = Field(default=None, pattern=r"^s3://[^/]+/.+manifest\.json$")
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
    # mode "assess": how often the syncs run until cutover (a schedule expression, as the deployment's
    # sync_schedule: "rate(1 hour)", "cron(0 2 * * ? *)"); the assessment prices the sync window and
    # the cutover's freeze from it (icelake/assess/estimate/sync_window.py). None: rate(1 day), the default.
    sync_interval: str | None = None
    # modes incremental and cutover: "incremental" plans only what the source committed since the
    # target's last validated sync (the ledger's), when the target and the source's history allow
    # it, else the whole table (the outcome says which and why); "full" always plans the whole table.
    sync: Literal["incremental", "full"] = "incremental"
    # "new": an incremental sync validates the new snapshots and proves the older ones untouched;
    # "all": every snapshot, as a full sync does.
    validation_scope: Literal["new", "all"] = "new"
    # The throughput model of the estimates (mode assess, and the Plan step's choice of engine):
    # the parameters measured in one's own accounts (docs/assessment.md); None: the defaults.
    throughput: ThroughputModel | None = None
    # mode "assess": the S3 URI of a price table in the shipped format (icelake/assess/estimate/
    # price_tables/us-east-1.json) for the target's region, read with the workflow's role (put it in
    # the artifacts bucket); None: the shipped table, which a region without one cannot use.
    prices: str | None = None
    # target.kind "s3tables": the maintenance cutover sets on each table (compaction, snapshot
    # management), off while icelake syncs it; None: compaction on, snapshots kept as the source's
    # retention properties say (icelake/request/s3tables.py).
    s3tables_maintenance: S3TablesMaintenance | None = None

    @field_validator("prices")
    @classmethod
    def _prices(cls, v: str | None) -> str | None:
        return check_prices_uri(v)

    @field_validator("session_duration_seconds")
    @classmethod
    def _duration(cls, v: int) -> int:
        return check_session_duration(v)

    @field_validator("sync_interval")
    @classmethod
    def _interval(cls, v: str | None) -> str | None:
        if v is not None:
            interval_seconds(v)  # refused here, naming what is wrong, not when the assessment runs
        return v

    @model_serializer(mode="wrap")
    def _unset_thresholds_stay_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # The request travels as JSON from step to step: a Glue threshold it did not set is left out,
        # so Plan can still tell the default from a threshold set to win over the estimate.
        data: dict[str, Any] = handler(self)
        for name in ("glue_threshold_files", "glue_threshold_bytes"):
            if name not in self.model_fields_set:
                data.pop(name, None)
        return data


class MigrationRequest(_Frozen):
    run_id: str
    source: SourceSpec
    target: TargetSpec
    selection: Selection
    # cutover: a last incremental sync, a proof that the source did not move during it, and the
    # target promoted to the table's home (docs/runbook.md "Cutover").
    # assess: Inventory, an Assess step per table, then Report writes runs/<run_id>/assessment.json
    # and assessment.html (icelake/assess); no target is touched.
    # verify: each migrated or promoted target checked again, nothing written to any table
    # (icelake/migrate/check/verify.py; docs/runbook.md "Day 2").
    # carry_over: a promoted table's stranded appends carried onto its target
    # (icelake/workflow/steps/carrying.py; docs/runbook.md "Cutover").
    # repair: verify at the request's tier, then write each damaged or missing file again from the
    # source where it still holds what was copied (icelake/migrate/check/repair.py; "Day 2").
    mode: Literal["full", "incremental", "cutover", "assess", "verify", "carry_over", "repair"] = "full"
    options: Options = Field(default_factory=Options)
    # What an assessment looks for besides the tables: the consumers that read them (rewire.json).
    consumers: ConsumersSpec = Field(default_factory=ConsumersSpec)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9_.:-]{1,80}$", v):
            raise ValueError(f"run_id must be 1-80 letters, digits or _.:-, got {v!r}")
        return v

    @property
    def price_region(self) -> str:
        return price_region(self.target.region)  # icelake/request/pricing.py

    @model_validator(mode="after")
    def _priced(self) -> MigrationRequest:
        check_priced(self.mode, self.price_region, self.options.prices, self.target.kind)
        return self

    @model_validator(mode="after")
    def _not_onto_itself(self) -> MigrationRequest:
        """A target table that is its source table (one Glue catalog: same account and region,
        same database and name) is refused by name: its copy would overwrite what it reads."""
        if (self.source.account_id, self.source.region) != (self.target.account_id, self.target.region):
            return self
        if self.target.kind == "s3tables":
            return self  # a table bucket is no Glue catalog: no target is a source table
        naming = self.target.naming
        itself = [f"{s}" for s, t in naming.renames.items() if s == t]
        for ident in self.selection.tables:
            database, table = ident.split(".")
            if ident not in naming.renames and _unchanged(naming, database, table):
                itself.append(ident)
        for database in self.selection.databases:
            if naming.table_template == "{table}" and naming.target_db_of(database) == database:
                itself.append(f"{database}.<each table>")
        if itself:
            raise ValueError(
                f"target {itself[0]} is the source table itself: set target.names, target.renames or "
                "another account"
            )
        return self


def _unchanged(naming: Naming, database: str, table: str) -> bool:
    try:
        return naming.target_of(database, table).name == f"{database}.{table}"
    except IcelakeError:
        return False  # a name Glue refuses: the Inventory says so


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
    # Set by Plan: the source metadata.json the target was last synced to, when a sync starts there
    # (icelake.migrate.plan.since), else why the whole table is planned. Copy and the Glue job
    # plan from the same version.
    sync_from: str | None = None
    sync_full_reason: str = ""

    @property
    def name(self) -> str:
        return f"{self.source_database}.{self.source_table}"

    @property
    def target_name(self) -> str:
        return f"{self.target_database}.{self.target_table}"
