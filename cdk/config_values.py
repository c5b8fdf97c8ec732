"""The values of the configuration's keys that are parsed on their own, before `Settings` sees
them (cdk/config.py): the errors every refusal raises, a bucket and prefix, the ingestion sources
and maintenance (checked by the ingestion workflow's models), the scheduled sync's request (checked
by the migration's), the table buckets (the target's account and region), and whether a secret is
covered by the ARNs granted."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from icelake.ingest.models import FetchConfig, MaintenanceConfig, Scd2Spec
from icelake.request.models import MigrationRequest
from icelake.request.s3tables import parse_table_bucket_arn

_SOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")  # rule name icelake-ingest-<name>, <= 64
SCHEDULE = re.compile(r"^(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(\S+( \S+){5}\))$")
SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:([a-z0-9-]+):(\d{12}):secret:.+$")
_SOURCE_KEYS = {"name", "schedule", "fetch", "table", "enabled"}


class ContextError(ValueError):
    """The configuration cannot be used: one line naming the key and the fix (printed by `app.py`)."""


class IngestConfigError(ContextError):
    """The ingestion settings are wrong; the message names the key, the source and the field."""


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


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(value)'}: {e['msg']}" for e in exc.errors())


def _model(model: type[M], value: Any, where: str) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise IngestConfigError(f"{where}: {_problems(exc)}") from None


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
        if not isinstance(schedule, str) or not SCHEDULE.match(schedule):
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


def parse_sync_request(raw: Mapping[str, Any]) -> dict[str, Any]:
    """`sync_request` as the scheduled rule sends it (mode incremental), validated by the workflow's
    MigrationRequest; each scheduled execution's name is its run id, so the request names none."""
    if "run_id" in raw:
        raise ValueError(
            "a scheduled sync takes each execution's name as its run id: remove run_id from sync_request"
        )
    if raw.get("mode", "incremental") != "incremental":
        raise ValueError(f"the scheduled sync is incremental: remove mode {raw['mode']!r} from sync_request")
    request = {**raw, "mode": "incremental"}
    try:
        MigrationRequest.model_validate({"run_id": "scheduled-sync", **request})
    except ValidationError as exc:
        raise ValueError(
            f"{_problems(exc)} (sync_request is a migration request without run_id, like "
            "tests/events/migrate_request.json)"
        ) from None
    return request


def check_table_buckets(arns: Sequence[str], account: str, region: str) -> None:
    """Each table bucket is the target account's, in the target region: the target role is the
    target account's, and a table's storage is read and written in its table bucket's region."""
    for arn in arns:
        bucket = parse_table_bucket_arn(arn)
        if (bucket.account_id, bucket.region) != (account, region):
            raise ContextError(
                f"context table_bucket_arns: {arn!r} is in {bucket.region}, account {bucket.account_id}; "
                f"the target role writes table buckets of target_account {account} in target_region "
                f"{region}: use a table bucket there (or deploy for its account and region)"
            )
    if len(set(arns)) != len(arns):
        raise ContextError(f"context table_bucket_arns names a table bucket twice: {list(arns)}")


def secret_covered(secret_id: str, arns: Sequence[str]) -> bool:
    """Whether GetSecretValue of `secret_id` (a name or an ARN) falls under one of the ARNs (which may
    end with the `-??????` pattern of the random suffix Secrets Manager appends to names)."""
    for arn in arns:
        name = arn.split(":secret:", 1)[1]
        base = re.sub(r"-(\?{6}|[A-Za-z0-9]{6})$", "", name)
        if fnmatchcase(secret_id, arn) or secret_id in (name, base):
            return True
    return False
