"""S3 Tables' own maintenance around a migration into a table bucket.

The service compacts, expires snapshots and removes unreferenced files by itself, all on by
default, and each collides with a migration: compaction commits on the target, so the next sync
would find it diverged; snapshot management keeps 1 snapshot and expires the rest after 120 hours,
which would wipe within five days the history icelake carried. So:

- `pause_for_sync` turns `icebergCompaction` and `icebergSnapshotManagement` off on a table while
  icelake syncs it, and returns the configuration it found (for the ledger: record the first one
  found, since a later sync finds icelake's own "disabled");
- `cutover_settings` says what cutover sets: the request's `options.s3tables_maintenance` where it
  says, else compaction on and snapshot management from the source table's retention properties
  (`history.expire.max-snapshot-age-ms`, rounded up to whole hours, and
  `history.expire.min-snapshots-to-keep`); never the service's 120-hour default unnoticed: every
  value carries where it came from, for the report. `apply_cutover` puts them;
- `unreferenced_removal` reads the bucket's unreferenced-file removal, which takes what a rolled
  back run wrote (no DeleteObject there): the report says when.

A source with no retention property at all: Iceberg's own defaults (`max-snapshot-age-ms`
432,000,000 = 5 days, `min-snapshots-to-keep` 1) apply only when someone runs snapshot expiration
on it, and its snapshots are otherwise kept for ever. Setting the defaults would expire within five
days the history a migration exists to carry; so snapshot management stays off and nothing is
expired, as on the source, until the request says otherwise (the report names such tables). A
source that sets one of the two properties expires snapshots by them: the other takes Iceberg's
default, as Iceberg's expiration would."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

COMPACTION = "icebergCompaction"
SNAPSHOTS = "icebergSnapshotManagement"
UNREFERENCED = "icebergUnreferencedFileRemoval"
MAX_AGE = "history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS = "history.expire.min-snapshots-to-keep"
ICEBERG_MAX_AGE_MS = 432_000_000  # Iceberg's default max-snapshot-age: 5 days
ICEBERG_MIN_SNAPSHOTS = 1  # Iceberg's default min-snapshots-to-keep
SERVICE_TARGET_FILE_MB = 512  # S3 Tables' default compaction target
SERVICE_STRATEGY = "auto"
HOUR_MS = 3_600_000


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Snapshots(_Frozen):
    """Snapshot management at cutover, with where each value came from (the report says it)."""

    enabled: bool
    min_snapshots_to_keep: int | None = Field(default=None, ge=1)
    max_snapshot_age_hours: int | None = Field(default=None, ge=1)
    why: str  # e.g. "the source's history.expire.max-snapshot-age-ms (604800000 ms)"


class Cutover(_Frozen):
    """What cutover sets on one S3 Tables table."""

    compaction_enabled: bool
    target_file_size_mb: int = Field(default=SERVICE_TARGET_FILE_MB, ge=64, le=512)
    strategy: str = Field(default=SERVICE_STRATEGY, pattern=r"^(auto|binpack|sort|z-order)$")
    snapshots: Snapshots

    def values(self) -> dict[str, dict[str, Any]]:
        """The PutTableMaintenanceConfiguration `value` of each maintenance type."""
        compaction = {COMPACTION: {"targetFileSizeMB": self.target_file_size_mb, "strategy": self.strategy}}
        snapshots: dict[str, Any] = {"status": "enabled" if self.snapshots.enabled else "disabled"}
        if self.snapshots.enabled:
            snapshots["settings"] = {
                SNAPSHOTS: {
                    "minSnapshotsToKeep": self.snapshots.min_snapshots_to_keep,
                    "maxSnapshotAgeHours": self.snapshots.max_snapshot_age_hours,
                }
            }
        return {
            COMPACTION: {
                "status": "enabled" if self.compaction_enabled else "disabled",
                "settings": compaction,
            },
            SNAPSHOTS: snapshots,
        }

    def keeps(self) -> str:
        """What the table keeps, in the report's words."""
        if not self.snapshots.enabled:
            return f"every snapshot (snapshot management off: {self.snapshots.why})"
        return (
            f"snapshots younger than {self.snapshots.max_snapshot_age_hours} hours, and at least "
            f"{self.snapshots.min_snapshots_to_keep} ({self.snapshots.why})"
        )


class UnreferencedRemoval(_Frozen):
    """A table bucket's unreferenced-file removal: a file no snapshot references is marked
    noncurrent after `unreferenced_days`, and deleted `noncurrent_days` later."""

    enabled: bool
    unreferenced_days: int
    noncurrent_days: int

    @property
    def deleted_within_days(self) -> int | None:
        """Days until an unreferenced file is gone; None: never (removal disabled)."""
        return self.unreferenced_days + self.noncurrent_days if self.enabled else None


def table_configuration(client: Any, table: Mapping[str, str]) -> dict[str, Any]:
    """GetTableMaintenanceConfiguration's `configuration` (`table`: tableBucketARN, namespace, name)."""
    return dict(client.get_table_maintenance_configuration(**table)["configuration"])


