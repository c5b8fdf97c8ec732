"""Components shared by the stacks (the service key, the notification topic, Lambda layers and
functions, the Glue job and its security configuration, state machines from ASL files, Glue
databases), and the policy statements and alarms they have in common. Components are L3 constructs
that take an id and leave it out of their resources' logical IDs (cdk/component.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from cdk_nag import NagSuppressions
from constructs import Construct

from cdk.build import REPO, build_glue_package, build_layer, pinned_requirements
from cdk.component import Component
from cdk.config import Settings
from cdk.lambda_deps import LayerBuildError, check_layer, deps_layer

LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
COLON = ArnFormat.COLON_RESOURCE_NAME
PYTHON_RUNTIME_REASON = (
    "Python 3.11 on purpose: the same interpreter as Glue 5 (which runs the same icelake wheel); the "
    "dependencies layer is built and tested for it (manylinux2014 wheels, requirements-lambda.txt)."
)


def log_group(scope: Construct, cid: str, name: str, key: kms.IKey | None) -> logs.LogGroup:
    """A function's or a state machine's log group: kept LOG_RETENTION, encrypted with `key` if
    given, deleted with its stack."""
    return logs.LogGroup(
        scope,
        cid,
        log_group_name=name,
        retention=LOG_RETENTION,
        encryption_key=key,
        removal_policy=RemovalPolicy.DESTROY,
    )


def log_group_arn(stack: Stack, name: str) -> str:
    """ARN of a log group by name (wildcards allowed), without the `:*` of its streams."""
    return stack.format_arn(service="logs", resource="log-group", resource_name=name, arn_format=COLON)


class ServiceKey(Component):
    """A CMK with rotation that SNS (published to by EventBridge and CloudWatch alarms) and CloudWatch
    Logs may use, the latter only for the log groups named (patterns allowed)."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        alias: str,
        description: str,
        logs_sid: str,
        log_groups: Sequence[str],
    ) -> None:
        super().__init__(scope, cid)
        stack = Stack.of(self)
        self.key = kms.Key(
            self,
            cid,
            alias=alias,
            enable_key_rotation=True,
            description=description,
            removal_policy=RemovalPolicy.RETAIN,
        )
        for service in ("events.amazonaws.com", "cloudwatch.amazonaws.com"):
            self.key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=f"Publish from {service.split('.')[0]} to the encrypted topic",
                    principals=[iam.ServicePrincipal(service)],
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=["*"],
                )
            )
        arns = [log_group_arn(stack, name) for name in log_groups]
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid=logs_sid,
                principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                actions=[
                    "kms:Encrypt",
                    "kms:Decrypt",
                    "kms:ReEncryptFrom",
                    "kms:ReEncryptTo",
                    "kms:GenerateDataKey",
                    "kms:DescribeKey",
                ],
                resources=["*"],
                conditions={
                    "ArnLike": {"kms:EncryptionContext:aws:logs:arn": arns[0] if len(arns) == 1 else arns}
                },
            )
        )


class NotificationTopic(Component):
    """An SNS topic encrypted by `key` that EventBridge rules and the account's CloudWatch alarms
    may publish to, with an e-mail subscription per address."""

    def __init__(
        self, scope: Construct, cid: str, *, name: str, key: kms.IKey, emails: Sequence[str]
    ) -> None:
        from aws_cdk import aws_sns_subscriptions as subs

        super().__init__(scope, cid)
        self.topic = topic = sns.Topic(self, cid, topic_name=name, master_key=key, enforce_ssl=True)
        # enforce_ssl gives the topic a policy of its own, which replaces SNS's default one: CloudWatch
        # alarms may then publish only if the policy says so (EventBridge targets add their own grant).
        stack = Stack.of(self)
        alarms = f"arn:{stack.partition}:cloudwatch:{stack.region}:{stack.account}:alarm:*"
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={
                    "ArnLike": {"aws:SourceArn": alarms},
                    "StringEquals": {"aws:SourceAccount": stack.account},
                },
            )
        )
        for email in emails:
            topic.add_subscription(subs.EmailSubscription(email))


