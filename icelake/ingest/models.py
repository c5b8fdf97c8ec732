"""Frozen models for everything that crosses a boundary of the ingestion workflow."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from icelake.ingest.types import parse_type

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Pagination(_Frozen):
    """How to walk the API. `page`: numbered pages; `cursor`: a token from each response."""

    kind: Literal["none", "page", "cursor"] = "none"
    page_param: str = "page"
    start_page: int = 1
    size_param: str | None = None
    page_size: int | None = Field(default=None, ge=1)
    cursor_param: str = "cursor"
    cursor_path: str = "next_cursor"  # dotted path to the next cursor in the response JSON
    max_pages: int = Field(default=10_000, ge=1)


class RetryPolicy(_Frozen):
    max_attempts: int = Field(default=5, ge=1)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    max_retry_after_s: float = Field(default=120.0, ge=0)  # longer Retry-After values are capped
    retry_statuses: tuple[int, ...] = (429, 500, 502, 503, 504)
    jitter: bool = True


class AuthConfig(_Frozen):
    """An API credential kept in Secrets Manager, sent as one request header."""

    secret_id: str
    secret_key: str | None = None  # JSON key inside a SecretString holding an object
    header: str = "Authorization"
    prefix: str = ""  # e.g. "Bearer "


class Watermark(_Frozen):
    """Incremental fetch: ask the API for records changed since the newest `from_column` value
    merged (the table's order_by column, as a rule), minus `overlap` (seconds when the values are
    ISO-8601 timestamps, units when they are numbers). Overlapping records are deduplicated."""

    param: str  # the query parameter, e.g. "updated_after"
    from_column: str  # the record field whose newest merged value is the watermark
    overlap: float = Field(default=0, ge=0)
    initial: str | None = None  # the first fetch's value; None: the first fetch asks for everything


class FetchConfig(_Frozen):
    source: str
    endpoint: str
    url: str
    params: dict[str, str] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    auth: AuthConfig | None = None
    records_path: str = "data"  # dotted path to the record list; "" when the body is the list
    pagination: Pagination = Pagination()
    retry: RetryPolicy = RetryPolicy()
    connect_timeout_s: float = Field(default=5.0, gt=0)
    read_timeout_s: float = Field(default=30.0, gt=0)
    full_load: bool = False  # the API returns every live record: keys absent from it were deleted
    watermark: Watermark | None = None
    # One Lambda invocation fetches for at most this long (then the state machine invokes it
    # again with a cursor, until the last page); the batch is pending only after the last page.
    invocation_budget_s: float = Field(default=600, gt=0)
    max_pages_per_invocation: int | None = Field(default=None, ge=1)

    @field_validator("source", "endpoint")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not _NAME.match(value) or ".." in value:
            raise ValueError(f"{value!r} must be letters, digits, '_', '-', '.' (it becomes an S3 key part)")
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"url {value!r} must start with http:// or https://")
        return value


class BatchManifest(_Frozen):
    """The content of a batch's `.pending` marker: what was landed and how to read it."""

    batch_id: str  # "{source}/{endpoint}/{run_id}", unique, recorded in the Iceberg snapshot summary
    source: str
    endpoint: str
    run_id: str
    fetched_at: datetime  # UTC; becomes `_valid_from` of the versions this batch creates
    pages: tuple[str, ...]  # file names inside the batch directory, in fetch order
    record_count: int
    records_path: str
    full_load: bool
    requeued_at: datetime | None = None  # set by `icelake ingest requeue` when it re-landed the batch
    since: str | None = None  # the watermark parameter value the fetch asked for
    watermark_max: str | int | float | None = None  # newest watermark.from_column value of the batch


class PendingBatch(_Frozen):
    uri: str  # the batch directory
    manifest: BatchManifest


class FetchCursor(_Frozen):
    """Where a fetch that ran out of its invocation budget goes on (the next invocation's input)."""

    run_id: str
    fetched_at: datetime
    pages: tuple[str, ...]
    record_count: int
    next_page: int | None = None  # page pagination
    next_cursor: str | None = None  # cursor pagination
    seen_cursors: tuple[str, ...] = ()
    since: str | None = None
    watermark_max: str | int | float | None = None
    invocations: int = 1


