"""Constructs shared by the orchestrator and the ingestion stacks: the service key, Lambda layers and
functions, the Glue job with its security configuration, state machines from ASL files, alarms."""

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
from cdk.config import Settings
from cdk.lambda_deps import LayerBuildError, check_layer, deps_layer

LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
COLON = ArnFormat.COLON_RESOURCE_NAME
PYTHON_RUNTIME_REASON = (
    "Python 3.11 on purpose: the same interpreter as Glue 5 (which runs the same icelake wheel); the "
    "dependencies layer is built and tested for it (manylinux2014 wheels, requirements-lambda.txt)."
)


def log_group_arn(stack: Stack, name: str) -> str:
    """ARN of a log group by name (wildcards allowed), without the `:*` of its streams."""
    return stack.format_arn(service="logs", resource="log-group", resource_name=name, arn_format=COLON)


def service_key(
    stack: Stack, *, alias: str, description: str, logs_sid: str, log_groups: Sequence[str]
) -> kms.Key:
    """A CMK with rotation that SNS (published to by EventBridge and CloudWatch alarms) and CloudWatch
    Logs may use, the latter only for the log groups named (patterns allowed)."""
    key = kms.Key(
        stack,
        "Key",
        alias=alias,
        enable_key_rotation=True,
        description=description,
        removal_policy=RemovalPolicy.RETAIN,
    )
    for service in ("events.amazonaws.com", "cloudwatch.amazonaws.com"):
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid=f"Publish from {service.split('.')[0]} to the encrypted topic",
                principals=[iam.ServicePrincipal(service)],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
            )
        )
    arns = [log_group_arn(stack, name) for name in log_groups]
    key.add_to_resource_policy(
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
    return key


def notification_topic(scope: Construct, name: str, key: kms.IKey, emails: Sequence[str]) -> sns.Topic:
    from aws_cdk import aws_sns_subscriptions as subs

    topic = sns.Topic(scope, "Notifications", topic_name=name, master_key=key, enforce_ssl=True)
    # enforce_ssl gives the topic a policy of its own, which replaces SNS's default one: CloudWatch
    # alarms may then publish only if the policy says so (EventBridge targets add their own grant).
    stack = Stack.of(scope)
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
    return topic


def lambda_layers(scope: Construct, settings: Settings, build_dir: Path) -> list[lambda_.ILayerVersion]:
    """The icelake layer (built from this repo) and the dependencies layer: requirements-lambda.txt
    built by pip for the Lambda platform (cached under build/layers/), or the prebuilt directory
    named by `deps_layer_dir`. No managed layer: what the handlers import is built and tested here."""
    for retired in ("pandas_layer_arn", "powertools_layer_arn"):
        if scope.node.try_get_context(retired):
            raise LayerBuildError(
                f"context key {retired} is no longer used: the dependencies layer is built from "
                "requirements-lambda.txt at synth (or set deps_layer_dir to a prebuilt one); remove the key"
            )
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
            "IcelakeLayer",
            layer_version_name="icelake-core",
            code=lambda_.Code.from_asset(str(build_layer(build_dir))),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_11],
            description="The icelake package (built from this repo at synth time)",
        ),
        lambda_.LayerVersion(
            scope,
            "DepsLayer",
            layer_version_name="icelake-deps",
            code=lambda_.Code.from_asset(str(deps)),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_11],
            compatible_architectures=[lambda_.Architecture.X86_64],
            description="icelake's dependencies for python3.11 x86_64, from requirements-lambda.txt",
        ),
    ]


def python_function(
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
) -> tuple[lambda_.Function, logs.LogGroup]:
    """A Python 3.11 function running `handler` of the repo's `handler_path` (its directory is the
    code asset), traced by X-Ray, logging to its own log group `<cid>Logs` (encrypted by `log_key`)."""
    log_group = logs.LogGroup(
        scope,
        f"{cid}Logs",
        log_group_name=f"/aws/lambda/{name}",
        retention=LOG_RETENTION,
        encryption_key=log_key,
        removal_policy=RemovalPolicy.DESTROY,
    )
    fn = lambda_.Function(
        scope,
        f"{cid}Function",
        function_name=name,
        runtime=lambda_.Runtime.PYTHON_3_11,
        architecture=lambda_.Architecture.X86_64,
        handler=handler,
        code=lambda_.Code.from_asset(str(REPO / Path(handler_path).parent), exclude=["__pycache__", "*.pyc"]),
        layers=list(layers),
        environment=dict(environment),
        role=role,
        memory_size=memory,
        timeout=timeout,
        tracing=lambda_.Tracing.ACTIVE,
        log_group=log_group,
    )
    return fn, log_group


def suppress_python_runtime(functions: Sequence[lambda_.Function]) -> None:
    NagSuppressions.add_resource_suppressions(
        list(functions), [{"id": "AwsSolutions-L1", "reason": PYTHON_RUNTIME_REASON}]
    )


def glue_assets(scope: Construct, script: str, build_dir: Path) -> tuple[s3_assets.Asset, s3_assets.Asset]:
    """The job's script (a repo path) and the icelake wheel, as S3 assets."""
    return (
        s3_assets.Asset(scope, "GlueScript", path=str(REPO / script)),
        s3_assets.Asset(scope, "IcelakeWheel", path=str(build_glue_package(build_dir))),
    )


