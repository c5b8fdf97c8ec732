"""The migration workflow's wiring, written once: the ASL placeholders and the step Lambdas'
environment, used by the CDK stack (cdk/orchestrator.py) and the embedded deployment
(icelake/local/deploy.py) alike; the settings model the Lambdas read that environment into is
`icelake.request.deps.WorkflowEnv`. Importable with neither CDK nor moto installed."""

from __future__ import annotations

from collections.abc import Mapping

from icelake.constants import (
    ENV_ARTIFACTS_BUCKET,
    ENV_EVENT_BUS,
    ENV_LEDGER_TABLE,
    GLUE_MIGRATE_JOB,
    LAMBDA_STEPS,
)

METRICS_NAMESPACE = "icelake"  # CloudWatch namespace of the step Lambdas' metrics (Powertools EMF)
MIGRATE_SERVICE = "icelake-migrate"  # their `service` dimension


def migrate_lambda_environment(ledger_table: str, artifacts_bucket: str, *, embedded: bool) -> dict[str, str]:
    """The environment of every migration step Lambda.

    `embedded` (the local runtime) turns off what has no CloudWatch to go to: EMF metric lines,
    traces and INFO logs would only flood the terminal."""
    env = {
        ENV_LEDGER_TABLE: ledger_table,
        ENV_ARTIFACTS_BUCKET: artifacts_bucket,
        ENV_EVENT_BUS: "default",
        "POWERTOOLS_SERVICE_NAME": MIGRATE_SERVICE,
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": "WARNING" if embedded else "INFO",
        "AWS_RETRY_MODE": "standard",
    }
    if embedded:
        env |= {"POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_METRICS_DISABLED": "true"}
    return env


def migrate_substitutions(function_arns: Mapping[str, str], artifacts_bucket: str) -> dict[str, str]:
    """Every placeholder of statemachines/migrate_tables.asl.json, from the step functions' ARNs
    keyed by step name (the keys of constants.LAMBDA_STEPS)."""
    missing = sorted(set(LAMBDA_STEPS) - set(function_arns))
    if missing:
        raise ValueError(f"no function ARN for the step(s) {', '.join(missing)}")
    substitutions = {placeholder: function_arns[step] for step, (_n, _h, placeholder) in LAMBDA_STEPS.items()}
    substitutions["GlueJobName"] = GLUE_MIGRATE_JOB
    substitutions["ArtifactsBucket"] = artifacts_bucket  # where the Map's ResultWriter exports outcomes
    return substitutions