class FetchResult(_Frozen):
    batch_uri: str
    manifest: BatchManifest  # provisional (no .pending yet) while `cursor` is set
    requests: int  # HTTP requests made, retries included
    bytes: int
    cursor: FetchCursor | None = None  # set when the budget ran out before the last page


class DeleteMarker(_Frozen):
    """An API tombstone: a record whose `column` equals `value` (JSON equality) deletes its key."""

    column: str
    value: str | int | bool | float | None = True


class Scd2Spec(_Frozen):
    """One SCD2 table: identity, how to pick the latest record of a key, what counts as a change."""

    table: str  # catalog.database.table
    keys: tuple[str, ...] = Field(min_length=1)
    order_by: str | None = None  # the latest record of a key wins; NULLs are oldest; then batch order
    tracked: tuple[str, ...] | None = None  # None: every non-key column that is not ignored
    ignored: tuple[str, ...] = ()
    schema_ddl: str | None = None  # e.g. "id BIGINT, name STRING"; None: inferred from the JSON
    # Declared columns' Iceberg types (long, int, double, decimal(12,2), timestamptz, ...): cast
    # strictly, a value the type cannot hold exactly quarantines the batch. Others are inferred.
    types: dict[str, str] = Field(default_factory=dict)
    promote_types: bool = False  # widen a column as Iceberg allows (int->long, float->double, decimal)
    allow_empty_full_load: bool = False  # an empty full-load batch closes every current key as deleted
    delete_marker: DeleteMarker | None = None  # API tombstones close their key and flag _is_deleted
    absent_means_null: bool = False  # a column absent from a whole batch: NULL (True) or unchanged
    comment: str = "SCD2 dimension maintained by icelake ingest"
    column_comments: dict[str, str] = Field(default_factory=dict)
    properties: dict[str, str] = Field(default_factory=dict)

    @field_validator("table")
    @classmethod
    def _three_parts(cls, value: str) -> str:
        if len(value.split(".")) != 3:
            raise ValueError(f"table {value!r} must be catalog.database.table")
        return value

    @field_validator("types")
    @classmethod
    def _iceberg_types(cls, value: dict[str, str]) -> dict[str, str]:
        return {name: str(parse_type(text)) for name, text in value.items()}

    @model_validator(mode="after")
    def _one_schema_source(self) -> Scd2Spec:
        if self.schema_ddl and self.types:
            raise ValueError("set either schema_ddl or types, not both (types is the per-column form)")
        if self.delete_marker is not None and self.delete_marker.column in self.keys:
            raise ValueError(f"delete_marker.column {self.delete_marker.column!r} cannot be a key column")
        return self


class MergeResult(_Frozen):
    batch_id: str
    table: str
    skipped: bool  # already committed earlier (idempotent re-run)
    snapshot_id: int | None = None
    inserted: int = 0  # new versions, new keys included
    new_keys: int = 0
    closed: int = 0  # current versions closed because the key changed
    deleted: int = 0  # current versions closed because a full load no longer had the key
    added_columns: tuple[str, ...] = ()
    promoted_columns: tuple[str, ...] = ()
    empty: bool = False  # no records: recorded (batch id, fetch time), nothing else changed
    quarantined_to: str | None = None  # the batch could not merge for a reason in its data
    reason: str | None = None


class MaintenanceConfig(_Frozen):
    expire_older_than_days: float = Field(default=7, ge=0)
    retain_last: int = Field(default=10, ge=1)
    orphan_older_than_hours: float = Field(default=72, ge=24)  # Iceberg refuses less than 24 h
    # Compaction (rewrite_data_files, then rewrite_position_delete_files): a data file with at
    # least `delete_file_threshold` delete files is rewritten with its deletes applied; small files
    # are packed towards `target_file_size_bytes`. 0 turns compaction off.
    delete_file_threshold: int = Field(default=1, ge=0)
    target_file_size_bytes: int = Field(default=128 * 1024 * 1024, ge=1024 * 1024)
    min_input_files: int = Field(default=5, ge=1)


class FetchOutcome(_Frozen):
    """What the fetch step hands to the workflow: the new batch and every batch still pending."""

    batch_uri: str
    batch_id: str
    record_count: int
    requests: int
    pending: tuple[str, ...]  # batch URIs to merge, oldest first, the new one included
    more: bool = False  # the fetch goes on in another invocation with `cursor`
    cursor: FetchCursor | None = None

    @property
    def pending_count(self) -> int:
        return len(self.pending)
