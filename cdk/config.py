"""Deployment settings read from the CDK context (cdk.json, or `-c key=value`), with local defaults
so that `python app.py` synthesizes on a laptop with no AWS credentials."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Annotated, Any, TypeVar

from constructs import Node
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from icelake.constants import ORCHESTRATOR_ACCOUNT_LOCAL, REGION_LOCAL
from icelake.ingest.models import FetchConfig, MaintenanceConfig, Scd2Spec

SOURCE_ROLE_NAME = "icelake-source-read"
TARGET_ROLE_NAME = "icelake-target-write"
STEPS_ROLE_NAME = "icelake-migrate-steps"
GLUE_ROLE_NAME = "icelake-migrate-glue"
INGEST_FETCH_ROLE_NAME = "icelake-ingest-fetch"
INGEST_COMPLETE_ROLE_NAME = "icelake-ingest-complete"
INGEST_GLUE_ROLE_NAME = "icelake-ingest-glue"

_SOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")  # rule name icelake-ingest-<name>, <= 64
_SCHEDULE = re.compile(r"^(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(\S+( \S+){5}\))$")
_SPARK_CATALOG = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$")
_SOURCE_KEYS = {"name", "schedule", "fetch", "table", "enabled"}


class ContextError(ValueError):
    """A context key the deployment cannot do without, or cannot use (one line, from `app.py`)."""


# Where a deployment reads and writes, and which accounts: never defaulted, because a default would
# be someone else's (bucket names are global) or another account's.
REQUIRED_CONTEXT = (
    "orchestrator_account",
    "source_account",
    "target_account",
    "source_locations",
    "target_bucket",
)


class IngestConfigError(ValueError):
    """The ingestion settings of the CDK context are wrong; the message names the key and the field."""


@dataclass(frozen=True)
class BucketPrefix:
    bucket: str
    prefix: str = ""

    @property
    def object_pattern(self) -> str:
        """Key pattern of the objects under the prefix (`prefix/*`, or `*` for a whole bucket)."""
        p = self.prefix.strip("/")
        return f"{p}/*" if p else "*"

    @property
    def list_prefix(self) -> str:
        p = self.prefix.strip("/")
        return f"{p}/*" if p else "*"


@dataclass(frozen=True)
class IngestSource:
    """One scheduled API source of the ingestion workflow (an entry of `ingest_sources`)."""

    name: str
    schedule: str  # EventBridge: rate(...) or cron(...)
    fetch: FetchConfig
    table: Scd2Spec
    enabled: bool = True

    @property
    def execution_input(self) -> dict[str, Any]:
        """The state machine's input: {"fetch": FetchConfig, "table": Scd2Spec} as JSON values."""
        return {
            "fetch": self.fetch.model_dump(mode="json", exclude_unset=True),
            "table": self.table.model_dump(mode="json", exclude_unset=True),
        }


M = TypeVar("M", bound=BaseModel)


def _model(model: type[M], value: Any, where: str) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(value)'}: {e['msg']}" for e in exc.errors()
        )
        raise IngestConfigError(f"{where}: {problems}") from None


def parse_ingest_sources(raw: Sequence[Any]) -> tuple[IngestSource, ...]:
    """The `ingest_sources` context value, each entry validated by the workflow's own models."""
    sources: list[IngestSource] = []
    for i, entry in enumerate(raw):
        label = f"ingest_sources[{i}]"
        if not isinstance(entry, Mapping):
            raise IngestConfigError(f"{label}: must be an object with name, schedule, fetch and table")
        name = entry.get("name")
        if not isinstance(name, str) or not _SOURCE_NAME.match(name):
            raise IngestConfigError(
                f"{label}: name {name!r} must be 1-48 letters, digits, '_', '-', '.' (it names the schedule)"
            )
        label = f"{label} ({name!r})"
        unknown = sorted(set(entry) - _SOURCE_KEYS)
        missing = sorted({"schedule", "fetch", "table"} - set(entry))
        if unknown or missing:
            raise IngestConfigError(f"{label}: unknown keys {unknown}, missing keys {missing}")
        schedule = entry["schedule"]
        if not isinstance(schedule, str) or not _SCHEDULE.match(schedule):
            raise IngestConfigError(
                f"{label}: schedule {schedule!r} must be an EventBridge rate(...) or cron(...) expression"
            )
        if name in {s.name for s in sources}:
            raise IngestConfigError(f"{label}: another source has the same name")
        sources.append(
            IngestSource(
                name=name,
                schedule=schedule,
                fetch=_model(FetchConfig, entry["fetch"], f"{label} fetch"),
                table=_model(Scd2Spec, entry["table"], f"{label} table"),
                enabled=bool(entry.get("enabled", True)),
            )
        )
    return tuple(sources)


