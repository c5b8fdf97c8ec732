"""The deployment's configuration: every CDK context key, checked by one model (`Settings`) at synth.

Values come from a JSON file named by `-c config=PATH` (or the ICELAKE_CONFIG environment variable),
then cdk.json's context, then `-c KEY=VALUE` (each overriding the one before). Whatever the source,
a key's text form is parsed into its type (`-c` delivers strings: structured keys are JSON), an
unknown key is refused with the nearest known one, `sync_request` and every ingestion source are
validated by the models the workflows use, and each refusal is one line naming the key and the fix
(ContextError). Nothing is defaulted that would name someone's account, bucket or database."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cdk.build import REPO
from cdk.config_values import (
    SCHEDULE,
    SECRET_ARN,
    BucketPrefix,
    ContextError,
    IngestConfigError,
    IngestSource,
    check_table_buckets,
    parse_ingest_sources,
    parse_maintenance,
    parse_sync_request,
    secret_covered,
)
from icelake.ingest.models import MaintenanceConfig
from icelake.request.s3tables import parse_table_bucket_arn

if TYPE_CHECKING:
    from constructs import Node

SOURCE_ROLE_NAME = "icelake-source-read"
TARGET_ROLE_NAME = "icelake-target-write"
STEPS_ROLE_NAME = "icelake-migrate-steps"
GLUE_ROLE_NAME = "icelake-migrate-glue"
INGEST_FETCH_ROLE_NAME = "icelake-ingest-fetch"
INGEST_COMPLETE_ROLE_NAME = "icelake-ingest-complete"
INGEST_GLUE_ROLE_NAME = "icelake-ingest-glue"

# `-c config=PATH`, or this environment variable: a JSON object of context keys (see EXAMPLE_CONFIG).
CONFIG_KEY = "config"
CONFIG_ENV = "ICELAKE_CONFIG"
# The documented example: the embedded AWS's accounts and buckets. `make synth` and the tests use it;
# nothing deploys it unless named.
EXAMPLE_CONFIG = REPO / "examples" / "context.json"

_SPARK_CATALOG = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KMS_KEY_ARN = r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)/.+$"
# Who may be trusted besides the orchestrator's roles (operator_principal_arns): IAM roles or users,
# by ARN; a role's path may hold wildcards (SSO's roles live under aws-reserved/sso.amazonaws.com/).
_OPERATOR_ARN = r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/*?-]+$"
_OUR_KEY = re.compile(r"^[a-z][a-z0-9_]*$")  # CDK's own keys have ':' , '@' or '-' in them
# Keys an earlier release read, and what replaced them.
RETIRED_KEYS = dict.fromkeys(
    ("pandas_layer_arn", "powertools_layer_arn"),
    "the dependencies layer is built from requirements-lambda.txt at synth (or set deps_layer_dir to a "
    "prebuilt one); remove the key",
)


# Where a deployment runs, reads and writes: never defaulted, because a default would be someone
# else's (bucket names are global), another account's, or a region the lake is not in.
REQUIRED_CONTEXT = (
    "orchestrator_account",
    "orchestrator_region",
    "source_account",
    "target_account",
    "source_locations",
    "source_databases",
    "target_bucket",
)


Account = Annotated[str, Field(pattern=r"^\d{12}$")]
Region = Annotated[str, Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")]
KmsKeyArn = Annotated[str, Field(pattern=_KMS_KEY_ARN)]
Names = Annotated[tuple[str, ...], Field(min_length=1)]


class Settings(BaseModel):
    """Every context key the app reads, by its name, with its type and default. Built by
    `from_context` (or `from_mapping`), which refuses what the model alone cannot see."""

    model_config = ConfigDict(frozen=True, extra="forbid", coerce_numbers_to_str=True)

    orchestrator_account: Account
    orchestrator_region: Region
    source_account: Account
    source_region: Region  # default: orchestrator_region
    target_account: Account
    target_region: Region  # default: orchestrator_region
    source_external_id: str = ""
    source_locations: Annotated[tuple[BucketPrefix, ...], Field(min_length=1)]
    source_databases: Names
    source_kms_key_arns: tuple[KmsKeyArn, ...] = ()
    # S3 prefixes of code that reads the source tables (Glue job scripts, MWAA's DAGs): the source
    # role may read them for the assessment's consumer scan (cdk/consumers.py).
    consumer_code_prefixes: tuple[BucketPrefix, ...] = ()
    # A cutover with options.mark_source sets icelake.promoted_to on the source tables: the one
    # write icelake may ever make in the source account, granted only when this is true.
    source_allow_mark: bool = False
    target_bucket: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")]
    target_prefix: str = "warehouse"
    target_databases: Names  # default: source_databases
    # An existing lake as the target: the bucket (target_bucket) and these of target_databases are
    # imported, not created (the stack never owns nor deletes them); the role is granted them alike.
    target_bucket_existing: bool = False
    target_databases_existing: tuple[str, ...] = ()
    # The default SSE-KMS key of an existing target bucket, granted to the target role.
    target_kms_key_arn: Annotated[str, Field(pattern=f"^$|{_KMS_KEY_ARN}")] = ""
    # S3 Tables table buckets (a request's target.kind s3tables), of the target account and region:
    # the target role creates namespaces and tables there and writes the tables it created
    # (cdk/table_buckets.py).
    table_bucket_arns: tuple[str, ...] = ()
    # Opt in: these IAM principals may also assume the source and target roles (an operator's
    # `icelake assess --direct` reads with them); by default only the orchestrator's roles may.
    operator_principal_arns: tuple[Annotated[str, Field(pattern=_OPERATOR_ARN)], ...] = ()
    lake_formation_enabled: bool = False
    lake_formation_admins: tuple[str, ...] = ()
    notification_emails: tuple[str, ...] = ()
    sync_schedule: Annotated[str, Field(pattern=SCHEDULE.pattern)] = "rate(1 day)"
    # The scheduled incremental sync: its rule exists only with a sync_request, and runs when enabled
    # (default: enabled when a sync_request is given).
    sync_enabled: bool  # default: sync_request is given
    sync_request: dict[str, Any] | None = None
    # The scheduled verify (mode verify, icelake/migrate/check/verify.py): sync_request's tables checked
    # again, nothing written. Its rule exists with a sync_request and is deployed disabled.
    verify_schedule: Annotated[str, Field(pattern=SCHEDULE.pattern)] = "rate(1 day)"
    verify_enabled: bool = False
    # The scheduled run repairs what it finds damaged (mode repair, icelake/migrate/check/repair.py)
    # instead of only naming it.
    repair_on_damage: bool = False
    # The audit trail (cdk/audit.py): a CloudTrail trail with S3 data events on the artifacts bucket
    # and the target prefix, deployed by the orchestrator stack; or the ARN of an existing one.
    audit_trail: bool = False
    audit_trail_arn: Annotated[
        str, Field(pattern=r"^(arn:aws[a-z-]*:cloudtrail:[a-z0-9-]+:\d{12}:trail/[\w.-]{3,128})?$")
    ] = ""
    map_concurrency: Annotated[int, Field(ge=1, le=10_000)] = 10
    glue_workers: Annotated[int, Field(ge=2)] = 10
    glue_worker_type: str = "G.1X"
    glue_version: str = "5.1"
    deps_layer_dir: str = ""  # a prebuilt layer directory instead of building requirements-lambda.txt
    # The ingestion workflow (stack IcelakeIngest, in the orchestrator account): deployed when
    # enabled (default: when ingest_sources are given).
    ingest_enabled: bool  # default: ingest_sources is not empty
    ingest_sources: tuple[IngestSource, ...] = ()
    ingest_secret_arns: tuple[str, ...] = ()  # the only secrets the fetch Lambda may read
    ingest_secret_kms_key_arns: tuple[KmsKeyArn, ...] = ()  # customer managed keys of those secrets
    ingest_databases: tuple[str, ...] = ()  # () -> the databases of the sources' tables
    ingest_create_databases: bool = True
    ingest_warehouse_bucket: str = ""  # "" -> the stack creates the bucket
    ingest_warehouse_prefix: str = "warehouse"
    ingest_warehouse_kms_key_arn: str = ""  # key of an existing warehouse bucket, if SSE-KMS
    ingest_maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    ingest_glue_workers: Annotated[int, Field(ge=2)] = 2
    ingest_glue_worker_type: str = "G.1X"

    @model_validator(mode="before")
    @classmethod
    def _text_forms_and_defaults(cls, data: Any) -> Any:
        """`-c` delivers every value as a string: a key that is not text is parsed as JSON (a list,
        an object, a number, true/false). Then the defaults that follow other keys."""
        if not isinstance(data, Mapping):
            return data
        values = {k: _parsed(k, v) for k, v in data.items()}
        for key, follows in (
            ("source_region", "orchestrator_region"),
            ("target_region", "orchestrator_region"),
            ("target_databases", "source_databases"),
        ):
            if values.get(key) in (None, "", []) and follows in values:
                values[key] = values[follows]
        values.setdefault("sync_enabled", bool(values.get("sync_request")))
        values.setdefault("ingest_enabled", bool(values.get("ingest_sources")))
        return values

    @field_validator("sync_request", mode="before")
    @classmethod
    def _sync_request(cls, value: Any) -> Any:
        if value in (None, {}):
            return None
        return parse_sync_request(value) if isinstance(value, Mapping) else value

    @field_validator("ingest_sources", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> Any:
        return parse_ingest_sources(value) if isinstance(value, list) else value

    @field_validator("ingest_maintenance", mode="before")
    @classmethod
    def _maintenance(cls, value: Any) -> Any:
        return parse_maintenance(value) if isinstance(value, Mapping) else value

    @field_validator("table_bucket_arns")
    @classmethod
    def _table_buckets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for arn in value:
            parse_table_bucket_arn(arn)  # ValueError naming the ARN and what one looks like
        return value

    @field_validator("ingest_secret_arns")
    @classmethod
    def _secret_arns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for arn in value:
            if not SECRET_ARN.match(arn):
                raise ValueError(
                    f"{arn!r} is not a Secrets Manager secret ARN "
                    "(arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-??????)"
                )
        return value

    def check(self) -> None:
        """What no one key shows: the keys agree with each other (ContextError, one line)."""
        if self.sync_enabled and self.sync_request is None:
            raise ContextError(
                "context sync_enabled is true but there is no sync_request: give the request the "
                "scheduled sync sends, or set sync_enabled to false"
            )
        if self.audit_trail and self.audit_trail_arn:
            raise ContextError(
                "give audit_trail or audit_trail_arn, not both: audit_trail deploys a trail, "
                "audit_trail_arn names one that exists"
            )
        if self.verify_enabled and self.sync_request is None:
            raise ContextError(
                "context verify_enabled is true but there is no sync_request: the scheduled verify "
                "checks the tables the scheduled sync moves; give one, or set verify_enabled to false"
            )
        if self.sync_request is not None:
            self._check_sync_request(self.sync_request)
        self._check_existing_target()
        check_table_buckets(self.table_bucket_arns, self.target_account, self.target_region)
        if self.ingest_enabled:
            self.check_ingest()  # before any stack is built: a bad source fails synthesis at once

    def _check_sync_request(self, request: Mapping[str, Any]) -> None:
        """The scheduled request moves what this deployment grants: its accounts, its target bucket
        (or table bucket), its source databases."""
        target = request["target"]
        wrong = [
            f"{where} is {got!r}, not {key} {want!r}"
            for where, got, key, want in (
                ("source.account_id", request["source"]["account_id"], "source_account", self.source_account),
                ("target.account_id", target["account_id"], "target_account", self.target_account),
            )
            if got != want
        ]
        if target.get("kind", "glue") == "glue" and target["bucket"] != self.target_bucket:
            wrong.append(f"target.bucket is {target['bucket']!r}, not target_bucket {self.target_bucket!r}")
        elif target.get("kind") == "s3tables" and target["table_bucket_arn"] not in self.table_bucket_arns:
            wrong.append(
                f"target.table_bucket_arn {target['table_bucket_arn']!r} is not in table_bucket_arns "
                f"{list(self.table_bucket_arns)}"
            )
        selection = request["selection"]
        databases = set(selection.get("databases", [])) | {
            t.split(".")[0] for t in selection.get("tables", [])
        }
        if databases - set(self.source_databases):
            wrong.append(
                f"selection names databases {sorted(databases - set(self.source_databases))} "
                f"outside source_databases {list(self.source_databases)}"
            )
        if wrong:
            raise ContextError(
                f"context sync_request: {'; '.join(wrong)}: the deployed roles grant only the "
                "configured accounts, bucket and databases, so make the two agree"
            )

    def _check_existing_target(self) -> None:
        """Existing target databases are target databases; a key of an existing bucket needs one."""
        stray = sorted(set(self.target_databases_existing) - set(self.target_databases))
        if stray:
            raise ContextError(
                f"context target_databases_existing names {stray}, which are not in target_databases "
                f"{list(self.target_databases)}: list the databases the role writes in target_databases "
                "and those that exist already in target_databases_existing too"
            )
        if self.target_kms_key_arn and not self.target_bucket_existing:
            raise ContextError(
                "context target_kms_key_arn is the key of an existing target bucket "
                "(target_bucket_existing: true); the bucket the stack creates has its own key"
            )

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
        home = (self.orchestrator_region, self.orchestrator_account)
        for arn in self.ingest_secret_arns:
            match = SECRET_ARN.match(arn)
            if match and match.groups() != home:
                raise IngestConfigError(
                    f"context ingest_secret_arns: {arn!r} is in {match.group(1)}, account "
                    f"{match.group(2)}; the fetch Lambda reads secrets of the orchestrator's region and "
                    f"account ({home[0]}, {home[1]}): create the secret there and list its ARN"
                )
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
        """The settings of an app's whole context (what the CDK CLI or `app.py` gave it)."""
        return cls.from_mapping(node.get_all_context())

    @classmethod
    def from_mapping(cls, context: Mapping[str, Any]) -> Settings:
        """Check every key of `context`, then the model; ContextError (one line) on the first problem."""
        ours = {k: v for k, v in context.items() if _is_ours(k)}
        for key in ours:
            if key in RETIRED_KEYS:
                raise ContextError(f"context key {key} is no longer used: {RETIRED_KEYS[key]}")
        unknown = sorted(set(ours) - set(cls.model_fields) - {CONFIG_KEY})
        if unknown:
            raise ContextError("; ".join(_unknown(k) for k in unknown))
        given = {k: v for k, v in ours.items() if k != CONFIG_KEY and v is not None}
        missing = [k for k in REQUIRED_CONTEXT if _parsed(k, given.get(k)) in (None, "", [], {})]
        if missing:
            raise ContextError(
                f"context {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required: your "
                f"accounts, region, buckets and databases, in a file named by -c config=PATH (or "
                f"{CONFIG_ENV}=PATH; examples/context.json shows every key), in cdk.json or as -c KEY=VALUE"
            )
        try:
            settings = cls.model_validate(given)
        except ValidationError as exc:
            raise _context_error(exc) from None
        settings.check()
        return settings


