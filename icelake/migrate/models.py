"""Models that cross a boundary: the result of a migration, as printed by `--json`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class PrefixMapping(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    target: str
    files: int = 0  # files of the table under this prefix


class RowsValidation(BaseModel):
    """The `rows` tier done where the copy ran (the Glue job): every snapshot's row count and row
    digest, source against target (`icelake.migrate.check.row_digest`)."""

    model_config = ConfigDict(frozen=True)

    snapshots_compared: int = 0
    files_read: int = 0  # distinct scan tasks read, both sides
    rows: int = 0  # rows of every source snapshot, summed
    problems: list[str] = []
    skipped: str | None = None  # why rows were not compared (a task it cannot read); Validate samples
    error: str | None = None  # the check itself failed (not the copy); Validate fails with this
    seconds: float = 0.0


class FilesCheck(BaseModel):
    """The target's files checked where the copy ran (the Glue job), so that Validate does not read
    every manifest of a large table again in a Lambda (`icelake.migrate.check.validate.check_target_files`:
    every file exists with its recorded size, none is under a source prefix)."""

    model_config = ConfigDict(frozen=True)

    files: int = 0  # paths checked
    problems: list[str] = []
    error: str | None = None  # the check itself failed (not the copy); Validate fails with this
    seconds: float = 0.0


class Orphans(BaseModel):
    """Files reached only from older logged metadata versions and present at the source
    (`icelake.migrate.history`): copied under `history: all`, reported either way."""

    model_config = ConfigDict(frozen=True)

    files: int = 0  # manifest lists, manifests, data, delete and statistics files
    bytes: int = 0
    manifest_lists: int = 0  # of the files


class MigrationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    source_metadata_location: str
    target_metadata_location: str
    table_uuid: str | None
    format_version: int
    dry_run: bool
    prefix_mappings: list[PrefixMapping]
    snapshots: int
    metadata_files: int  # metadata.json files carried over (current + logged ones that exist)
    files_planned: int  # every file the target table needs
    bytes_planned: int
    files_copied: int
    files_verified: int = 0  # copies whose bytes S3 checksummed equal to the source's recorded checksum
    bytes_copied: int
    files_rewritten: int
    files_skipped: int  # already at the target and identical
    elapsed_seconds: float
    rows_validation: RowsValidation | None = None  # when the Glue job compared the rows itself
    files_check: FilesCheck | None = None  # when the Glue job checked the target's files itself
    history: Literal["live", "all"] = "live"  # what the target keeps (icelake.migrate.history)
    orphans: Orphans = Orphans()
    # S3 requests by kind (icelake.aws.request_count) the copy's clients sent, where they were
    # counted (the workflow's Copy Lambda; not yet the Glue job's executors)
    requests: dict[str, int] | None = None
    # What the plan covered: the whole table, or what the source committed since the last sync
    # (icelake.migrate.plan.incremental); and why.
    sync: Literal["full", "incremental"] = "full"
    sync_reason: str = ""
