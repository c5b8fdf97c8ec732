"""The migration workflow's components in the orchestrator account: where runs keep their state
(artifacts bucket, ledger), the step Lambdas, the Glue job and the state machine's grants (its
EventBridge rules, dashboard and alarms are in cdk/monitoring.py). `OrchestratorStack` composes
them; each takes what it uses as arguments, so none depends on the order of attributes set on the
stack."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from cdk_nag import NagSuppressions
from constructs import Construct

from cdk.common import (
    COLON,
    AslStateMachine,
    GlueSecurity,
    GlueSparkJob,
    LambdaLayers,
    PythonFunction,
    glue_log_statements,
)
from cdk.component import Component, arn_of
from cdk.config import GLUE_ROLE_NAME, STEPS_ROLE_NAME, Settings
from icelake.constants import (
    ARTIFACTS_BUCKET,
    GLUE_MIGRATE_JOB,
    GLUE_MIGRATE_SCRIPT,
    GLUE_MIGRATE_TIMEOUT_MINUTES,
    LAMBDA_STEPS,
    LEDGER_TABLE,
    MIGRATE_STATE_MACHINE,
    STEP_LIMITS,
)
from icelake.workflow.wiring import migrate_lambda_environment

# Glue gets these with pip at job start (the icelake wheel itself comes by --extra-py-files).
GLUE_PIP_MODULES = ("pyiceberg", "fastavro", "pydantic")


def artifacts_statements(artifacts: s3.IBucket) -> list[iam.PolicyStatement]:
    """Read, write and delete run artifacts; list them (so a missing one reads as absent)."""
    return [
        iam.PolicyStatement(
            sid="ArtifactsObjects",
            actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
            resources=[artifacts.arn_for_objects("*")],
        ),
        iam.PolicyStatement(sid="ArtifactsList", actions=["s3:ListBucket"], resources=[artifacts.bucket_arn]),
    ]


def assume_roles_statement(settings: Settings) -> iam.PolicyStatement:
    """The only way into the source and target accounts: their icelake roles."""
    return iam.PolicyStatement(
        sid="CrossAccount",
        actions=["sts:AssumeRole"],
        resources=[settings.source_role_arn, settings.target_role_arn],
    )


class MigrationStore(Component):
    """The artifacts bucket (work lists, journals, copy results, Map results, reports) and the
    ledger table (runs, tables, locks, last synced versions). Both are kept when the stack goes."""

    def __init__(self, scope: Construct, cid: str, *, settings: Settings, access_logs: s3.IBucket) -> None:
        super().__init__(scope, cid)
        self.artifacts = s3.Bucket(
            self,
            "Artifacts",
            bucket_name=ARTIFACTS_BUCKET.format(account=settings.orchestrator_account),
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="artifacts/",
            lifecycle_rules=[s3.LifecycleRule(noncurrent_version_expiration=Duration.days(30))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.ledger = dynamodb.Table(
            self,
            "Ledger",
            table_name=LEDGER_TABLE,
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            removal_policy=RemovalPolicy.RETAIN,
        )


class StepLambdas(Component):
    """One Lambda per step of the ASL, sharing a role that may touch the ledger, the artifacts and the
    event bus, and reaches the source and target accounts only by assuming their roles."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        settings: Settings,
        build_dir: Path,
        artifacts: s3.IBucket,
        ledger: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, cid)
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "StepsRole",
            role_name=STEPS_ROLE_NAME,
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="icelake step Lambdas: ledger, artifacts, events; cross-account only by AssumeRole",
        )
        layers = LambdaLayers(self, "Layer", settings=settings, build_dir=build_dir).layers
        env = migrate_lambda_environment(ledger.table_name, artifacts.bucket_name, embedded=False)
        self.functions: dict[str, lambda_.Function] = {}
        self.log_groups: list[logs.LogGroup] = []
        for step, (name, handler_path, _placeholder) in LAMBDA_STEPS.items():
            memory, timeout_s = STEP_LIMITS[step]
            function = PythonFunction(
                self,
                step.title(),
                name=name,
                handler_path=handler_path,
                handler="handler.handler",
                layers=layers,
                environment=env,
                role=self.role,
                memory=memory,
                timeout=Duration.seconds(timeout_s),
            )
            self.log_groups.append(function.log_group)
            self.functions[step] = function.function
        log_group_arns = [group.log_group_arn for group in self.log_groups]
        event_bus_arn = stack.format_arn(service="events", resource="event-bus", resource_name="default")
        self.policy = iam.Policy(self, "StepsPolicy", roles=[self.role])
        self.policy.add_statements(
            iam.PolicyStatement(
                sid="Logs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[f"{arn}:*" for arn in log_group_arns],
            ),
            iam.PolicyStatement(
                sid="Ledger",
                actions=[
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                    "dynamodb:Query",
                    "dynamodb:DescribeTable",
                ],
                resources=[ledger.table_arn],
            ),
            *artifacts_statements(artifacts),
            iam.PolicyStatement(sid="Events", actions=["events:PutEvents"], resources=[event_bus_arn]),
            # Plan asks whether the run that holds a table's lock has ended (then the lock is free).
            iam.PolicyStatement(
                sid="RunsEnded",
                actions=["states:DescribeExecution"],
                resources=[
                    f"arn:{stack.partition}:states:{stack.region}:{stack.account}:execution:"
                    f"{MIGRATE_STATE_MACHINE}:*"
                ],
            ),
            assume_roles_statement(settings),
        )
        NagSuppressions.add_resource_suppressions(
            [self.role, self.policy],
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "Object keys under the artifacts bucket are per run (runs/<id>/...), log "
                    "streams are created per invocation, executions of the migration state machine are "
                    "named per run (Plan reads whether a lock holder's run has ended), and X-Ray has no "
                    "resource-level permissions.",
                    "appliesTo": [
                        f"Resource::{arn_of(artifacts)}/*",
                        *(f"Resource::{arn_of(group)}:*" for group in self.log_groups),
                        {
                            "regex": "/^Resource::arn:<AWS::Partition>:states:.*:execution:"
                            "icelake-migrate-tables:\\*$/g"
                        },
                        "Resource::*",
                    ],
                }
            ],
            apply_to_children=True,
        )


