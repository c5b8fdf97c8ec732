"""The orchestrator stack: the state machine is the ASL file, and every resource is configured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template

from icelake.constants import (
    ARTIFACTS_BUCKET,
    ENV_ARTIFACTS_BUCKET,
    ENV_EVENT_BUS,
    ENV_LEDGER_TABLE,
    GLUE_MIGRATE_JOB,
    LAMBDA_STEPS,
    LEDGER_TABLE,
    MIGRATE_ASL,
    MIGRATE_STATE_MACHINE,
)
from tests.infrastructure.conftest import Synth
from tests.infrastructure.helpers import reachable_states, rendered_definition, resources_of

REPO = Path(__file__).resolve().parents[2]
ORCH = "IcelakeOrchestrator"


def _template(synth: Synth) -> Template:
    return Template.from_json(synth.templates[ORCH])


def test_state_machine_definition_is_the_asl_file_with_every_placeholder_substituted(synth: Synth) -> None:
    # Given the state machine in the template, when its staged definition asset is read and its
    # DefinitionSubstitutions substituted: it is the ASL file, no placeholder is left, valid JSON
    template = synth.templates[ORCH]
    props, definition = rendered_definition(synth.outdir, template, REPO / MIGRATE_ASL)
    assert props["StateMachineName"] == MIGRATE_STATE_MACHINE
    subs = props["DefinitionSubstitutions"]
    functions = resources_of(template, "AWS::Lambda::Function")
    assert definition["StartAt"] == "Inventory"
    for _step, (fn_name, _handler, placeholder) in LAMBDA_STEPS.items():
        logical_id = subs[placeholder]["Fn::GetAtt"][0]
        assert functions[logical_id]["Properties"]["FunctionName"] == fn_name
    assert subs["GlueJobName"] == GLUE_MIGRATE_JOB
    # Logging of every event and X-Ray tracing
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert props["TracingConfiguration"] == {"Enabled": True}


def test_step_lambdas_run_the_repo_handlers_with_the_icelake_layer(synth: Synth) -> None:
    template = _template(synth)
    functions = resources_of(synth.templates[ORCH], "AWS::Lambda::Function")
    layer_ids = {
        v["Properties"]["LayerName"]: k
        for k, v in resources_of(synth.templates[ORCH], "AWS::Lambda::LayerVersion").items()
    }
    assert sorted(f["Properties"]["FunctionName"] for f in functions.values()) == sorted(
        name for name, _h, _p in LAMBDA_STEPS.values()
    )
    for fn in functions.values():
        props = fn["Properties"]
        assert props["Runtime"] == "python3.11"
        assert props["Handler"] == "handler.handler"
        assert props["TracingConfig"] == {"Mode": "Active"}
        env = props["Environment"]["Variables"]
        assert env[ENV_LEDGER_TABLE] == {"Ref": Match.any_value()} or env[ENV_LEDGER_TABLE]
        assert {ENV_LEDGER_TABLE, ENV_ARTIFACTS_BUCKET, ENV_EVENT_BUS} <= set(env)
        # icelake and the dependencies layer built here, no managed layer (an ARN would be a string)
        assert [ref["Ref"] for ref in props["Layers"]] == [
            layer_ids["icelake-core"],
            layer_ids["icelake-deps"],
        ]
        assert "LoggingConfig" in props
    template.has_resource_properties(
        "AWS::Lambda::LayerVersion", {"LayerName": "icelake-core", "CompatibleRuntimes": ["python3.11"]}
    )
    # The layer asset holds the icelake package under python/
    layer = resources_of(synth.templates[ORCH], "AWS::Lambda::LayerVersion")[layer_ids["icelake-core"]]
    key = layer["Properties"]["Content"]["S3Key"].removesuffix(".zip")
    assert (synth.outdir / f"asset.{key}" / "python" / "icelake" / "constants.py").is_file()
    # Every log group keeps logs for a bounded time
    for group in resources_of(synth.templates[ORCH], "AWS::Logs::LogGroup").values():
        assert group["Properties"]["RetentionInDays"] == 90


def test_glue_job_runs_iceberg_with_the_icelake_wheel_sized_for_the_map(synth: Synth) -> None:
    (job,) = resources_of(synth.templates[ORCH], "AWS::Glue::Job").values()
    props = job["Properties"]
    assert props["Name"] == GLUE_MIGRATE_JOB
    assert float(props["GlueVersion"]) >= 5.0
    assert props["Command"]["Name"] == "glueetl"
    args = props["DefaultArguments"]
    assert args["--datalake-formats"] == "iceberg"
    wheel_url = args["--extra-py-files"]
    assert wheel_url.startswith("s3://") and wheel_url.endswith(".zip")  # a .whl misses the executors
    assert (synth.outdir / f"asset.{wheel_url.rsplit('/', 1)[1]}").is_file()
    assert "pyiceberg" in args["--additional-python-modules"]
    assert props["ExecutionProperty"]["MaxConcurrentRuns"] == 10  # examples/context.json map_concurrency
    # a request may run up to 1,000 tables at once: those beyond the slots wait for one
    assert props["JobRunQueuingEnabled"] is True
    assert props["SecurityConfiguration"] == "icelake-migrate"


def test_ledger_and_artifacts_bucket_are_protected(synth: Synth) -> None:
    template = _template(synth)
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "TableName": LEDGER_TABLE,
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": True},
        },
    )
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketName": ARTIFACTS_BUCKET.format(account="123456789012"),
            "VersioningConfiguration": {"Status": "Enabled"},
            "BucketEncryption": Match.object_like({"ServerSideEncryptionConfiguration": Match.any_value()}),
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
        },
    )
    # TLS only on every bucket of the stack
    policies = resources_of(synth.templates[ORCH], "AWS::S3::BucketPolicy")
    assert policies
    for policy in policies.values():
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
        )


def test_eventbridge_rules_start_migrations_and_notify(synth: Synth) -> None:
    rules = resources_of(synth.templates[ORCH], "AWS::Events::Rule")
    by_name = {r["Properties"]["Name"]: r["Properties"] for r in rules.values()}
    schedule = by_name["icelake-incremental-sync"]
    assert schedule["ScheduleExpression"] == "rate(1 day)"
    request = json.loads(schedule["Targets"][0]["Input"])
    assert request["mode"] == "incremental" and request["selection"]["databases"] == ["sales"]
    assert schedule["State"] == "DISABLED"  # the example's sync_enabled: false
    verify = by_name["icelake-verify"]  # the same tables verified, deployed disabled
    assert verify["State"] == "DISABLED" and verify["ScheduleExpression"] == "rate(1 day)"
    assert json.loads(verify["Targets"][0]["Input"]) == {**request, "mode": "verify"}
    start = by_name["icelake-start-migration"]
    assert start["EventPattern"] == {"source": ["icelake.request"]}
    # on the default event bus (no EventBusName) of the orchestrator's account and region, as
    # docs/deploy.md tells a user who puts a request event
    assert "EventBusName" not in start
    env = synth.manifest["artifacts"][ORCH]["environment"]
    assert env == "aws://123456789012/us-east-1"  # examples/context.json's orchestrator
    docs = " ".join((REPO / "docs" / "deploy.md").read_text().split())
    assert "on the orchestrator account's default event bus, in the orchestrator's region" in docs
    assert start["Targets"][0]["InputPath"] == "$.detail"
    assert by_name["icelake-run-reports"]["EventPattern"] == {"source": ["icelake"]}
    assert by_name["icelake-execution-failures"]["EventPattern"]["source"] == ["aws.states"]
    assert by_name["icelake-glue-failures"]["EventPattern"]["detail"]["jobName"] == [GLUE_MIGRATE_JOB]
    template = _template(synth)
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})


def test_dashboard_and_alarms(synth: Synth) -> None:
    alarms = resources_of(synth.templates[ORCH], "AWS::CloudWatch::Alarm")
    names = {a["Properties"]["AlarmName"] for a in alarms.values()}
    assert names == {
        "icelake-executions-failed",
        "icelake-glue-failed-tasks",
        "icelake-glue-job-failed",
        "icelake-lambda-errors",
        "icelake-lambda-throttles",
        "icelake-tables-failed",
    }
    (failed,) = [
        a["Properties"] for a in alarms.values() if a["Properties"]["AlarmName"] == "icelake-tables-failed"
    ]
    summed = {q["MetricStat"]["Metric"]["MetricName"] for q in failed["Metrics"] if "MetricStat" in q}
    assert "TablesDamaged" in summed and "TablesFailed" in summed and "TablesMigrated" not in summed
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"]  # to the SNS topic
    _template(synth).resource_count_is("AWS::CloudWatch::Dashboard", 1)


def test_every_state_of_the_deployed_definition_is_reachable(synth: Synth) -> None:
    definition = json.loads((REPO / MIGRATE_ASL).read_text())
    machines = [definition]
    while machines:
        machine = machines.pop()
        assert reachable_states(machine) == set(machine["States"])
        for state in machine["States"].values():
            for key in ("ItemProcessor", "Iterator"):
                if key in state:
                    machines.append(state[key])
            machines.extend(state.get("Branches", []))


def test_map_exports_its_results_to_the_artifacts_bucket_and_report_reads_them(synth: Synth) -> None:
    # The ResultWriter writes into the artifacts bucket the stack creates (a deploy-time substitution)
    template = synth.templates[ORCH]
    _props, definition = rendered_definition(synth.outdir, template, REPO / MIGRATE_ASL)
    migrate = definition["States"]["MigrateTables"]
    writer = migrate["ResultWriter"]
    assert writer["Resource"] == "arn:aws:states:::s3:putObject"
    (artifacts_id,) = [
        k
        for k, v in resources_of(template, "AWS::S3::Bucket").items()
        if v["Properties"].get("BucketName") == ARTIFACTS_BUCKET.format(account="123456789012")
    ]
    assert writer["Parameters"]["Bucket"] == f"<{artifacts_id}>"
    assert writer["Parameters"]["Prefix.$"] == "States.Format('runs/{}/map-results', $$.Execution.Name)"
    # Only the writer's details flow on; Report gets them with the worklist to reconcile against
    assert migrate["ResultPath"] == "$.map_results" and migrate["ToleratedFailurePercentage"] == 100
    payload = definition["States"]["Report"]["Parameters"]["Payload"]
    assert payload["map_results.$"] == "$.map_results" and "outcomes.$" not in payload


def test_the_dashboard_graphs_every_table_outcome_the_report_step_publishes(synth: Synth) -> None:
    from icelake.workflow.models import FILES_PRUNED_METRIC, OUTCOME_METRICS, TableOutcome
    from icelake.workflow.wiring import METRICS_NAMESPACE, MIGRATE_SERVICE

    (dashboard,) = resources_of(synth.templates[ORCH], "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])  # an Fn::Join of JSON fragments
    # every status a table can end in has its metric on the dashboard, in the Lambdas' namespace
    statuses = TableOutcome.model_fields["status"].annotation.__args__  # type: ignore[union-attr]
    assert set(OUTCOME_METRICS) == set(statuses)
    for metric in [*OUTCOME_METRICS.values(), FILES_PRUNED_METRIC]:
        assert f'[\\"{METRICS_NAMESPACE}\\",\\"{metric}\\",\\"service\\",\\"{MIGRATE_SERVICE}\\"' in body, (
            metric
        )


@pytest.mark.parametrize("stack_id", [ORCH, "IcelakeIngest"])
def test_alarms_may_publish_to_their_topic(synth: Synth, stack_id: str) -> None:
    """enforce_ssl replaces SNS's default topic policy: without a grant, CloudWatch could not
    publish a single alarm. The grant is limited to this account's alarms."""
    template = synth.templates[stack_id]
    (topic_id,) = resources_of(template, "AWS::SNS::Topic")
    alarms = resources_of(template, "AWS::CloudWatch::Alarm")
    assert alarms and all(a["Properties"]["AlarmActions"] == [{"Ref": topic_id}] for a in alarms.values()), (
        "every alarm notifies the topic"
    )
    (policy,) = resources_of(template, "AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    (grant,) = [s for s in statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}]
    assert grant["Effect"] == "Allow" and grant["Action"] == "sns:Publish"
    assert grant["Resource"] == {"Ref": topic_id}
    source_arn = json.dumps(grant["Condition"]["ArnLike"]["aws:SourceArn"])
    assert ":cloudwatch:" in source_arn and ":alarm:*" in source_arn
    assert grant["Condition"]["StringEquals"]["aws:SourceAccount"] == "123456789012"  # the orchestrator
    # and TLS is still enforced
    assert any(s["Effect"] == "Deny" and "aws:SecureTransport" in json.dumps(s) for s in statements)
