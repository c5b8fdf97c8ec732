"""Deployment settings read from the CDK context (cdk.json, or `-c key=value`), with local defaults
so that `python app.py` synthesizes on a laptop with no AWS credentials."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, TypeVar

from constructs import Node
from pydantic import BaseModel, ValidationError

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


@dataclass(frozen=True)
class Settings:
    orchestrator_account: str = ORCHESTRATOR_ACCOUNT_LOCAL
    orchestrator_region: str = REGION_LOCAL
    source_account: str = "111111111111"
    source_region: str = REGION_LOCAL
    target_account: str = "222222222222"
    target_region: str = REGION_LOCAL
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
    sync_schedule: str = "rate(1 day)"
    sync_enabled: bool = False
    sync_request: dict[str, Any] = field(default_factory=dict)
    map_concurrency: int = 10
    glue_workers: int = 10
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
    ingest_maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)
    ingest_glue_workers: int = 2
    ingest_glue_worker_type: str = "G.1X"

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
        def get(key: str, default: Any) -> Any:
            value = node.try_get_context(key)
            if value is None:
                return default
            # `-c key=value` on the command line gives strings; JSON ones are parsed.
            if isinstance(value, str) and (
                isinstance(default, (list, tuple, dict, bool, int)) or value.strip()[:1] in ("[", "{")
            ):
                value = json.loads(value)
            return value

        missing = [k for k in REQUIRED_CONTEXT if node.try_get_context(k) in (None, "", [])]
        if missing:
            raise ContextError(
                f"context {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required: set "
                f"{'it' if len(missing) == 1 else 'them'} in cdk.json or pass -c KEY=VALUE (your accounts "
                "and buckets; bucket names are global, so an example's would be someone else's)"
            )
        d = cls()
        locations = get("source_locations", None)
        settings = cls(
            orchestrator_account=str(get("orchestrator_account", d.orchestrator_account)),
            orchestrator_region=get("orchestrator_region", d.orchestrator_region),
            source_account=str(get("source_account", d.source_account)),
            source_region=get("source_region", d.source_region),
            target_account=str(get("target_account", d.target_account)),
            target_region=get("target_region", d.target_region),
            source_external_id=get("source_external_id", d.source_external_id),
            source_locations=(
                tuple(BucketPrefix(x["bucket"], x.get("prefix", "")) for x in locations)
                if locations
                else d.source_locations
            ),
            source_databases=tuple(get("source_databases", d.source_databases)),
            source_kms_key_arns=tuple(get("source_kms_key_arns", d.source_kms_key_arns)),
            source_allow_mark=bool(get("source_allow_mark", d.source_allow_mark)),
            target_bucket=get("target_bucket", d.target_bucket),
            target_prefix=get("target_prefix", d.target_prefix),
            target_databases=tuple(get("target_databases", d.target_databases)),
            lake_formation_enabled=bool(get("lake_formation_enabled", d.lake_formation_enabled)),
            lake_formation_admins=tuple(get("lake_formation_admins", d.lake_formation_admins)),
            notification_emails=tuple(get("notification_emails", d.notification_emails)),
            sync_schedule=get("sync_schedule", d.sync_schedule),
            sync_enabled=bool(get("sync_enabled", d.sync_enabled)),
            sync_request=dict(get("sync_request", {})),
            map_concurrency=int(get("map_concurrency", d.map_concurrency)),
            glue_workers=int(get("glue_workers", d.glue_workers)),
            glue_worker_type=get("glue_worker_type", d.glue_worker_type),
            glue_version=get("glue_version", d.glue_version),
            deps_layer_dir=get("deps_layer_dir", d.deps_layer_dir),
            ingest_enabled=bool(get("ingest_enabled", d.ingest_enabled)),
            ingest_sources=parse_ingest_sources(get("ingest_sources", [])),
            ingest_secret_arns=tuple(get("ingest_secret_arns", d.ingest_secret_arns)),
            ingest_secret_kms_key_arns=tuple(get("ingest_secret_kms_key_arns", d.ingest_secret_kms_key_arns)),
            ingest_databases=tuple(get("ingest_databases", d.ingest_databases)),
            ingest_create_databases=bool(get("ingest_create_databases", d.ingest_create_databases)),
            ingest_warehouse_bucket=get("ingest_warehouse_bucket", d.ingest_warehouse_bucket),
            ingest_warehouse_prefix=get("ingest_warehouse_prefix", d.ingest_warehouse_prefix),
            ingest_warehouse_kms_key_arn=get("ingest_warehouse_kms_key_arn", d.ingest_warehouse_kms_key_arn),
            ingest_maintenance=parse_maintenance(get("ingest_maintenance", {})),
            ingest_glue_workers=int(get("ingest_glue_workers", d.ingest_glue_workers)),
            ingest_glue_worker_type=get("ingest_glue_worker_type", d.ingest_glue_worker_type),
        )
        if settings.ingest_enabled:
            settings.check_ingest()  # before any stack is built: a bad source fails synthesis at once
        return settings
