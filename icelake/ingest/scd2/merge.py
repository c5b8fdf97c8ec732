"""One batch, one Iceberg commit: decide everything that can refuse the batch (re-delivery, order,
emptiness, keys, every value against the schema the batch would leave), then change the schema and
MERGE; a MERGE that does not commit restores the schema. `merge_pending` runs the landed batches
oldest first and quarantines the ones that cannot merge for a reason in their data."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from icelake.aws.fileio import FileIO
from icelake.errors import EmptyFullLoadError, InvalidBatchError, OutOfOrderBatchError
from icelake.ingest.landing import quarantine_batch, read_ledger, record_in_ledger
from icelake.ingest.models import BatchManifest, MergeResult, PendingBatch, Scd2Spec
from icelake.ingest.scd2.batch import batch_frame
from icelake.ingest.scd2.log import commit_log, with_commit_properties
from icelake.ingest.scd2.names import BATCH_AS_OF_PROPERTY, BATCH_ID_PROPERTY, qtable, sql_string
from icelake.ingest.scd2.schema import (
    SchemaPlan,
    align_to_table,
    apply_schema_plan,
    data_columns,
    iceberg_table,
    plan_schema,
    restore_table,
    table_exists,
)
from icelake.ingest.scd2.sql import (
    ChangeCounts,
    changes_sql,
    count_changes,
    current_rows_sql,
    merge_source_sql,
    merge_sql,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class BatchInfo:
    """What the merge needs to know of a batch besides its rows: its id and its as-of time (the
    fetch time: both go into the commit's snapshot summary, the time is the new versions'
    `_valid_from`), and whether it is a full load (the keys it lacks are closed as deleted)."""

    batch_id: str
    as_of: datetime
    full_load: bool

    @classmethod
    def of(cls, manifest: BatchManifest) -> BatchInfo:
        """What a landed batch's manifest says."""
        return cls(batch_id=manifest.batch_id, as_of=manifest.fetched_at, full_load=manifest.full_load)


@dataclass(frozen=True)
class _Views:
    """The temporary views one merge registers (and drops), named for its batch and table."""

    batch: str
    changes: str
    source: str

    @classmethod
    def of(cls, batch_id: str, table: str) -> _Views:
        """The names: one suffix from the batch id and the table, so merges of others never collide."""
        suffix = abs(hash((batch_id, table))) % 10**12
        return cls(*(f"icelake_{p}_{suffix}" for p in ("batch", "changes", "source")))


def _already_merged(
    spark: SparkSession, spec: Scd2Spec, batch: BatchInfo, exists: bool, recorded: dict[str, datetime] | None
) -> bool:
    """Whether the batch was committed before (it is skipped); refuses a batch that is not newer
    than every batch the table's commit log or `recorded` holds."""
    commits = dict(recorded or {})
    ids, times = set(commits), list(commits.values())
    if exists:
        log = commit_log(spark, spec.table)
        ids |= log.batch_ids
        times += [log.high_water] if log.high_water is not None else []
    high_water = max(times, default=None)
    if batch.batch_id in ids:
        return True
    if high_water is not None and batch.as_of <= high_water:
        raise OutOfOrderBatchError(batch.batch_id, batch.as_of.isoformat(), high_water.isoformat())
    return False


def _is_empty(spec: Scd2Spec, batch_df: DataFrame, batch: BatchInfo) -> bool:
    """Whether the batch has no record; refuses an empty full load unless the spec allows it."""
    empty = batch_df.limit(1).count() == 0
    if empty and batch.full_load and not spec.allow_empty_full_load:
        raise EmptyFullLoadError(batch.batch_id)
    return empty


def _absent_columns(
    spec: Scd2Spec, schema: StructType, batch_df: DataFrame, present: frozenset[str] | None, empty: bool
) -> frozenset[str]:
    """The table's columns the batch leaves unchanged because no record carries them: none when
    the spec says an absent column is NULL, or when the batch is empty."""
    seen = {c.lower() for c in (present if present is not None else batch_df.columns)}
    return (
        frozenset()
        if spec.absent_means_null or empty
        else frozenset(c for c in schema.fieldNames() if c.lower() not in seen)
    )


def _commit(
    spark: SparkSession,
    spec: Scd2Spec,
    plan: SchemaPlan,
    batch: BatchInfo,
    views: _Views,
    ingested_at: datetime,
    changes: ChangeCounts,
) -> None:
    """Change: the schema as planned, then the MERGE of the classified changes, the batch's id and
    as-of in its snapshot summary; a MERGE that does not commit restores the schema."""
    before = apply_schema_plan(spark, spec, plan)
    try:
        table_schema = data_columns(spark, spec.table)
        source = merge_source_sql(
            spec, views.changes, table_schema, as_of=batch.as_of, ingested_at=ingested_at
        )
        spark.sql(source).createOrReplaceTempView(views.source)
        statement = merge_sql(spec, views.source, table_schema, changes.closes_valid_from)
        properties = {
            BATCH_ID_PROPERTY: batch.batch_id,
            BATCH_AS_OF_PROPERTY: batch.as_of.astimezone(UTC).isoformat(),
        }
        with_commit_properties(spark, properties, lambda: spark.sql(statement).collect())
    except BaseException:
        restore_table(spark, spec, plan, before)
        raise