class LambdaLayers(Component):
    """The icelake layer (built from this repo) and the dependencies layer: requirements-lambda.txt
    built by pip for the Lambda platform (cached under build/layers/), or the prebuilt directory
    named by `deps_layer_dir`. No managed layer: what the handlers import is built and tested here.
    With the id `Layer`, they are `IcelakeLayer` and `DepsLayer`."""

    def __init__(self, scope: Construct, cid: str, *, settings: Settings, build_dir: Path) -> None:
        super().__init__(scope, cid)
        self.layers = _layers(self, cid, settings, build_dir)


def _layers(scope: Construct, cid: str, settings: Settings, build_dir: Path) -> list[lambda_.ILayerVersion]:
    if settings.deps_layer_dir:
        deps = (REPO / settings.deps_layer_dir).resolve()
        if not (deps / "python").is_dir():
            raise LayerBuildError(
                f"deps_layer_dir {settings.deps_layer_dir!r} has no python/ directory: point it at a layer "
                "directory, or leave it empty to build requirements-lambda.txt"
            )
        check_layer(deps / "python", f"deps_layer_dir {settings.deps_layer_dir!r}")
    else:
        deps = deps_layer()
    return [
        lambda_.LayerVersion(
            scope,
            f"Icelake{cid}",
            layer_version_name="icelake-core",
            code=lambda_.Code.from_asset(str(build_layer(build_dir))),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_11],
            description="The icelake package (built from this repo at synth time)",
        ),
        lambda_.LayerVersion(
            scope,
            f"Deps{cid}",
            layer_version_name="icelake-deps",
            code=lambda_.Code.from_asset(str(deps)),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_11],
            compatible_architectures=[lambda_.Architecture.X86_64],
            description="icelake's dependencies for python3.11 x86_64, from requirements-lambda.txt",
        ),
    ]


class PythonFunction(Component):
    """A Python 3.11 function running `handler` of the repo's `handler_path` (its directory is the
    code asset), traced by X-Ray, logging to its own log group (encrypted by `log_key`). With the id
    `Copy`, they are `CopyFunction` and `CopyLogs`."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        name: str,
        handler_path: str,
        handler: str,
        layers: Sequence[lambda_.ILayerVersion],
        environment: Mapping[str, str],
        role: iam.IRole,
        memory: int,
        timeout: Duration,
        log_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, cid)
        self.log_group = log_group(self, f"{cid}Logs", f"/aws/lambda/{name}", log_key)
        self.function = lambda_.Function(
            self,
            f"{cid}Function",
            function_name=name,
            runtime=lambda_.Runtime.PYTHON_3_11,
            architecture=lambda_.Architecture.X86_64,
            handler=handler,
            code=lambda_.Code.from_asset(
                str(REPO / Path(handler_path).parent), exclude=["__pycache__", "*.pyc"]
            ),
            layers=list(layers),
            environment=dict(environment),
            role=role,
            memory_size=memory,
            timeout=timeout,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
        )
        NagSuppressions.add_resource_suppressions(
            self.function, [{"id": "AwsSolutions-L1", "reason": PYTHON_RUNTIME_REASON}]
        )


def glue_log_statements(stack: Stack) -> list[iam.PolicyStatement]:
    """What every Glue job needs to write its logs (under /aws-glue/) and metrics (namespace Glue)."""
    glue_logs = log_group_arn(stack, "/aws-glue/*")
    return [
        iam.PolicyStatement(
            sid="Logs",
            actions=[
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:PutLogEvents",
                "logs:AssociateKmsKey",
            ],
            resources=[glue_logs, f"{glue_logs}:*"],
        ),
        iam.PolicyStatement(
            sid="Metrics",
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": "Glue"}},
        ),
    ]


class GlueSecurity(Component):
    """A Glue security configuration: CloudWatch logs and job bookmarks encrypted by `key`, S3
    writes as given."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        name: str,
        key: kms.IKey,
        s3_encryption: glue.CfnSecurityConfiguration.S3EncryptionProperty,
    ) -> None:
        super().__init__(scope, cid)
        self.configuration = glue.CfnSecurityConfiguration(
            self,
            cid,
            name=name,
            encryption_configuration=glue.CfnSecurityConfiguration.EncryptionConfigurationProperty(
                cloud_watch_encryption=glue.CfnSecurityConfiguration.CloudWatchEncryptionProperty(
                    cloud_watch_encryption_mode="SSE-KMS", kms_key_arn=key.key_arn
                ),
                job_bookmarks_encryption=glue.CfnSecurityConfiguration.JobBookmarksEncryptionProperty(
                    job_bookmarks_encryption_mode="CSE-KMS", kms_key_arn=key.key_arn
                ),
                s3_encryptions=[s3_encryption],
            ),
        )


