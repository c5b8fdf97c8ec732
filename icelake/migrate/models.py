"""Models that cross a boundary: the result of a migration, as printed by `--json`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class PrefixMapping(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    target: str
    files: int = 0  # files of the table under this prefix


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
