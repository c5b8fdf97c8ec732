"""Orchestrator account, ingestion workflow: per configured API source an EventBridge schedule that
starts the `icelake-ingest-source` state machine (fetch Lambda -> SCD2 merge Glue job -> complete
Lambda -> maintenance), the raw landing bucket, the warehouse of the SCD2 tables, one least-privilege
role per function and for the job, and an alarm on failed executions. The buckets are in
cdk/ingest_store.py, the merge job in cdk/ingest_merge.py."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from cdk_nag import NagSuppressions
from constructs import Construct

from cdk.buckets import AccessLogBucket
from cdk.common import (
    AslStateMachine,
    LambdaLayers,
    NotificationTopic,
    PythonFunction,
    ServiceKey,
    list_prefix_statement,
    sns_alarm,
)
from cdk.component import Component, IcelakeStack, arn_of
from cdk.config import INGEST_COMPLETE_ROLE_NAME, INGEST_FETCH_ROLE_NAME, Settings
from cdk.ingest_merge import MergeGlueJob
from cdk.ingest_store import MARKERS, QUARANTINE_PREFIX, RAW_PREFIX, STATE_PREFIX, Landing, Warehouse
from icelake.constants import INGEST_ASL, INGEST_STATE_MACHINE
from icelake.ingest.landing import REASON
from icelake.ingest.resources import (
    COMPLETE_FUNCTION,
    ENV_RAW_ROOT,
    FETCH_FUNCTION,
    FETCH_HANDLER,
    MERGE_JOB,
    ingest_substitutions,
)

# Function -> (memory MB, timeout): fetch pages through an API (up to Lambda's limit); complete is small.
FUNCTION_SIZES = {"Fetch": (512, Duration.minutes(15)), "Complete": (256, Duration.minutes(5))}


class IngestFunction(Component):
    """A handler of lambdas/fetch with a role of its own (granted by the caller) and logs encrypted
    with the ingest key. With the id `Fetch`: `FetchRole`, `FetchFunction`, `FetchLogs`."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        name: str,
        handler: str,
        role_name: str,
        what: str,
        layers: list[lambda_.ILayerVersion],
        raw: s3.IBucket,
        key: kms.IKey,
    ) -> None:
        super().__init__(scope, cid)
        self.role = iam.Role(
            self,
            f"{cid}Role",
            role_name=role_name,
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"icelake ingest Lambda that {what}",
        )
        memory, timeout = FUNCTION_SIZES[cid]
        function = PythonFunction(
            self,
            cid,
            name=name,
            handler_path=FETCH_HANDLER,
            handler=handler,
            layers=layers,
            environment={
                ENV_RAW_ROOT: f"s3://{raw.bucket_name}",
                "POWERTOOLS_SERVICE_NAME": "icelake-ingest",
                "POWERTOOLS_METRICS_NAMESPACE": "icelake",
                "POWERTOOLS_LOG_LEVEL": "INFO",
                "AWS_RETRY_MODE": "standard",
            },
            role=self.role,
            memory=memory,
            timeout=timeout,
            log_key=key,
        )
        self.function = function.function
        self.log_group = function.log_group


def fetch_statements(settings: Settings, landing: Landing, log_group_arn: str) -> list[iam.PolicyStatement]:
    """Fetch lands batches under raw/, reads its endpoint's watermark, and may read only the
    configured API secrets."""
    s = settings
    region = Stack.of(landing).region
    statements = [
        _log_streams(log_group_arn),
        iam.PolicyStatement(
            sid="RawObjects",
            actions=["s3:GetObject", "s3:PutObject"],
            resources=[landing.bucket.arn_for_objects(f"{RAW_PREFIX}/*")],
        ),
        landing.state_statement(["s3:GetObject"]),  # the watermark
        landing.list_statement(),
        landing.key_statement(["kms:Decrypt", "kms:GenerateDataKey"]),
    ]
    via_secrets = {"StringEquals": {"kms:ViaService": f"secretsmanager.{region}.amazonaws.com"}}
    statements += _if_any("Secrets", ["secretsmanager:GetSecretValue"], s.ingest_secret_arns)
    statements += _if_any("SecretsKey", ["kms:Decrypt"], s.ingest_secret_kms_key_arns, via_secrets)
    return statements