def _is_ours(key: str) -> bool:
    """CDK's own context keys (feature flags `@aws-cdk/...`, `aws:cdk:...`, lookups `x:account=...`,
    `acknowledged-issue-numbers`) are not ours, unless one is a misspelling of ours."""
    if _OUR_KEY.match(key):
        return True
    return bool(difflib.get_close_matches(key, Settings.model_fields, n=1, cutoff=0.85))


def _unknown(key: str) -> str:
    near = difflib.get_close_matches(key, [*Settings.model_fields, CONFIG_KEY], n=1, cutoff=0.6)
    fix = f"did you mean {near[0]}?" if near else "remove it (examples/context.json shows every key)"
    return f"context key {key} is not one icelake reads: {fix}"


def _text_field(key: str) -> bool:
    field = Settings.model_fields.get(key)
    return field is None or field.annotation is str


def _parsed(key: str, value: Any) -> Any:
    """A key's value as its field takes it: a string given for a key that is not text is JSON."""
    if not isinstance(value, str) or _text_field(key):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        if value.strip()[:1] in ("[", "{"):
            raise ContextError(
                f"context {key}: {value!r} is not JSON ({exc.msg} at character {exc.pos}): write it as "
                f'JSON, e.g. -c \'{key}=[{{"bucket": "my-lake"}}]\' with double quotes inside'
            ) from None
        return value  # the field's own check names what it should be


