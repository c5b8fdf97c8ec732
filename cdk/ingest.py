"""Orchestrator account, ingestion workflow: per configured API source an EventBridge schedule that
starts the `icelake-ingest-source` state machine (fetch Lambda -> SCD2 merge Glue job -> complete
Lambda -> maintenance), the raw landing bucket, the warehouse of the SCD2 tables, one least-privilege
role per function and for the job, and an alarm on failed executions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from cdk_nag import NagSuppressions
from constructs import Construct

from cdk.buckets import AccessLogBucket
from cdk.common import (
    AslStateMachine,
    GlueDatabases,
    GlueSecurity,
    GlueSparkJob,
    LambdaLayers,
    NotificationTopic,
    PythonFunction,
    ServiceKey,
    glue_catalog_arns,
    glue_log_statements,
    list_prefix_statement,
    sns_alarm,
)
from cdk.component import Component, IcelakeStack, arn_of
from cdk.config import (
    INGEST_COMPLETE_ROLE_NAME,
    INGEST_FETCH_ROLE_NAME,
    INGEST_GLUE_ROLE_NAME,
    BucketPrefix,
    Settings,
)
from icelake.constants import INGEST_ASL, INGEST_STATE_MACHINE
from icelake.ingest.landing import REASON
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

RAW_PREFIX = "raw"  # icelake.ingest.landing: raw/{source}/{endpoint}/{run_id}/
STATE_PREFIX = "state"  # state/{source}/{endpoint}.json: watermark and empty batches (landing.state_uri)
QUARANTINE_PREFIX = "quarantine"  # quarantine/{source}/{endpoint}/{run_id}/: poison batches, reason.json
MARKERS = (".pending", ".complete")
DEFAULT_CATALOG = "glue_catalog"
# The merge job reads the batches with boto3 and pydantic models; Iceberg comes with Glue.
MERGE_PIP_MODULES = ("pydantic",)
# Function -> (memory MB, timeout): fetch pages through an API (up to Lambda's limit); complete is small.
FUNCTION_SIZES = {"Fetch": (512, Duration.minutes(15)), "Complete": (256, Duration.minutes(5))}
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


def spark_catalog_conf(catalogs: list[str], warehouse: str) -> str:
    """Glue's `--conf` value: the Iceberg extensions and each catalog named by the tables' first part
    as an Iceberg catalog on the Glue Data Catalog, with S3FileIO and the warehouse location."""
    confs = [f"spark.sql.extensions={ICEBERG_EXTENSIONS}"]
    for name in catalogs:
        prefix = f"spark.sql.catalog.{name}"
        confs += [
            f"{prefix}=org.apache.iceberg.spark.SparkCatalog",
            f"{prefix}.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog",
            f"{prefix}.io-impl=org.apache.iceberg.aws.s3.S3FileIO",
            f"{prefix}.warehouse={warehouse}",
        ]
    return " --conf ".join(confs)


class Landing(Component):
    """The raw landing bucket (batches under raw/, endpoint state under state/, poison batches
    under quarantine/), encrypted with the ingest key, and the statements that grant parts of it."""

    def __init__(
        self, scope: Construct, cid: str, *, settings: Settings, key: kms.IKey, access_logs: s3.IBucket
    ) -> None:
        super().__init__(scope, cid)
        self.key = key
        self.via_s3 = via_s3(self)
        self.bucket = encrypted_bucket(
            self, "Raw", RAW_BUCKET.format(account=settings.orchestrator_account), key, access_logs
        )

    def key_statement(self, actions: list[str]) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            sid="RawKey", actions=actions, resources=[self.key.key_arn], conditions=self.via_s3
        )

    def list_statement(self) -> iam.PolicyStatement:
        """Listing raw/ and state/: a missing state file must read as absent (404), not denied."""
        return list_prefix_statement("RawList", self.bucket.bucket_arn, RAW_PREFIX, STATE_PREFIX)

    def state_statement(self, actions: list[str]) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            sid="EndpointState", actions=actions, resources=[self.bucket.arn_for_objects(f"{STATE_PREFIX}/*")]
        )


class Warehouse(Component):
    """Where the SCD2 tables live: an existing bucket (and its key, if SSE-KMS) or one made here with
    a key of its own, and the Glue databases of the tables unless they exist already."""

    def __init__(self, scope: Construct, cid: str, *, settings: Settings, access_logs: s3.IBucket) -> None:
        super().__init__(scope, cid)
        s = settings
        self.key: kms.IKey | None
        if s.ingest_warehouse_bucket:
            self.bucket: s3.IBucket = s3.Bucket.from_bucket_name(self, "Warehouse", s.ingest_warehouse_bucket)
            self.key = (
                kms.Key.from_key_arn(self, "WarehouseKey", s.ingest_warehouse_kms_key_arn)
                if s.ingest_warehouse_kms_key_arn
                else None
            )
        else:
            self.key = kms.Key(
                self,
                "WarehouseKey",
                alias="alias/icelake-ingest-warehouse",
                enable_key_rotation=True,
                description="icelake ingest: SSE-KMS of the SCD2 tables",
                removal_policy=RemovalPolicy.RETAIN,
            )
            self.bucket = encrypted_bucket(self, "Warehouse", None, self.key, access_logs)
        self.location = BucketPrefix(self.bucket.bucket_name, s.ingest_warehouse_prefix)
        prefix = self.location.prefix.strip("/")
        self.uri = f"s3://{self.bucket.bucket_name}" + (f"/{prefix}" if prefix else "")
        self.databases = s.ingest_database_names
        if s.ingest_create_databases:
            GlueDatabases(
                self,
                "Database",
                databases=self.databases,
                location=self.uri,
                description="icelake ingest: SCD2 tables",
            )

    def arn_in_findings(self) -> str:
        """The bucket's ARN as cdk-nag writes it: the logical ID of one made here, else its name."""
        if self.bucket.node.default_child is not None:
            return arn_of(self.bucket)
        return f"arn:<AWS::Partition>:s3:::{self.bucket.bucket_name}"  # an existing bucket


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
    if s.ingest_secret_arns:
        statements.append(
            iam.PolicyStatement(
                sid="Secrets",
                actions=["secretsmanager:GetSecretValue"],
                resources=list(s.ingest_secret_arns),
            )
        )
    if s.ingest_secret_kms_key_arns:
        statements.append(
            iam.PolicyStatement(
                sid="SecretsKey",
                actions=["kms:Decrypt"],
                resources=list(s.ingest_secret_kms_key_arns),
                conditions={"StringEquals": {"kms:ViaService": f"secretsmanager.{region}.amazonaws.com"}},
            )
        )
    return statements


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