def _if_any(
    sid: str, actions: list[str], resources: Sequence[str], conditions: dict[str, Any] | None = None
) -> list[iam.PolicyStatement]:
    """The statement on `resources`, or none when the settings name none (an optional grant)."""
    if not resources:
        return []
    return [iam.PolicyStatement(sid=sid, actions=actions, resources=list(resources), conditions=conditions)]


def complete_statements(landing: Landing, log_group_arn: str) -> list[iam.PolicyStatement]:
    """Complete reads a batch's manifest (.pending), marks it complete, tells a quarantined batch
    by its reason, and advances the endpoint's watermark in its state file."""
    raw = landing.bucket
    return [
        _log_streams(log_group_arn),
        iam.PolicyStatement(
            sid="RawMarkers",
            actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
            resources=[raw.arn_for_objects(f"{RAW_PREFIX}/*/{m}") for m in MARKERS],
        ),
        iam.PolicyStatement(
            sid="QuarantineReasons",
            actions=["s3:GetObject"],
            resources=[raw.arn_for_objects(f"{QUARANTINE_PREFIX}/*/{REASON}")],
        ),
        landing.state_statement(["s3:GetObject", "s3:PutObject"]),
        # Without ListBucket a missing marker reads as 403, not as absent.
        list_prefix_statement("RawList", raw.bucket_arn, RAW_PREFIX, STATE_PREFIX, QUARANTINE_PREFIX),
        landing.key_statement(["kms:Decrypt", "kms:GenerateDataKey"]),
    ]