class GlueSparkJob(Component):
    """A Glue Spark job of a repo script with Iceberg, the icelake wheel, metrics and continuous logs,
    no bookmarks and no retries (the state machine retries); `arguments` are added to the default
    arguments. `run_queuing` (JobRunQueuingEnabled): a run beyond MaxConcurrentRuns waits for a
    slot. The job carries the component's id; the script and wheel are S3 assets."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        name: str,
        script: str,
        build_dir: Path,
        role: iam.IRole,
        glue_version: str,
        worker_type: str,
        workers: int,
        timeout_minutes: int,
        security: GlueSecurity,
        max_concurrent_runs: int,
        pip_modules: Sequence[str],
        arguments: Mapping[str, Any],
        run_queuing: bool = False,
    ) -> None:
        super().__init__(scope, cid)
        self.script = s3_assets.Asset(self, "Script", path=str(REPO / script))
        self.wheel = s3_assets.Asset(self, "IcelakeWheel", path=str(build_glue_package(build_dir)))
        self.job = glue.CfnJob(
            self,
            cid,
            name=name,
            role=role.role_arn,
            glue_version=glue_version,
            worker_type=worker_type,
            number_of_workers=workers,
            timeout=timeout_minutes,
            max_retries=0,
            job_run_queuing_enabled=run_queuing,
            security_configuration=security.configuration.name,
            execution_property=glue.CfnJob.ExecutionPropertyProperty(max_concurrent_runs=max_concurrent_runs),
            command=glue.CfnJob.JobCommandProperty(
                name="glueetl", python_version="3", script_location=self.script.s3_object_url
            ),
            default_arguments={
                "--job-language": "python",
                "--datalake-formats": "iceberg",
                "--extra-py-files": self.wheel.s3_object_url,
                "--additional-python-modules": ",".join(pinned_requirements(tuple(pip_modules))),
                "--enable-metrics": "true",
                "--enable-observability-metrics": "true",
                "--enable-continuous-cloudwatch-log": "true",
                "--job-bookmark-option": "job-bookmark-disable",
                **arguments,
            },
        )

    def asset_statement(self) -> iam.PolicyStatement:
        """What the job's role needs to read its script and the wheel."""
        return iam.PolicyStatement(
            sid="Assets",
            actions=["s3:GetObject"],
            resources=[
                self.script.bucket.arn_for_objects(self.script.s3_object_key),
                self.wheel.bucket.arn_for_objects(self.wheel.s3_object_key),
            ],
        )


