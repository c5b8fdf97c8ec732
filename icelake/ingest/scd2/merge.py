"""One batch, one Iceberg commit: decide everything that can refuse the batch (re-delivery, order,
emptiness, keys, every value against the schema the batch would leave), then change the schema and
MERGE; a MERGE that does not commit restores the schema. `merge_pending` runs the landed batches
oldest first and quarantines the ones that cannot merge for a reason in their data."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from icelake.aws.fileio import FileIO
from icelake.errors import EmptyFullLoadError, InvalidBatchError, OutOfOrderBatchError
from icelake.ingest.landing import quarantine_batch, read_ledger, record_in_ledger
from icelake.ingest.models import MergeResult, PendingBatch, Scd2Spec
from icelake.ingest.scd2.batch import batch_frame
from icelake.ingest.scd2.log import commit_log, with_commit_properties
from icelake.ingest.scd2.names import BATCH_AS_OF_PROPERTY, BATCH_ID_PROPERTY, qtable, sql_string
from icelake.ingest.scd2.schema import (
    align_to_table,
    apply_schema_plan,
    data_columns,
    plan_schema,
    restore_table,
    table_exists,
)
from icelake.ingest.scd2.sql import changes_sql, count_changes, current_rows_sql, merge_source_sql, merge_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def merge_batch(
    spark: SparkSession,
    spec: Scd2Spec,
    batch_df: DataFrame,
    *,
    batch_id: str,
    as_of: datetime,
    full_load: bool,
    ingested_at: datetime | None = None,
    present: frozenset[str] | None = None,
    recorded: dict[str, datetime] | None = None,
) -> MergeResult:
    """Merge one batch (columns: data, `_source_file`, position, optionally the tombstone flag) in
    one Iceberg commit. `present`: the data columns some record carries (None: every column of
    `batch_df`). `recorded`: batches recorded outside the table (empty batches merged before the
    table existed), batch id -> as-of. An empty batch before the table exists returns `empty=True`
    and creates nothing: the caller records it (merge_pending writes it to the endpoint's ledger)."""

    ingested_at = ingested_at or datetime.now(UTC)
    exists = table_exists(spark, spec.table)
    commits = dict(recorded or {})
    ids, times = set(commits), list(commits.values())
    if exists:
        log = commit_log(spark, spec.table)
        ids |= log.batch_ids
        times += [log.high_water] if log.high_water is not None else []
    high_water = max(times, default=None)
    if batch_id in ids:
        return MergeResult(batch_id=batch_id, table=spec.table, skipped=True)
    if high_water is not None and as_of <= high_water:
        raise OutOfOrderBatchError(batch_id, as_of.isoformat(), high_water.isoformat())
    empty = batch_df.limit(1).count() == 0
    if empty and full_load and not spec.allow_empty_full_load:
        raise EmptyFullLoadError(batch_id)
    if empty and not exists:
        return MergeResult(batch_id=batch_id, table=spec.table, skipped=False, empty=True)
    # Evaluate: everything that can refuse the batch runs before the table is touched.
    plan = plan_schema(spark, spec, batch_df)
    aligned = align_to_table(batch_df, plan.schema, batch_id)
    seen = {c.lower() for c in (present if present is not None else batch_df.columns)}
    absent = (
        frozenset()
        if spec.absent_means_null or empty
        else frozenset(c for c in plan.schema.fieldNames() if c.lower() not in seen)
    )
    suffix = abs(hash((batch_id, spec.table))) % 10**12
    batch_view, changes_view, source_view = (f"icelake_{p}_{suffix}" for p in ("batch", "changes", "source"))
    aligned.createOrReplaceTempView(batch_view)
    # The one pass over the batch and the current rows; the MERGE below reads this cached result.
    classify = changes_sql(spec, batch_view, plan.schema, full_load, absent, current_rows_sql(spec, plan))
    changes = spark.sql(classify).cache()
    try:
        changes.createOrReplaceTempView(changes_view)
        counts = count_changes(changes, spec, batch_id)
        # Change: the schema, then the MERGE; a MERGE that does not commit restores the schema.
        before = apply_schema_plan(spark, spec, plan)
        try:
            table_schema = data_columns(spark, spec.table)
            source = merge_source_sql(spec, changes_view, table_schema, as_of=as_of, ingested_at=ingested_at)
            spark.sql(source).createOrReplaceTempView(source_view)
            statement = merge_sql(spec, source_view, table_schema)
            properties = {
                BATCH_ID_PROPERTY: batch_id,
                BATCH_AS_OF_PROPERTY: as_of.astimezone(UTC).isoformat(),
            }
            with_commit_properties(spark, properties, lambda: spark.sql(statement).collect())
        except BaseException:
            restore_table(spark, spec, plan, before)
            raise
    finally:
        changes.unpersist()
        for view in (source_view, changes_view, batch_view):
            spark.catalog.dropTempView(view)
    snapshot = spark.sql(
        f"SELECT snapshot_id FROM {qtable(spec.table)}.snapshots "
        f"WHERE summary['{BATCH_ID_PROPERTY}'] = {sql_string(batch_id)}"
    ).collect()
    new, changed = counts.get("new", 0), counts.get("changed", 0)
    return MergeResult(
        batch_id=batch_id,
        table=spec.table,
        skipped=False,
        snapshot_id=snapshot[0]["snapshot_id"] if snapshot else None,
        inserted=new + changed,
        new_keys=new,
        closed=changed,
        deleted=counts.get("deleted", 0),
        added_columns=plan.added,
        promoted_columns=plan.promoted,
        empty=empty,
    )


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
                batch_id=batch.manifest.batch_id,
                as_of=batch.manifest.fetched_at,
                full_load=batch.manifest.full_load,
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
