"""Table maintenance with Iceberg's Spark procedures: compaction (data files with deletes applied,
position-delete files), snapshot expiry, manifest rewrite, orphan-file removal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from icelake.ingest.models import MaintenanceConfig
from icelake.ingest.scd2.names import q, sql_string, ts_constant

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def compact(spark: SparkSession, table: str, config: MaintenanceConfig) -> dict[str, int]:
    """rewrite_data_files (files with at least `delete_file_threshold` delete files are rewritten with
    the deletes applied, small files packed towards the target size), then
    rewrite_position_delete_files (what deletes are left, and dangling ones, compacted away)."""
    if config.delete_file_threshold == 0:
        return {}
    catalog, database, name = table.split(".")
    ident = sql_string(f"{database}.{name}")
    options = {
        "delete-file-threshold": str(config.delete_file_threshold),
        "target-file-size-bytes": str(config.target_file_size_bytes),
        "min-input-files": str(config.min_input_files),
        "remove-dangling-deletes": "true",
    }
    opts = ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in options.items())
    data = spark.sql(
        f"CALL {q(catalog)}.system.rewrite_data_files(table => {ident}, options => map({opts}))"
    ).collect()[0]
    deletes = spark.sql(
        f"CALL {q(catalog)}.system.rewrite_position_delete_files(table => {ident}, "
        "options => map('rewrite-all', 'true'))"
    ).collect()[0]
    return {
        "rewritten_data_files": int(data["rewritten_data_files_count"]),
        "added_data_files": int(data["added_data_files_count"]),
        "removed_delete_files": int(data.asDict().get("removed_delete_files_count") or 0),
        "rewritten_delete_files": int(deletes["rewritten_delete_files_count"]),
        "added_delete_files": int(deletes["added_delete_files_count"]),
    }


def maintain(
    spark: SparkSession, table: str, config: MaintenanceConfig, now: datetime | None = None
) -> dict[str, Any]:
    """Compact (data files with deletes, position-delete files), expire old snapshots, rewrite
    manifests, remove orphan files (Iceberg's Spark procedures)."""
    now = now or datetime.now(UTC)
    catalog, database, name = table.split(".")
    ident = sql_string(f"{database}.{name}")
    compacted = compact(spark, table, config)
    expire_before = ts_constant(now - timedelta(days=config.expire_older_than_days))
    orphan_before = ts_constant(now - timedelta(hours=config.orphan_older_than_hours))
    expired = spark.sql(
        f"CALL {q(catalog)}.system.expire_snapshots(table => {ident}, older_than => {expire_before}, "
        f"retain_last => {config.retain_last})"
    ).collect()[0]
    rewritten = spark.sql(f"CALL {q(catalog)}.system.rewrite_manifests(table => {ident})").collect()[0]
    orphans = spark.sql(
        f"CALL {q(catalog)}.system.remove_orphan_files(table => {ident}, older_than => {orphan_before})"
    ).collect()
    return {
        **compacted,
        "expired_data_files": int(expired["deleted_data_files_count"]),
        "expired_manifest_lists": int(expired["deleted_manifest_lists_count"]),
        "rewritten_manifests": int(rewritten["rewritten_manifests_count"]),
        "added_manifests": int(rewritten["added_manifests_count"]),
        "orphan_files_removed": [str(r["orphan_file_location"]) for r in orphans],
    }