def _batch_snapshot(spark: SparkSession, table: str, batch_id: str) -> int | None:
    """The snapshot whose summary names the batch: the table's current one, read from its metadata
    (no query), unless another writer committed after it; then the snapshots table is searched."""
    current = iceberg_table(spark, table).currentSnapshot()
    if current is not None and current.summary().get(BATCH_ID_PROPERTY) == batch_id:
        return int(current.snapshotId())
    found = spark.sql(
        f"SELECT snapshot_id FROM {qtable(table)}.snapshots "
        f"WHERE summary['{BATCH_ID_PROPERTY}'] = {sql_string(batch_id)}"
    ).collect()
    return int(found[0]["snapshot_id"]) if found else None


def _merged(
    spark: SparkSession,
    spec: Scd2Spec,
    batch: BatchInfo,
    changes: ChangeCounts,
    plan: SchemaPlan,
    empty: bool,
) -> MergeResult:
    """The committed batch's result: its snapshot (the one whose summary names the batch), the
    versions it inserted and closed, the columns it added or widened."""
    snapshot = _batch_snapshot(spark, spec.table, batch.batch_id)
    counts = changes.counts
    new, changed = counts.get("new", 0), counts.get("changed", 0)
    return MergeResult(
        batch_id=batch.batch_id,
        table=spec.table,
        skipped=False,
        snapshot_id=snapshot,
        inserted=new + changed,
        new_keys=new,
        closed=changed,
        deleted=counts.get("deleted", 0),
        added_columns=plan.added,
        promoted_columns=plan.promoted,
        empty=empty,
    )


def merge_batch(
    spark: SparkSession,
    spec: Scd2Spec,
    batch_df: DataFrame,
    batch: BatchInfo,
    *,
    ingested_at: datetime | None = None,
    present: frozenset[str] | None = None,
    recorded: dict[str, datetime] | None = None,
) -> MergeResult:
    """Merge one batch (columns: data, `_source_file`, position, optionally the tombstone flag) in
    one Iceberg commit. `batch`: its id, as-of time and whether it is a full load. `present`: the
    data columns some record carries (None: every column of `batch_df`). `recorded`: batches
    recorded outside the table (empty batches merged before the table existed), batch id -> as-of.
    An empty batch before the table exists returns `empty=True` and creates nothing: the caller
    records it (merge_pending writes it to the endpoint's ledger)."""

    ingested_at = ingested_at or datetime.now(UTC)
    exists = table_exists(spark, spec.table)
    if _already_merged(spark, spec, batch, exists, recorded):
        return MergeResult(batch_id=batch.batch_id, table=spec.table, skipped=True)
    empty = _is_empty(spec, batch_df, batch)
    if empty and not exists:
        return MergeResult(batch_id=batch.batch_id, table=spec.table, skipped=False, empty=True)
    # Evaluate: everything that can refuse the batch runs before the table is touched.
    plan = plan_schema(spark, spec, batch_df)
    aligned = align_to_table(batch_df, plan.schema, batch.batch_id)
    absent = _absent_columns(spec, plan.schema, batch_df, present, empty)
    views = _Views.of(batch.batch_id, spec.table)
    aligned.createOrReplaceTempView(views.batch)
    # The one pass over the batch and the current rows; the MERGE below reads this cached result.
    classify = changes_sql(
        spec, views.batch, plan.schema, batch.full_load, absent, current_rows_sql(spec, plan)
    )
    changes = spark.sql(classify).cache()
    try:
        changes.createOrReplaceTempView(views.changes)
        counts = count_changes(changes, spec, batch.batch_id)
        # Change: the schema, then the MERGE; a MERGE that does not commit restores the schema.
        _commit(spark, spec, plan, batch, views, ingested_at, counts)
    finally:
        changes.unpersist()
        for view in (views.source, views.changes, views.batch):
            spark.catalog.dropTempView(view)
    return _merged(spark, spec, batch, counts, plan, empty)


def merge_pending(
    spark: SparkSession,
    spec: Scd2Spec,
    io: FileIO,
    batches: Iterable[PendingBatch],
    *,
    ingested_at: datetime | None = None,
    quarantine: bool = False,
) -> list[MergeResult]:
    """Merge landed batches oldest first, one commit each (what the Glue job runs).

    `quarantine`: a batch that cannot merge for a reason inside its data (InvalidBatchError:
    malformed JSON, a missing or NULL key, a type conflict, an empty full load) is moved to
    `quarantine/{source}/{endpoint}/{run_id}/` with a reason.json, and the later batches go on.
    Without it the error is raised. A requeued batch that is no longer newer than everything
    merged goes back to quarantine with that reason."""
    ordered = sorted(batches, key=lambda b: (b.manifest.fetched_at, b.manifest.run_id))
    results = []
    for batch in ordered:
        recorded = read_ledger(io, batch)
        try:
            frame = batch_frame(spark, io, batch, spec)
            result = merge_batch(
                spark,
                spec,
                frame.df,
                BatchInfo.of(batch.manifest),
                ingested_at=ingested_at,
                present=frame.present,
                recorded=recorded,
            )
        except (InvalidBatchError, OutOfOrderBatchError) as exc:
            requeued_late = isinstance(exc, OutOfOrderBatchError) and batch.manifest.requeued_at is not None
            if not quarantine or not (isinstance(exc, InvalidBatchError) or requeued_late):
                raise
            where = quarantine_batch(io, batch, exc, keys=spec.keys)
            result = MergeResult(
                batch_id=batch.manifest.batch_id,
                table=spec.table,
                skipped=False,
                quarantined_to=where,
                reason=str(exc),
            )
        if result.empty and not result.skipped:
            record_in_ledger(io, batch)
        results.append(result)
    return results