class MigrateGlueJob(Component):
    """The Glue job that copies tables too large for a Lambda, with a role of its own."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        settings: Settings,
        build_dir: Path,
        artifacts: s3.IBucket,
        key: kms.IKey,
    ) -> None:
        super().__init__(scope, cid)
        self.role = role = iam.Role(
            self,
            "GlueRole",
            role_name=GLUE_ROLE_NAME,
            assumed_by=iam.ServicePrincipal("glue.amazonaws.com"),
            description="icelake Glue job: its assets, artifacts, logs; cross-account only by AssumeRole",
        )
        security = GlueSecurity(
            self,
            "GlueSecurity",
            name="icelake-migrate",
            key=key,
            s3_encryption=glue.CfnSecurityConfiguration.S3EncryptionProperty(s3_encryption_mode="SSE-S3"),
        )
        job = GlueSparkJob(
            self,
            "MigrateJob",
            name=GLUE_MIGRATE_JOB,
            script=GLUE_MIGRATE_SCRIPT,
            build_dir=build_dir,
            role=role,
            glue_version=settings.glue_version,
            worker_type=settings.glue_worker_type,
            workers=settings.glue_workers,
            timeout_minutes=GLUE_MIGRATE_TIMEOUT_MINUTES,
            security=security,
            # One run per table of the Map's default concurrency; a request may ask for up to 1,000
            # tables at once, and those beyond the slots queue for one (instead of failing after the
            # task's retries and being rolled back).
            max_concurrent_runs=settings.map_concurrency,
            run_queuing=True,
            pip_modules=GLUE_PIP_MODULES,
            arguments={"--TempDir": f"s3://{artifacts.bucket_name}/glue-temp/"},
        )
        self.job = job.job
        self.policy = iam.Policy(
            self,
            "GluePolicy",
            roles=[role],
            statements=[
                job.asset_statement(),
                *artifacts_statements(artifacts),
                *glue_log_statements(Stack.of(self)),
                iam.PolicyStatement(
                    sid="Key",
                    actions=["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[key.key_arn],
                ),
                assume_roles_statement(settings),
            ],
        )
        NagSuppressions.add_resource_suppressions(
            [self.role, self.policy],
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "Glue writes per-run objects under the artifacts bucket and creates its own "
                    "log groups under /aws-glue/; PutMetricData has no resource type (limited to the Glue "
                    "namespace by condition).",
                    "appliesTo": [
                        f"Resource::{arn_of(artifacts)}/*",
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


def grant_migration_state_machine(
    workflow: AslStateMachine, steps: StepLambdas, artifacts: s3.IBucket
) -> None:
    """The migration state machine runs the step Lambdas and the Glue job, reads work lists, writes
    its Map results and runs its own child executions: nothing else."""
    stack = Stack.of(workflow)
    state_machine = workflow.state_machine
    sm_arn = stack.format_arn(
        service="states", resource="stateMachine", resource_name=MIGRATE_STATE_MACHINE, arn_format=COLON
    )
    executions = stack.format_arn(
        service="states",
        resource="execution",
        resource_name=f"{MIGRATE_STATE_MACHINE}/*",
        arn_format=COLON,
    )
    job_arn = stack.format_arn(service="glue", resource="job", resource_name=GLUE_MIGRATE_JOB)
    workflow.allow_steps(list(steps.functions.values()), job_arn)
    state_machine.add_to_role_policy(
        iam.PolicyStatement(
            sid="WorkList", actions=["s3:GetObject"], resources=[artifacts.arn_for_objects("runs/*")]
        )
    )
    # The Map's ResultWriter exports every table's outcome (manifest.json and result files) there.
    state_machine.add_to_role_policy(
        iam.PolicyStatement(
            sid="MapResults",
            actions=[
                "s3:PutObject",
                "s3:GetObject",
                "s3:ListMultipartUploadParts",
                "s3:AbortMultipartUpload",
            ],
            resources=[artifacts.arn_for_objects("runs/*/map-results/*")],
        )
    )
    # A distributed Map runs its iterations as child executions of this state machine.
    state_machine.add_to_role_policy(
        iam.PolicyStatement(sid="DistributedMap", actions=["states:StartExecution"], resources=[sm_arn])
    )
    state_machine.add_to_role_policy(
        iam.PolicyStatement(
            sid="DistributedMapExecutions",
            actions=["states:DescribeExecution", "states:StopExecution"],
            resources=[executions],
        )
    )

    NagSuppressions.add_resource_suppressions(
        state_machine,
        [
            {
                "id": "AwsSolutions-IAM5",
                "reason": "The distributed Map reads per-run work lists (runs/*), writes its results "
                "per run and Map run (runs/*/map-results/*) and manages its own child "
                "executions; log delivery and X-Ray actions have no resource-level permissions.",
                "appliesTo": [
                    f"Resource::{arn_of(artifacts)}/runs/*",
                    f"Resource::{arn_of(artifacts)}/runs/*/map-results/*",
                    {
                        "regex": "/^Resource::arn:<AWS::Partition>:states:.*:execution:"
                        "icelake-migrate-tables\\/\\*$/g"
                    },
                    "Resource::*",
                ],
            }
        ],
        apply_to_children=True,
    )
