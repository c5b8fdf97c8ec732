"""Every error icelake raises on purpose. Messages say what was wrong and what to do."""

from __future__ import annotations

import time


class IcelakeError(Exception):
    """Base class: a failure the user can act on (shown as a one-line reason by the CLI)."""


class PortInUseError(IcelakeError):
    def __init__(self, port: int) -> None:
        super().__init__(
            f"port {port} on 127.0.0.1 is in use (another embedded AWS, or another server); stop it, "
            "or pass another port (--port 0: one the system picks)"
        )


class NotAMetadataFileError(IcelakeError):
    def __init__(self, uri: str, why: str) -> None:
        super().__init__(
            f"{uri} is not an Iceberg table metadata file ({why}); pass the table's current "
            "*.metadata.json, e.g. the Glue table parameter 'metadata_location'"
        )


class MissingSourceFilesError(IcelakeError):
    """Live files the source metadata names that are gone, or whose size is not the recorded one."""

    def __init__(self, missing: list[str], wrong_size: list[str] | None = None) -> None:
        wrong_size = wrong_size or []
        parts = []
        if missing:
            parts.append(f"{len(missing)} file(s) that do not exist: {_shown(missing)}")
        if wrong_size:
            parts.append(
                f"{len(wrong_size)} file(s) whose size differs from the metadata: {_shown(wrong_size)}"
            )
        super().__init__(
            f"the source table references {'; and '.join(parts)}; the source table is damaged or being "
            "rewritten concurrently: retry when its writers are done, or repair it; nothing was written"
        )
        self.missing = missing
        self.wrong_size = wrong_size


def _shown(items: list[str], limit: int = 20) -> str:
    return ", ".join(items[:limit]) + (f" ... and {len(items) - limit} more" if len(items) > limit else "")


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


class TargetLockedError(IcelakeError):
    """Another migration is writing into the same target location."""

    def __init__(self, lock_uri: str, holder: dict[str, object]) -> None:
        since = holder.get("since")
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since)) if isinstance(since, int) else "?"
        super().__init__(
            f"another icelake run is writing into this target: table {holder.get('source')} since {when} "
            f"(pid {holder.get('pid')} on {holder.get('host')}); wait for it to end, choose another "
            f"target location, or delete {lock_uri} if that run is dead"
        )
        self.holder = holder


class DamagedSourceFileError(IcelakeError):
    """A source file icelake must read (not just copy) cannot be parsed."""

    def __init__(self, uri: str, what: str, *, before_writing: bool) -> None:
        written = (
            "nothing was written"
            if before_writing
            else "no metadata was written, so the target table is not visible"
        )
        super().__init__(
            f"the source file {uri} is damaged ({what}); {written}; readers of the source fail on it "
            "too: restore the file or repair the table at the source (e.g. rewrite_position_delete_files), "
            "then retry"
        )
        self.uri = uri


class ConcurrentCatalogChangeError(IcelakeError):
    """The target table moved on while we worked: never overwrite, report."""


class TargetNotOursError(IcelakeError):
    """A target table that icelake did not create for this source."""


class CopyVerificationError(IcelakeError):
    """A copy whose size or checksum is not the source's."""


class InvalidRequestError(IcelakeError):
    """The request cannot be run as given (fails the execution before any copy). The state
    machine catches it by this class name."""


class PriceTableError(IcelakeError):
    """A price table that is missing, unreadable or not for the region an estimate prices."""


class CarryRefusedError(IcelakeError):
    """A stranded commit that a carry-over does not bring (not an append, or what it needs of the
    target is gone): the table's outcome names it, and nothing is written."""


class DataFilterRefusedError(IcelakeError):
    """A source data cells filter cannot be carried to the target (it names a column the target
    does not have, or a filter of its name with another definition is there): the table is refused
    before anyone is granted anything on it."""


class ValidationFailedError(IcelakeError):
    """The target does not read like the source: the table is rolled back."""


class UnreadableTaskError(IcelakeError):
    """The `rows` tier cannot read a scan task: equality deletes, deletion vectors, or a data file
    that is not Parquet."""


class SessionDurationError(IcelakeError, ValueError):
    """A session duration STS would refuse (ValueError too, so pydantic validators report it)."""


class NotPatchable(Exception):
    """The file (or one of its records) is not one the byte-level rewrite reproduces exactly: a
    signal to fall back to the full rewrite, never shown to a user."""


# --- Ingestion ---------------------------------------------------------------------------------