def glue_asset_statement(script: s3_assets.Asset, wheel: s3_assets.Asset) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        sid="Assets",
        actions=["s3:GetObject"],
        resources=[
            script.bucket.arn_for_objects(script.s3_object_key),
            wheel.bucket.arn_for_objects(wheel.s3_object_key),
        ],
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


def glue_security_configuration(
    scope: Construct,
    name: str,
    key: kms.IKey,
    s3_encryption: glue.CfnSecurityConfiguration.S3EncryptionProperty,
) -> glue.CfnSecurityConfiguration:
    """Glue's CloudWatch logs and job bookmarks encrypted by `key`; S3 writes as given."""
    return glue.CfnSecurityConfiguration(
        scope,
        "GlueSecurity",
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


def glue_spark_job(
    scope: Construct,
    cid: str,
    *,
    name: str,
    role: iam.IRole,
    glue_version: str,
    worker_type: str,
    workers: int,
    timeout_minutes: int,
    security: glue.CfnSecurityConfiguration,
    max_concurrent_runs: int,
    script: s3_assets.Asset,
    wheel: s3_assets.Asset,
    pip_modules: Sequence[str],
    arguments: Mapping[str, Any],
    run_queuing: bool = False,
) -> glue.CfnJob:
    """A Glue Spark job with Iceberg, the icelake wheel, metrics and continuous logs, no bookmarks and
    no retries (the state machine retries); `arguments` are added to the default arguments.
    `run_queuing` (JobRunQueuingEnabled): a run beyond MaxConcurrentRuns waits for a slot."""
    return glue.CfnJob(
        scope,
        cid,
        name=name,
        role=role.role_arn,
        glue_version=glue_version,
        worker_type=worker_type,
        number_of_workers=workers,
        timeout=timeout_minutes,
        max_retries=0,
        job_run_queuing_enabled=run_queuing,
        security_configuration=security.name,
        execution_property=glue.CfnJob.ExecutionPropertyProperty(max_concurrent_runs=max_concurrent_runs),
        command=glue.CfnJob.JobCommandProperty(
            name="glueetl", python_version="3", script_location=script.s3_object_url
        ),
        default_arguments={
            "--job-language": "python",
            "--datalake-formats": "iceberg",
            "--extra-py-files": wheel.s3_object_url,
            "--additional-python-modules": ",".join(pinned_requirements(tuple(pip_modules))),
            "--enable-metrics": "true",
            "--enable-observability-metrics": "true",
            "--enable-continuous-cloudwatch-log": "true",
            "--job-bookmark-option": "job-bookmark-disable",
            **arguments,
        },
    )


def asl_state_machine(
    scope: Construct,
    cid: str,
    *,
    name: str,
    asl: str,
    substitutions: Mapping[str, str],
    log_key: kms.IKey | None = None,
) -> sfn.StateMachine:
    """The state machine of a repo ASL file with its placeholders substituted, X-Ray traced, logging
    every event with execution data to `/aws/vendedlogs/states/<name>` (encrypted by `log_key`)."""
    sm_logs = logs.LogGroup(
        scope,
        "StateMachineLogs",
        log_group_name=f"/aws/vendedlogs/states/{name}",
        retention=LOG_RETENTION,
        encryption_key=log_key,
        removal_policy=RemovalPolicy.DESTROY,
    )
    return sfn.StateMachine(
        scope,
        cid,
        state_machine_name=name,
        definition_body=sfn.DefinitionBody.from_file(str(REPO / asl)),
        definition_substitutions=dict(substitutions),
        tracing_enabled=True,
        logs=sfn.LogOptions(destination=sm_logs, level=sfn.LogLevel.ALL, include_execution_data=True),
    )


def grant_steps(sm: sfn.StateMachine, functions: Sequence[lambda_.IFunction], glue_job_arn: str) -> None:
    """The state machine may invoke these functions and run (`.sync`) this Glue job, nothing else."""
    sm.add_to_role_policy(
        iam.PolicyStatement(
            sid="InvokeSteps",
            actions=["lambda:InvokeFunction"],
            resources=[fn.function_arn for fn in functions],
        )
    )
    sm.add_to_role_policy(
        iam.PolicyStatement(
            sid="GlueSync",
            actions=["glue:StartJobRun", "glue:GetJobRun", "glue:GetJobRuns", "glue:BatchStopJobRun"],
            resources=[glue_job_arn],
        )
    )


def failed_executions(sm: sfn.StateMachine, period: Duration) -> cw.MathExpression:
    failed = sm.metric_failed(period=period, statistic="Sum")
    timed_out = sm.metric_timed_out(period=period, statistic="Sum")
    aborted = sm.metric_aborted(period=period, statistic="Sum")
    return cw.MathExpression(
        expression="failed + timedout + aborted",
        using_metrics={"failed": failed, "timedout": timed_out, "aborted": aborted},
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


def glue_databases(
    stack: Stack, databases: Sequence[str], location: str, description: str
) -> list[glue.CfnDatabase]:
    """One Glue database per name, located at `location`/<name> (`location` without a trailing /)."""
    return [
        glue.CfnDatabase(
            stack,
            f"Database{i}",
            catalog_id=stack.account,
            database_input=glue.CfnDatabase.DatabaseInputProperty(
                name=db, description=description, location_uri=f"{location}/{db}"
            ),
        )
        for i, db in enumerate(databases)
    ]


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