class MergeGlueJob(Component):
    """The SCD2 merge (and maintenance) Glue job, one run at a time, with a role that reads raw/,
    moves poison batches to quarantine/, and writes the warehouse prefix and its tables."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        settings: Settings,
        build_dir: Path,
        landing: Landing,
        warehouse: Warehouse,
    ) -> None:
        super().__init__(scope, cid)
        s = settings
        self.role = iam.Role(
            self,
            "GlueRole",
            role_name=INGEST_GLUE_ROLE_NAME,
            assumed_by=iam.ServicePrincipal("glue.amazonaws.com"),
            description="icelake ingest Glue job: reads raw/, writes the warehouse prefix and its tables",
        )
        s3_encryption = (
            glue.CfnSecurityConfiguration.S3EncryptionProperty(
                s3_encryption_mode="SSE-KMS", kms_key_arn=warehouse.key.key_arn
            )
            if warehouse.key is not None
            else glue.CfnSecurityConfiguration.S3EncryptionProperty(s3_encryption_mode="DISABLED")
        )
        security = GlueSecurity(
            self, "GlueSecurity", name="icelake-ingest", key=landing.key, s3_encryption=s3_encryption
        )
        catalogs = sorted({src.table.table.split(".")[0] for src in s.ingest_sources}) or [DEFAULT_CATALOG]
        job = GlueSparkJob(
            self,
            cid,
            name=MERGE_JOB,
            script=MERGE_SCRIPT,
            build_dir=build_dir,
            role=self.role,
            glue_version=s.glue_version,
            worker_type=s.ingest_glue_worker_type,
            workers=s.ingest_glue_workers,
            timeout_minutes=3 * 60,
            security=security,
            # One run at a time: two merges into one table would conflict (and SCD2 needs batch order).
            max_concurrent_runs=1,
            pip_modules=MERGE_PIP_MODULES,
            arguments={"--conf": spark_catalog_conf(catalogs, warehouse.uri)},
        )
        self.job = job.job
        self.arn = Stack.of(self).format_arn(service="glue", resource="job", resource_name=MERGE_JOB)
        raw = landing.bucket
        statements = [
            job.asset_statement(),
            # Reads pending batches; moves a poison batch to quarantine/ (copy, then delete).
            iam.PolicyStatement(
                sid="RawRead",
                actions=["s3:GetObject", "s3:DeleteObject"],
                resources=[raw.arn_for_objects(f"{RAW_PREFIX}/*")],
            ),
            iam.PolicyStatement(
                sid="Quarantine",
                actions=["s3:PutObject"],
                resources=[raw.arn_for_objects(f"{QUARANTINE_PREFIX}/*")],
            ),
            landing.state_statement(["s3:GetObject", "s3:PutObject"]),  # empty batches' ledger
            landing.list_statement(),
            iam.PolicyStatement(
                sid="WarehouseObjects",
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[warehouse.bucket.arn_for_objects(warehouse.location.object_pattern)],
            ),
            list_prefix_statement("WarehouseList", warehouse.bucket.bucket_arn, warehouse.location.prefix),
            iam.PolicyStatement(
                sid="Catalog",
                actions=[
                    "glue:GetDatabase",
                    "glue:GetTable",
                    "glue:GetTables",
                    "glue:CreateTable",
                    "glue:UpdateTable",
                ],
                resources=glue_catalog_arns(Stack.of(self), warehouse.databases),
            ),
            *glue_log_statements(Stack.of(self)),
            # Raw objects (through S3), the job's logs and bookmarks (security configuration).
            iam.PolicyStatement(
                sid="Key",
                actions=["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"],
                resources=[landing.key.key_arn],
            ),
        ]
        if warehouse.key is not None:
            statements.append(
                iam.PolicyStatement(
                    sid="WarehouseKey",
                    actions=["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[warehouse.key.key_arn],
                    conditions=landing.via_s3,
                )
            )
        self.policy = iam.Policy(self, "GluePolicy", roles=[self.role], statements=statements)
        raw_arn = arn_of(raw)
        NagSuppressions.add_resource_suppressions(
            [self.role, self.policy],
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "The merge job reads per-run batches under raw/ (and moves a poison batch to "
                    "quarantine/<source>/<endpoint>/<run>/), keeps each endpoint's ledger under state/, "
                    "writes and removes (snapshot "
                    "expiry, orphan removal) data and metadata files under the warehouse prefix and updates "
                    "any table of the configured databases; Glue creates its own log groups under "
                    "/aws-glue/; PutMetricData has no resource type (limited to the Glue namespace).",
                    "appliesTo": [
                        *(
                            f"Resource::{raw_arn}/{p}/*"
                            for p in (RAW_PREFIX, STATE_PREFIX, QUARANTINE_PREFIX)
                        ),
                        f"Resource::{warehouse.arn_in_findings()}/{warehouse.location.object_pattern}",
                        {"regex": "/^Resource::arn:<AWS::Partition>:glue:.*:table\\/[^/]+\\/\\*$/g"},
                        {
                            "regex": "/^Resource::arn:<AWS::Partition>:logs:.*:log-group:"
                            "\\/aws-glue\\/\\*(:\\*)?$/g"
                        },
                        "Resource::*",
                    ],
                }
            ],
            apply_to_children=True,
        )


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

        # Fetch and complete, each with its own role.
        layers = LambdaLayers(self, "Layer", settings=s, build_dir=build_dir).layers
        fetch = IngestFunction(
            self,
            "Fetch",
            name=FETCH_FUNCTION,
            handler="handler.handler",
            role_name=INGEST_FETCH_ROLE_NAME,
            what="fetches the APIs into raw/",
            layers=layers,
            raw=landing.bucket,
            key=key,
        )
        complete = IngestFunction(
            self,
            "Complete",
            name=COMPLETE_FUNCTION,
            handler="handler.complete_handler",
            role_name=INGEST_COMPLETE_ROLE_NAME,
            what="marks merged raw batches complete",
            layers=layers,
            raw=landing.bucket,
            key=key,
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


def via_s3(scope: Construct) -> dict[str, Any]:
    """A KMS condition: only through S3 in this stack's region."""
    return {"StringEquals": {"kms:ViaService": f"s3.{Stack.of(scope).region}.amazonaws.com"}}


def encrypted_bucket(
    scope: Construct, cid: str, name: str | None, key: kms.IKey, access_logs: s3.IBucket
) -> s3.Bucket:
    """A versioned bucket encrypted with `key` (bucket keys on), logging to `access_logs`."""
    return s3.Bucket(
        scope,
        cid,
        bucket_name=name,
        encryption=s3.BucketEncryption.KMS,
        encryption_key=key,
        bucket_key_enabled=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        versioned=True,
        server_access_logs_bucket=access_logs,
        server_access_logs_prefix=f"{cid.lower()}/",
        lifecycle_rules=[
            s3.LifecycleRule(
                noncurrent_version_expiration=Duration.days(30),
                abort_incomplete_multipart_upload_after=Duration.days(7),
            )
        ],
        removal_policy=RemovalPolicy.RETAIN,
    )


def _log_streams(log_group_arn: str) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        sid="Logs", actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[f"{log_group_arn}:*"]
    )