class IngestError(IcelakeError):
    """Base class of every ingestion failure."""


class SecretLookupError(IngestError):
    def __init__(self, secret_id: str, why: str) -> None:
        super().__init__(
            f"cannot read the API credential from Secrets Manager secret {secret_id!r}: {why}; "
            "check the secret name, its JSON key and the function's secretsmanager:GetSecretValue permission"
        )
        self.secret_id = secret_id


class HTTPStatusError(IngestError):
    """The API answered with a status that retrying cannot fix (4xx other than 429)."""

    def __init__(self, url: str, status: int, body_excerpt: str) -> None:
        super().__init__(
            f"GET {url} returned HTTP {status} ({body_excerpt!r}); this is not retried: "
            "check the URL, parameters and credentials of the source"
        )
        self.url = url
        self.status = status


class RetriesExhaustedError(IngestError):
    """429/5xx/timeouts/connection failures persisted through every attempt."""

    def __init__(self, url: str, attempts: int, last_failure: str, last_status: int | None) -> None:
        super().__init__(
            f"GET {url} failed {attempts} time(s), last: {last_failure}; nothing was marked pending, "
            "the next scheduled run fetches again (raise retry.max_attempts or the timeouts if this persists)"
        )
        self.url = url
        self.attempts = attempts
        self.last_status = last_status


class InvalidResponseError(IngestError):
    def __init__(self, url: str, why: str) -> None:
        super().__init__(f"the response of GET {url} cannot be used: {why}; check records_path and the API")
        self.url = url


class PaginationError(IngestError):
    """Pagination that would never end or would silently produce a partial batch."""


class InvalidBatchError(IngestError):
    """A landed batch that cannot be merged (missing pages, bad records, NULL keys, ...)."""


class EmptyFullLoadError(InvalidBatchError):
    def __init__(self, batch_id: str) -> None:
        super().__init__(
            f"full-load batch {batch_id} has no records; merging it would close every current row as "
            "deleted. Refusing: an empty response is far more often an API fault than a real deletion of "
            "everything; check the API, or set allow_empty_full_load: true in the table's Scd2Spec"
        )
        self.batch_id = batch_id


class OutOfOrderBatchError(IngestError):
    def __init__(self, batch_id: str, as_of: str, high_water: str) -> None:
        super().__init__(
            f"batch {batch_id} (as of {as_of}) is not newer than the table's last merged batch "
            f"({high_water}) and is not recorded in any live snapshot: it was either merged before and its "
            "snapshot has since expired (mark it .complete), or it was landed out of order (re-land it)"
        )
        self.batch_id = batch_id


class SchemaMismatchError(InvalidBatchError):
    """Batch values that cannot be stored in the table's column types."""


class TypeConflictError(SchemaMismatchError):
    """A value its column's type cannot hold exactly (never truncated, rounded or NULLed)."""

    def __init__(self, column: str, value: str, type_name: str, why: str) -> None:
        super().__init__(
            f"column {column!r} is {type_name}, but the batch has the value {value} ({why}); "
            "nothing was merged: fix the source, or declare a type that holds it in Scd2Spec.types"
        )
        self.column = column
        self.value = value
        self.type_name = type_name


# --- The laptop harness (icelake/local, not deployed) -----------------------------------------


class ScriptResolutionError(LookupError):
    """No repo script is known for a Glue job."""


class HandlerResolutionError(LookupError):
    """No repo file is known for a Lambda function."""


class RetryableFetchError(Exception):
    """An ingestion fetch attempt that may be retried (internal to the fetch's retry policy): what
    failed, its HTTP status (None: no response) and the server's Retry-After in seconds, capped by
    the policy."""

    def __init__(self, failure: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(failure)
        self.failure, self.status, self.retry_after = failure, status, retry_after


class NotRepairable(IcelakeError):
    """Why one damaged file cannot be written again from the source (icelake.migrate.check.repair):
    said in the table's outcome with the snapshots that need the file, never raised out of it."""


class NoBase(IcelakeError):
    """Why a sync cannot start from the last synced version (icelake.migrate.plan.since): the
    plan is then full, and its outcome says this."""


class NotCarried(IcelakeError):
    """A view or resource link that cannot be carried (icelake.objects.plan), with why and what to do."""


class UnreadableSql(IcelakeError, ValueError):
    """A view's SQL the parser cannot read (icelake.objects.sql): the view is named with this
    message, never guessed at."""
