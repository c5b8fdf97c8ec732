"""Names and SQL text the SCD2 modules share: the bookkeeping columns every version carries, the
snapshot-summary keys that record a batch, quoting and exact literals."""

from __future__ import annotations

from datetime import UTC, datetime

INGESTED_AT = "_ingested_at"


SOURCE_FILE = "_source_file"


IS_CURRENT = "_is_current"


VALID_FROM = "_valid_from"


VALID_TO = "_valid_to"


IS_DELETED = "_is_deleted"


SCD2_COLUMNS: dict[str, tuple[str, str]] = {
    INGESTED_AT: ("TIMESTAMP", "when icelake merged the batch that created this version"),
    SOURCE_FILE: ("STRING", "raw landed API response this version was read from"),
    IS_CURRENT: ("BOOLEAN", "true for the one live version of a key"),
    VALID_FROM: ("TIMESTAMP", "fetch time of the batch that created this version (inclusive)"),
    VALID_TO: (
        "TIMESTAMP",
        "fetch time of the batch that ended this version (exclusive); NULL while current",
    ),
    IS_DELETED: ("BOOLEAN", "true when a full load no longer contained the key and closed this version"),
}


POSITION = "__icelake_pos"  # record position inside the batch (tie-breaker), internal to the merge


CUR = "__cur_"  # prefix of the current version's columns in the classified changes


DELETED_FLAG = "__icelake_tombstone"  # the record is an API tombstone (Scd2Spec.delete_marker)


RESERVED = frozenset(SCD2_COLUMNS) | {POSITION, DELETED_FLAG}


BATCH_ID_PROPERTY = "icelake.batch-id"


BATCH_AS_OF_PROPERTY = "icelake.batch-as-of"


def q(name: str) -> str:
    """A quoted Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def qtable(table: str) -> str:
    return ".".join(q(p) for p in table.split("."))


def ts_literal(when: datetime) -> str:
    """An exact timestamp literal, independent of the session time zone."""
    if when.tzinfo is None:
        raise ValueError(f"{when!r} has no time zone; pass an aware UTC datetime")
    delta = when.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return f"TIMESTAMP_MICROS({micros})"


def ts_constant(when: datetime) -> str:
    """A constant timestamp literal (procedure arguments accept no function calls)."""
    return f"TIMESTAMP '{when.astimezone(UTC):%Y-%m-%d %H:%M:%S.%f}+00:00'"


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
