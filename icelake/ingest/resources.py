"""Names of the ingestion workflow's resources and the placeholders of its ASL file: one source for
the CDK stack (cdk/ingest.py) and the embedded deployment (icelake.ingest.deploy), importable with
neither CDK nor moto installed."""

from __future__ import annotations

from icelake.ingest.models import MaintenanceConfig

RAW_BUCKET = "icelake-raw-{account}"
FETCH_FUNCTION = "icelake-ingest-fetch"
COMPLETE_FUNCTION = "icelake-ingest-complete"
FETCH_HANDLER = "lambdas/fetch/handler.py"
MERGE_JOB = "icelake-scd2-merge"
MERGE_SCRIPT = "glue_jobs/scd2_merge.py"
ENV_RAW_ROOT = "RAW_ROOT"


def ingest_substitutions(
    fetch_arn: str, complete_arn: str, merge_job: str, maintenance: MaintenanceConfig
) -> dict[str, str]:
    """Every placeholder of statemachines/ingest_source.asl.json."""
    return {
        "FetchFunctionArn": fetch_arn,
        "CompleteFunctionArn": complete_arn,
        "MergeJobName": merge_job,
        "SnapshotRetentionDays": f"{maintenance.expire_older_than_days:g}",
        "SnapshotRetainLast": str(maintenance.retain_last),
        "OrphanRetentionHours": f"{maintenance.orphan_older_than_hours:g}",
        "CompactDeleteFileThreshold": str(maintenance.delete_file_threshold),
        "CompactTargetFileSizeBytes": str(maintenance.target_file_size_bytes),
    }