def _enabled(configuration: Mapping[str, Any], kind: str) -> bool:
    status = (configuration.get(kind) or {}).get("status", "enabled")  # absent: the default, on
    return bool(status == "enabled")


def pause_for_sync(client: Any, table: Mapping[str, str]) -> dict[str, Any]:
    """Turn compaction and snapshot management off while icelake syncs the table; the
    configuration found before. A type already off is not written again (a sync after the first
    costs one read)."""
    found = table_configuration(client, table)
    for kind in (COMPACTION, SNAPSHOTS):
        if _enabled(found, kind):
            client.put_table_maintenance_configuration(**table, type=kind, value={"status": "disabled"})
    return found


def _whole(properties: Mapping[str, str], name: str, table: str) -> int | None:
    raw = properties.get(name)
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(
            f"{table}: the source's {name} is {raw!r}, not a positive whole number, so its retention "
            "cannot be carried: set options.s3tables_maintenance.snapshot_management in the request"
        )
    return value


def _from_source(properties: Mapping[str, str], table: str) -> Snapshots:
    max_age_ms, min_keep = _whole(properties, MAX_AGE, table), _whole(properties, MIN_SNAPSHOTS, table)
    if max_age_ms is None and min_keep is None:
        return Snapshots(
            enabled=False,
            why=f"the source sets neither {MAX_AGE} nor {MIN_SNAPSHOTS}, and expires nothing by itself",
        )
    said = [f"{MAX_AGE} {max_age_ms} ms" if max_age_ms else f"{MAX_AGE} Iceberg's default, 5 days"]
    said.append(f"{MIN_SNAPSHOTS} {min_keep}" if min_keep else f"{MIN_SNAPSHOTS} Iceberg's default, 1")
    return Snapshots(
        enabled=True,
        min_snapshots_to_keep=min_keep or ICEBERG_MIN_SNAPSHOTS,
        max_snapshot_age_hours=math.ceil((max_age_ms or ICEBERG_MAX_AGE_MS) / HOUR_MS),
        why=f"the source's retention: {', '.join(said)}",
    )


def _asked(requested: Any) -> dict[str, Any]:
    """`options.s3tables_maintenance` as a plain mapping (the request's model, or a mapping)."""
    if requested is None:
        return {}
    dump = getattr(requested, "model_dump", None)
    return dict(dump() if dump is not None else requested)


def _requested_snapshots(wanted: Mapping[str, Any], source: Snapshots) -> Snapshots:
    """The request's snapshot management; a value it leaves out comes from the source's
    retention, or from Iceberg's default when the source has none."""
    if not wanted.get("enabled", True):
        return Snapshots(enabled=False, why="options.s3tables_maintenance turns it off")
    values, said = {}, []
    defaults = {
        "min_snapshots_to_keep": ICEBERG_MIN_SNAPSHOTS,
        "max_snapshot_age_hours": ICEBERG_MAX_AGE_MS // HOUR_MS,
    }
    for field, default in defaults.items():
        if wanted.get(field):
            values[field], where = int(wanted[field]), "options.s3tables_maintenance"
        elif source.enabled:
            values[field], where = getattr(source, field), source.why
        else:
            values[field], where = default, "Iceberg's default (the source sets no retention)"
        said.append(f"{field} {values[field]} from {where}")
    return Snapshots(enabled=True, **values, why="; ".join(said))


def cutover_settings(requested: Any, source_properties: Mapping[str, str], table: str) -> Cutover:
    """What cutover sets on `table` (named in errors): `requested` is the request's
    `options.s3tables_maintenance` (its model, a mapping of the same fields, or None); where it
    says nothing, the source table's retention properties decide (see the module's docstring)."""
    asked = _asked(requested)
    source = _from_source(source_properties, table)
    wanted = asked.get("snapshot_management")
    compaction = dict(asked.get("compaction") or {})
    return Cutover(
        compaction_enabled=compaction.get("enabled", True),
        target_file_size_mb=compaction.get("target_file_size_mb") or SERVICE_TARGET_FILE_MB,
        strategy=compaction.get("strategy") or SERVICE_STRATEGY,
        snapshots=source if wanted is None else _requested_snapshots(dict(wanted), source),
    )


def apply_cutover(client: Any, table: Mapping[str, str], cutover: Cutover) -> None:
    """Put the cutover's compaction and snapshot management on the table."""
    for kind, value in cutover.values().items():
        client.put_table_maintenance_configuration(**table, type=kind, value=value)


def unreferenced_removal(client: Any, table_bucket_arn: str) -> UnreferencedRemoval:
    """The bucket's unreferenced-file removal as the service answers it (AWS's defaults for a
    setting it leaves out: 3 days, then 10)."""
    answer = client.get_table_bucket_maintenance_configuration(tableBucketARN=table_bucket_arn)
    value = (answer.get("configuration") or {}).get(UNREFERENCED) or {}
    settings = (value.get("settings") or {}).get(UNREFERENCED) or {}
    return UnreferencedRemoval(
        enabled=value.get("status", "enabled") == "enabled",
        unreferenced_days=int(settings.get("unreferencedDays", 3)),
        noncurrent_days=int(settings.get("nonCurrentDays", 10)),
    )
