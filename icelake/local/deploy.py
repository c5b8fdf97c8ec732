"""Create in the embedded AWS what the CDK app creates in AWS, from the same constants and ASL file:
the ledger table, the artifacts bucket, the step Lambdas, the Glue job and the state machine."""

from __future__ import annotations

from dataclasses import dataclass

import boto3

from icelake.aws.ledger import create_ledger_table
from icelake.constants import (
    ARTIFACTS_BUCKET,
    GLUE_MIGRATE_JOB,
    GLUE_MIGRATE_SCRIPT,
    GLUE_MIGRATE_TIMEOUT_MINUTES,
    LEDGER_TABLE,
    MIGRATE_ASL,
    MIGRATE_STATE_MACHINE,
    ORCHESTRATOR_ACCOUNT_LOCAL,
)
from icelake.local.embedded import create_glue_job, create_state_machine, create_step_lambdas
from icelake.workflow.wiring import migrate_lambda_environment, migrate_substitutions


@dataclass(frozen=True)
class LocalDeployment:
    state_machine_arn: str
    ledger_table: str
    artifacts_bucket: str


def deploy_migration_workflow() -> LocalDeployment:
    """Call inside `start_embedded_aws()`; idempotent resources are not required (fresh state)."""
    artifacts = ARTIFACTS_BUCKET.format(account=ORCHESTRATOR_ACCOUNT_LOCAL)
    boto3.client("s3").create_bucket(Bucket=artifacts)
    create_ledger_table(boto3.client("dynamodb"), LEDGER_TABLE)
    function_arns = create_step_lambdas(migrate_lambda_environment(LEDGER_TABLE, artifacts, embedded=True))
    # As the CDK stack deploys it: tables beyond the job's slots queue for one (JobRunQueuingEnabled)
    create_glue_job(
        GLUE_MIGRATE_JOB, GLUE_MIGRATE_SCRIPT, run_queuing=True, timeout_minutes=GLUE_MIGRATE_TIMEOUT_MINUTES
    )
    substitutions = migrate_substitutions(function_arns, artifacts)
    arn = create_state_machine(MIGRATE_ASL, substitutions, MIGRATE_STATE_MACHINE)
    return LocalDeployment(state_machine_arn=arn, ledger_table=LEDGER_TABLE, artifacts_bucket=artifacts)
