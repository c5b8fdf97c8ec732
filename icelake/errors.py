"""Every error icelake raises on purpose. Messages say what was wrong and what to do."""

from __future__ import annotations


class IcelakeError(Exception):
    """Base class: a failure the user can act on (shown as a one-line reason by the CLI)."""


class NotAMetadataFileError(IcelakeError):
    def __init__(self, uri: str, why: str) -> None:
        super().__init__(
            f"{uri} is not an Iceberg table metadata file ({why}); pass the table's current "
            "*.metadata.json, e.g. the Glue table parameter 'metadata_location'"
        )


class MissingSourceFilesError(IcelakeError):
    def __init__(self, missing: list[str]) -> None:
        shown = ", ".join(missing[:20]) + (f" ... and {len(missing) - 20} more" if len(missing) > 20 else "")
        super().__init__(
            f"the source table references {len(missing)} file(s) that do not exist: {shown}; "
            "the source table is damaged or being cleaned up concurrently; nothing was written"
        )
        self.missing = missing


class UnmappedPrefixesError(IcelakeError):
    def __init__(self, prefixes: dict[str, int]) -> None:
        listed = ", ".join(f"{p} ({n} file(s))" for p, n in sorted(prefixes.items()))
        super().__init__(
            f"files outside the table location have no target: {listed}; add --map SRC=DST for each"
        )
        self.prefixes = prefixes


class TargetConflictError(IcelakeError):
    def __init__(self, conflicts: list[str]) -> None:
        shown = ", ".join(conflicts[:10]) + (
            f" ... and {len(conflicts) - 10} more" if len(conflicts) > 10 else ""
        )
        super().__init__(
            f"{len(conflicts)} target file(s) already exist with different content: {shown}; "
            "nothing was overwritten; re-run with --overwrite if the target copies may be replaced"
        )
        self.conflicts = conflicts


class TargetHoldsOtherTableError(IcelakeError):
    def __init__(self, target: str, found_uuid: str, source_uuid: str) -> None:
        super().__init__(
            f"the target {target} already holds a different Iceberg table (uuid {found_uuid}, "
            f"source is {source_uuid}); choose an empty target location or remove that table first"
        )


class UnsafeTargetError(IcelakeError):
    """A write would land under a source prefix, or the mapping is ambiguous."""


class InvalidMappingError(IcelakeError):
    """A --map argument that cannot be used."""


class UnsupportedFileError(IcelakeError):
    """A file whose format icelake cannot rewrite safely."""
