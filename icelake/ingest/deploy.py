"""Create in the embedded AWS what the ingestion stack creates in AWS, from the same ASL file: the raw
bucket, the API credential in Secrets Manager, the fetch and complete Lambdas (lambdas/fetch), the
SCD2 merge Glue job (glue_jobs/scd2_merge.py) and the state machine with every placeholder
substituted. Mirrors `icelake.local.deploy.deploy_migration_workflow`; call inside
`start_embedded_aws()`.

Locally the Glue job runs on the process's SparkSession: `local_warehouse` becomes the job's
`--local-warehouse` argument (a Hadoop Iceberg catalog named after the table's catalog).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import boto3

from icelake.constants import INGEST_ASL, INGEST_STATE_MACHINE, ORCHESTRATOR_ACCOUNT_LOCAL
from icelake.ingest.models import MaintenanceConfig
from icelake.ingest.resources import (
    COMPLETE_FUNCTION,
    ENV_RAW_ROOT,
    FETCH_FUNCTION,
    FETCH_HANDLER,
    MERGE_JOB,
    MERGE_SCRIPT,
    RAW_BUCKET,
    ingest_substitutions,
)
from icelake.local.embedded import create_glue_job, create_lambda, create_state_machine


@dataclass(frozen=True)
class IngestDeployment:
    state_machine_arn: str
    raw_bucket: str
    raw_root: str
    fetch_function_arn: str
    complete_function_arn: str
    merge_job: str
    substitutions: Mapping[str, str]


def deploy_ingest_workflow(
    *,
    local_warehouse: str | None = None,
    secrets: Mapping[str, str] | None = None,
    maintenance: MaintenanceConfig | None = None,
) -> IngestDeployment:
    """Deploy the ingestion workflow into the running embedded AWS (fresh state).

    `secrets`: Secrets Manager secrets to create (name -> SecretString), e.g. the API token a
    FetchConfig's `auth` refers to.
    """
    raw_bucket = RAW_BUCKET.format(account=ORCHESTRATOR_ACCOUNT_LOCAL)
    raw_root = f"s3://{raw_bucket}"
    boto3.client("s3").create_bucket(Bucket=raw_bucket)
    sm: Any = boto3.client("secretsmanager")
    for name, value in (secrets or {}).items():
        sm.create_secret(Name=name, SecretString=value)
    env = {
        ENV_RAW_ROOT: raw_root,
        "POWERTOOLS_SERVICE_NAME": "icelake-ingest",
        "POWERTOOLS_METRICS_NAMESPACE": "icelake",
        "POWERTOOLS_TRACE_DISABLED": "true",
        # No CloudWatch here: EMF metric lines and INFO logs would only flood the terminal.
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "AWS_RETRY_MODE": "standard",
    }
    fetch_arn = create_lambda(FETCH_FUNCTION, FETCH_HANDLER, "handler", env, timeout=900, memory_mb=512)
    complete_arn = create_lambda(COMPLETE_FUNCTION, FETCH_HANDLER, "complete_handler", env, timeout=300)
    default_args = {"--local-warehouse": local_warehouse} if local_warehouse else {}
    create_glue_job(MERGE_JOB, MERGE_SCRIPT, default_args, max_concurrent_runs=1)
    substitutions = ingest_substitutions(
        fetch_arn, complete_arn, MERGE_JOB, maintenance or MaintenanceConfig()
    )
    arn = create_state_machine(INGEST_ASL, substitutions, INGEST_STATE_MACHINE)
    return IngestDeployment(
        state_machine_arn=arn,
        raw_bucket=raw_bucket,
        raw_root=raw_root,
        fetch_function_arn=fetch_arn,
        complete_function_arn=complete_arn,
        merge_job=MERGE_JOB,
        substitutions=substitutions,
    )
