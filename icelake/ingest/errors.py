"""Errors raised by the ingestion workflow. Messages say what was wrong and what to do."""

from __future__ import annotations

from icelake.errors import IcelakeError


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