def _context_error(exc: ValidationError) -> ContextError:
    """One line naming each key that is wrong; IngestConfigError when the first is an ingest_ key
    (the ingestion validators' messages, which name the source and field, are kept as they are)."""
    problems = []
    locs = [e["loc"] for e in exc.errors()]
    for e in exc.errors():
        if any(len(other) > len(e["loc"]) and other[: len(e["loc"])] == e["loc"] for other in locs):
            continue  # a key's own length check, after one of its items failed: the item says it
        key = ".".join(str(p) for p in e["loc"])
        cause = e.get("ctx", {}).get("error")
        if isinstance(cause, IngestConfigError):
            problems.append(str(cause))
        elif e["type"] == "missing" and len(e["loc"]) == 1:
            problems.append(f"context {key} is required: set it (examples/context.json shows it)")
        else:
            message = str(cause) if e["type"] == "value_error" else e["msg"]
            problems.append(f"context {key}: {message} (got {e['input']!r})")
    first = str(exc.errors()[0]["loc"][0]) if exc.errors()[0]["loc"] else ""
    error = IngestConfigError if first.startswith("ingest_") else ContextError
    return error("; ".join(problems))


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The context keys of a JSON file (`-c config=PATH`); ContextError naming the file otherwise."""
    file = Path(path)
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        raise ContextError(
            f"context {CONFIG_KEY}: {str(path)!r} does not exist: name a JSON file of context keys"
        ) from None
    except (OSError, ValueError) as exc:
        raise ContextError(f"context {CONFIG_KEY}: {str(path)!r} is not a JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise ContextError(f"context {CONFIG_KEY}: {str(path)!r} must hold one JSON object of context keys")
    data.pop("//", None)  # a comment, as examples/context.json carries
    return data