def parse_maintenance(raw: Mapping[str, Any]) -> MaintenanceConfig:
    return _model(MaintenanceConfig, dict(raw), "ingest_maintenance")


def secret_covered(secret_id: str, arns: Sequence[str]) -> bool:
    """Whether GetSecretValue of `secret_id` (a name or an ARN) falls under one of the ARNs (which may
    end with the `-??????` pattern of the random suffix Secrets Manager appends to names)."""
    for arn in arns:
        name = arn.split(":secret:", 1)[1]
        base = re.sub(r"-(\?{6}|[A-Za-z0-9]{6})$", "", name)
        if fnmatchcase(secret_id, arn) or secret_id in (name, base):
            return True
    return False


Account = Annotated[str, Field(pattern=r"^\d{12}$")]
Region = Annotated[str, Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")]


class Settings(BaseModel):
    """Every context key the app reads, by its name, with its type and default (the local ones, so
    `python app.py` synthesizes on a laptop). `-c KEY=VALUE` strings are parsed to the field's type;
    a key of the wrong shape stops synthesis with one line naming it (`from_context`)."""

    model_config = ConfigDict(frozen=True, coerce_numbers_to_str=True)

    orchestrator_account: Account = ORCHESTRATOR_ACCOUNT_LOCAL
    orchestrator_region: Region = REGION_LOCAL
    source_account: Account = "111111111111"
    source_region: Region = REGION_LOCAL
    target_account: Account = "222222222222"
    target_region: Region = REGION_LOCAL
    source_external_id: str = ""
    source_locations: tuple[BucketPrefix, ...] = (BucketPrefix("source-lake", "warehouse"),)
    source_databases: tuple[str, ...] = ("sales",)
    source_kms_key_arns: tuple[str, ...] = ()
    # A cutover with options.mark_source sets icelake.promoted_to on the source tables: the one
    # write icelake may ever make in the source account, granted only when this is true.
    source_allow_mark: bool = False
    target_bucket: str = "target-lake"
    target_prefix: str = "warehouse"
    target_databases: tuple[str, ...] = ("sales",)
    lake_formation_enabled: bool = False
    lake_formation_admins: tuple[str, ...] = ()
    notification_emails: tuple[str, ...] = ()
    sync_schedule: Annotated[str, Field(pattern=_SCHEDULE.pattern)] = "rate(1 day)"
    sync_enabled: bool = False
    sync_request: dict[str, Any] = Field(default_factory=dict)
    map_concurrency: Annotated[int, Field(ge=1, le=10_000)] = 10
    glue_workers: Annotated[int, Field(ge=2)] = 10
    glue_worker_type: str = "G.1X"
    glue_version: str = "5.1"
    deps_layer_dir: str = ""  # a prebuilt layer directory instead of building requirements-lambda.txt
    # The ingestion workflow (stack IcelakeIngest, in the orchestrator account).
    ingest_enabled: bool = False
    ingest_sources: tuple[IngestSource, ...] = ()
    ingest_secret_arns: tuple[str, ...] = ()  # the only secrets the fetch Lambda may read
    ingest_secret_kms_key_arns: tuple[str, ...] = ()  # customer managed keys of those secrets, if any
    ingest_databases: tuple[str, ...] = ()  # () -> the databases of the sources' tables
    ingest_create_databases: bool = True
    ingest_warehouse_bucket: str = ""  # "" -> the stack creates the bucket
    ingest_warehouse_prefix: str = "warehouse"
    ingest_warehouse_kms_key_arn: str = ""  # key of an existing warehouse bucket, if SSE-KMS
    ingest_maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    ingest_glue_workers: Annotated[int, Field(ge=2)] = 2
    ingest_glue_worker_type: str = "G.1X"

    @field_validator("*", mode="before")
    @classmethod
    def _command_line_json(cls, value: Any) -> Any:
        """`-c key=[...]` and `-c key={...}` arrive as strings: parse them (numbers and booleans
        parse themselves)."""
        if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
            return json.loads(value)
        return value

    @field_validator("ingest_sources", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> Any:
        return parse_ingest_sources(value) if isinstance(value, list) else value

    @field_validator("ingest_maintenance", mode="before")
    @classmethod
    def _maintenance(cls, value: Any) -> Any:
        return parse_maintenance(value) if isinstance(value, Mapping) else value

    @property
    def ingest_database_names(self) -> tuple[str, ...]:
        """The Glue databases the merge job may use: as configured, or those of the sources' tables."""
        if self.ingest_databases:
            return self.ingest_databases
        return tuple(dict.fromkeys(src.table.table.split(".")[1] for src in self.ingest_sources))

    def check_ingest(self) -> None:
        """What the sources ask of the stack is granted: their tables' databases and their secrets."""
        if self.ingest_warehouse_kms_key_arn and not self.ingest_warehouse_bucket:
            raise IngestConfigError(
                "ingest_warehouse_kms_key_arn is for an existing ingest_warehouse_bucket; the bucket the "
                "stack creates has its own key"
            )
        for arn in self.ingest_secret_arns:
            if not _SECRET_ARN.match(arn):
                raise IngestConfigError(f"ingest_secret_arns: {arn!r} is not a Secrets Manager secret ARN")
        databases = set(self.ingest_database_names)
        for i, src in enumerate(self.ingest_sources):
            label = f"ingest_sources[{i}] ({src.name!r})"
            catalog, database, _table = src.table.table.split(".")
            if not _SPARK_CATALOG.match(catalog):
                raise IngestConfigError(f"{label} table.table: catalog {catalog!r} is not a Spark identifier")
            if database not in databases:
                raise IngestConfigError(
                    f"{label} table.table: database {database!r} is not in ingest_databases "
                    f"{sorted(databases)}"
                )
            auth = src.fetch.auth
            if auth is not None and not secret_covered(auth.secret_id, self.ingest_secret_arns):
                raise IngestConfigError(
                    f"{label} fetch.auth.secret_id: {auth.secret_id!r} is not covered by ingest_secret_arns "
                    f"{list(self.ingest_secret_arns)}: add the secret's ARN there"
                )

    @property
    def source_role_arn(self) -> str:
        return f"arn:aws:iam::{self.source_account}:role/{SOURCE_ROLE_NAME}"

    @property
    def target_role_arn(self) -> str:
        return f"arn:aws:iam::{self.target_account}:role/{TARGET_ROLE_NAME}"

    @property
    def orchestrator_principal_arns(self) -> list[str]:
        """The orchestrator roles that assume the source and target roles (Lambdas and Glue job)."""
        return [
            f"arn:aws:iam::{self.orchestrator_account}:role/{STEPS_ROLE_NAME}",
            f"arn:aws:iam::{self.orchestrator_account}:role/{GLUE_ROLE_NAME}",
        ]

    @property
    def target_location(self) -> BucketPrefix:
        return BucketPrefix(self.target_bucket, self.target_prefix)

    @classmethod
    def from_context(cls, node: Node) -> Settings:
        missing = [k for k in REQUIRED_CONTEXT if node.try_get_context(k) in (None, "", [])]
        if missing:
            raise ContextError(
                f"context {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required: set "
                f"{'it' if len(missing) == 1 else 'them'} in cdk.json or pass -c KEY=VALUE (your accounts "
                "and buckets; bucket names are global, so an example's would be someone else's)"
            )
        given = {k: v for k in cls.model_fields if (v := node.try_get_context(k)) is not None}
        try:
            settings = cls.model_validate(given)
        except ValidationError as exc:
            raise _context_error(exc) from None
        if settings.ingest_enabled:
            settings.check_ingest()  # before any stack is built: a bad source fails synthesis at once
        return settings


def _context_error(exc: ValidationError) -> ValueError:
    """One line naming each key that is wrong; IngestConfigError when the first is an ingest_ key
    (its own validators' messages are kept as they are)."""
    problems = []
    for e in exc.errors():
        key = ".".join(str(p) for p in e["loc"])
        message = str(e["ctx"]["error"]) if e["type"] == "value_error" else f"{key}: {e['msg']}"
        problems.append(message if e["type"] == "value_error" else f"context {message} (got {e['input']!r})")
    first = str(exc.errors()[0]["loc"][0])
    error = IngestConfigError if first.startswith("ingest_") else ContextError
    return error("; ".join(problems))