class AslStateMachine(Component):
    """The state machine of a repo ASL file with its placeholders substituted, X-Ray traced, logging
    every event with execution data to `/aws/vendedlogs/states/<name>` (encrypted by `log_key`).
    The state machine carries the component's id, its log group `<id>Logs` unless `logs_id` says
    otherwise."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        name: str,
        asl: str,
        substitutions: Mapping[str, str],
        log_key: kms.IKey | None = None,
        logs_id: str | None = None,
    ) -> None:
        super().__init__(scope, cid)
        self.log_group = log_group(self, logs_id or f"{cid}Logs", f"/aws/vendedlogs/states/{name}", log_key)
        self.state_machine = sfn.StateMachine(
            self,
            cid,
            state_machine_name=name,
            definition_body=sfn.DefinitionBody.from_file(str(REPO / asl)),
            definition_substitutions=dict(substitutions),
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=True
            ),
        )

    def allow_steps(self, functions: Sequence[lambda_.IFunction], glue_job_arn: str) -> None:
        """The state machine may invoke these functions and run (`.sync`) this Glue job, nothing else."""
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                sid="InvokeSteps",
                actions=["lambda:InvokeFunction"],
                resources=[fn.function_arn for fn in functions],
            )
        )
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                sid="GlueSync",
                actions=["glue:StartJobRun", "glue:GetJobRun", "glue:GetJobRuns", "glue:BatchStopJobRun"],
                resources=[glue_job_arn],
            )
        )

    def failed_executions(self, period: Duration) -> cw.MathExpression:
        sm = self.state_machine
        return cw.MathExpression(
            expression="failed + timedout + aborted",
            using_metrics={
                "failed": sm.metric_failed(period=period, statistic="Sum"),
                "timedout": sm.metric_timed_out(period=period, statistic="Sum"),
                "aborted": sm.metric_aborted(period=period, statistic="Sum"),
            },
            period=period,
            label="Executions failed, timed out or aborted",
        )


def sns_alarm(
    scope: Construct,
    cid: str,
    *,
    name: str,
    metric: cw.Metric | cw.MathExpression,
    description: str,
    topic: sns.ITopic,
) -> cw.Alarm:
    """An alarm, notifying `topic`, as soon as the metric reaches 1 in a period (missing data is fine)."""
    alarm = metric.create_alarm(
        scope,
        cid,
        alarm_name=name,
        alarm_description=description,
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
    )
    alarm.add_alarm_action(cw_actions.SnsAction(topic))
    return alarm


def glue_catalog_arns(stack: Stack, databases: Sequence[str]) -> list[str]:
    """The catalog, the databases and their tables: what Glue catalog actions on them need."""
    arns = [stack.format_arn(service="glue", resource="catalog")]
    for db in databases:
        arns.append(stack.format_arn(service="glue", resource="database", resource_name=db))
        arns.append(stack.format_arn(service="glue", resource="table", resource_name=f"{db}/*"))
    return arns


class GlueDatabases(Component):
    """One Glue database per name, located at `location`/<name> (`location` without a trailing /),
    but those named in `existing`, which are someone else's. With the id `Database`, they are
    `Database0`, `Database1`, ... by their place in `databases`, so naming one existing never
    renames another. Each is retained by CloudFormation (DeletionPolicy and UpdateReplacePolicy
    Retain): deleting a database deletes every table in it, promoted tables too, so neither a
    `cdk destroy` nor a name removed from the configuration may do it."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        databases: Sequence[str],
        location: str,
        description: str,
        existing: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, cid)
        account = Stack.of(self).account
        self.databases = [
            glue.CfnDatabase(
                self,
                f"{cid}{i}",
                catalog_id=account,
                database_input=glue.CfnDatabase.DatabaseInputProperty(
                    name=db, description=description, location_uri=f"{location}/{db}"
                ),
            )
            for i, db in enumerate(databases)
            if db not in existing
        ]
        for database in self.databases:
            database.apply_removal_policy(RemovalPolicy.RETAIN)


def list_prefix_statement(sid: str, bucket_arn: str, prefix: str, *more: str) -> iam.PolicyStatement:
    """s3:ListBucket on a bucket, limited to the prefixes and what is under them (the whole bucket
    when a prefix is empty)."""
    prefixes = [p.strip("/") for p in (prefix, *more)]
    return iam.PolicyStatement(
        sid=sid,
        actions=["s3:ListBucket"],
        resources=[bucket_arn],
        conditions=None
        if not all(prefixes)
        else {"StringLike": {"s3:prefix": [v for p in prefixes for v in (f"{p}/*", p)]}},
    )