class IngestStack(IcelakeStack):
    def __init__(self, scope: Construct, cid: str, *, settings: Settings, build_dir: Path, **kw: object):
        super().__init__(scope, cid, **kw)  # type: ignore[arg-type]
        settings.check_ingest()
        s = settings
        # The ingest key: raw bucket, logs, notifications, the Glue job's logs and bookmarks.
        key = ServiceKey(
            self,
            "Key",
            alias="alias/icelake-ingest",
            description="icelake ingest: raw landing bucket, logs, notifications, Glue logs and bookmarks",
            logs_sid="Ingest logs in CloudWatch Logs",
            log_groups=[
                "/aws-glue/*",
                f"/aws/lambda/{FETCH_FUNCTION}",
                f"/aws/lambda/{COMPLETE_FUNCTION}",
                f"/aws/vendedlogs/states/{INGEST_STATE_MACHINE}",
            ],
        ).key
        access_logs = AccessLogBucket(self, "AccessLogs").bucket
        landing = Landing(self, "Landing", settings=s, key=key, access_logs=access_logs)
        warehouse = Warehouse(self, "Warehouse", settings=s, access_logs=access_logs)

        # Fetch and complete, each with its own role; both with the layers, the raw bucket and the key.
        function = partial(
            IngestFunction,
            self,
            layers=LambdaLayers(self, "Layer", settings=s, build_dir=build_dir).layers,
            raw=landing.bucket,
            key=key,
        )
        fetch = function(
            "Fetch",
            name=FETCH_FUNCTION,
            handler="handler.handler",
            role_name=INGEST_FETCH_ROLE_NAME,
            what="fetches the APIs into raw/",
        )
        complete = function(
            "Complete",
            name=COMPLETE_FUNCTION,
            handler="handler.complete_handler",
            role_name=INGEST_COMPLETE_ROLE_NAME,
            what="marks merged raw batches complete",
        )
        fetch_policy = iam.Policy(
            self,
            "FetchPolicy",
            roles=[fetch.role],
            statements=fetch_statements(s, landing, fetch.log_group.log_group_arn),
        )
        complete_policy = iam.Policy(
            self,
            "CompletePolicy",
            roles=[complete.role],
            statements=complete_statements(landing, complete.log_group.log_group_arn),
        )
        job = MergeGlueJob(
            self, "MergeJob", settings=s, build_dir=build_dir, landing=landing, warehouse=warehouse
        )

        self.substitutions = ingest_substitutions(
            fetch.function.function_arn, complete.function.function_arn, MERGE_JOB, s.ingest_maintenance
        )
        # logs_id: the log group's id before components; a new one would replace the deployed group.
        workflow = AslStateMachine(
            self,
            "IngestSource",
            name=INGEST_STATE_MACHINE,
            asl=INGEST_ASL,
            substitutions=self.substitutions,
            log_key=key,
            logs_id="StateMachineLogs",
        )
        workflow.allow_steps([fetch.function, complete.function], job.arn)
        self.state_machine = workflow.state_machine

        # One schedule per source.
        for src in s.ingest_sources:
            events.Rule(
                self,
                f"Schedule-{src.name}",
                rule_name=f"icelake-ingest-{src.name}",
                description=f"Ingests {src.fetch.source}/{src.fetch.endpoint} into {src.table.table}",
                schedule=events.Schedule.expression(src.schedule),
                enabled=src.enabled,
                targets=[
                    targets.SfnStateMachine(
                        workflow.state_machine,
                        input=events.RuleTargetInput.from_object(src.execution_input),
                        retry_attempts=2,
                    )
                ],
            )

        topic = NotificationTopic(
            self, "Notifications", name="icelake-ingest-notifications", key=key, emails=s.notification_emails
        ).topic
        sns_alarm(
            self,
            "ExecutionsFailedAlarm",
            name="icelake-ingest-executions-failed",
            metric=workflow.failed_executions(Duration.minutes(5)),
            description="An ingestion execution failed, timed out or was aborted: its batches stay pending "
            "and the next run merges them; open it in the Step Functions console.",
            topic=topic,
        )
        _suppress_findings([fetch, complete], [fetch_policy, complete_policy], landing, workflow)


def _suppress_findings(
    functions: list[IngestFunction], policies: list[iam.Policy], landing: Landing, workflow: AslStateMachine
) -> None:
    raw = arn_of(landing.bucket)
    lambda_reason = (
        "Batches are written under per-run keys (raw/<source>/<endpoint>/<run>/...), each endpoint "
        "keeps its state in state/<source>/<endpoint>.json, quarantined batches are told by "
        "quarantine/<source>/<endpoint>/<run>/reason.json, log streams are created per invocation, "
        "and X-Ray has no resource-level permissions."
    )
    NagSuppressions.add_resource_suppressions(
        [*(f.role for f in functions), *policies],
        [
            {
                "id": "AwsSolutions-IAM5",
                "reason": lambda_reason,
                "appliesTo": [
                    f"Resource::{raw}/{RAW_PREFIX}/*",
                    *(f"Resource::{raw}/{RAW_PREFIX}/*/{marker}" for marker in MARKERS),
                    f"Resource::{raw}/{STATE_PREFIX}/*",
                    f"Resource::{raw}/{QUARANTINE_PREFIX}/*/{REASON}",
                    *(f"Resource::{arn_of(f.log_group)}:*" for f in functions),
                    "Resource::*",
                ],
            }
        ],
        apply_to_children=True,
    )
    NagSuppressions.add_resource_suppressions(
        workflow.state_machine,
        [
            {
                "id": "AwsSolutions-IAM5",
                "reason": "Log delivery and X-Ray actions have no resource-level permissions; the role "
                "otherwise only invokes the two ingest functions and runs the one merge job.",
                "appliesTo": ["Resource::*"],
            }
        ],
        apply_to_children=True,
    )


def _log_streams(log_group_arn: str) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        sid="Logs", actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[f"{log_group_arn}:*"]
    )
