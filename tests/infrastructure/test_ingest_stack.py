"""The ingestion stack: the state machine is the ASL file, each role holds only what its code calls,
one schedule per configured source, and a bad source fails synthesis clearly."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment
from aws_cdk.assertions import Template

from cdk.app import build_app
from cdk.config import REQUIRED_CONTEXT, Settings
from cdk.config_values import IngestConfigError, parse_ingest_sources
from cdk.ingest import IngestStack
from icelake.constants import INGEST_ASL, INGEST_STATE_MACHINE
from icelake.ingest import resources
from icelake.ingest.models import FetchConfig, MaintenanceConfig, Scd2Spec
from tests.infrastructure.conftest import Synth, run_app_py
from tests.infrastructure.helpers import (
    INGEST_EXAMPLE,
    actions,
    as_list,
    flat,
    identity_statements,
    ingest_example_context,
    ingest_example_settings,
    reachable_states,
    rendered_definition,
    resources_of,
    role_logical_id,
    service_role,
)

REPO = Path(__file__).resolve().parents[2]
INGEST = "IcelakeIngest"
CONTEXT: dict[str, Any] = ingest_example_context()
(SOURCE,) = CONTEXT["ingest_sources"]  # the example source of examples/context-ingest.json
WHERE = r"ingest_sources\[0\] \('crm-customers'\)"  # how errors name the example source
ROLES = {
    "fetch": "icelake-ingest-fetch",
    "complete": "icelake-ingest-complete",
    "glue": "icelake-ingest-glue",
}


def _template(synth: Synth) -> dict[str, Any]:
    return synth.templates[INGEST]


def _only(template: dict[str, Any], kind: str, name_prop: str, name: str) -> tuple[str, dict[str, Any]]:
    found = [
        (k, v) for k, v in resources_of(template, kind).items() if v["Properties"].get(name_prop) == name
    ]
    assert len(found) == 1, f"one {kind} {name}, got {found}"
    return found[0]


def _logical_id(template: dict[str, Any], kind: str, prefix: str) -> str:
    (logical_id,) = [k for k in resources_of(template, kind) if k.startswith(prefix)]
    return logical_id


def _role_statements(synth: Synth, role: str) -> list[dict[str, Any]]:
    template = _template(synth)
    statements = identity_statements(template, role_logical_id(template, ROLES[role]))
    assert statements
    return statements


def _granting(statements: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The statements with an action of the service `prefix` (e.g. "kms:")."""
    return [s for s in statements if any(a.startswith(prefix) for a in as_list(s["Action"]))]


def _raw_bucket(synth: Synth) -> str:
    return _logical_id(_template(synth), "AWS::S3::Bucket", "Raw")


def _s3_resources(statements: list[dict[str, Any]]) -> dict[str, set[str]]:
    """S3 resource (flattened) -> the S3 actions granted on it."""
    out: dict[str, set[str]] = {}
    for s in statements:
        s3_actions = {a for a in as_list(s["Action"]) if a.startswith("s3:")}
        if s3_actions:
            for r in as_list(s["Resource"]):
                out.setdefault(flat(r), set()).update(s3_actions)
    return out


# -- the state machine ------------------------------------------------------------------------------
def test_state_machine_definition_is_the_asl_file_with_every_placeholder_substituted(synth: Synth) -> None:
    # Given the ingest state machine, when its staged definition is rendered with its substitutions
    template = _template(synth)
    props, definition = rendered_definition(synth.outdir, template, REPO / INGEST_ASL)
    # Then the substitutions are those of the one function the local deployment uses too
    subs = props["DefinitionSubstitutions"]
    assert set(subs) == set(resources.ingest_substitutions("f", "c", "j", MaintenanceConfig()))
    assert props["StateMachineName"] == INGEST_STATE_MACHINE
    functions = resources_of(template, "AWS::Lambda::Function")
    assert (
        functions[subs["FetchFunctionArn"]["Fn::GetAtt"][0]]["Properties"]["FunctionName"]
        == resources.FETCH_FUNCTION
    )
    assert (
        functions[subs["CompleteFunctionArn"]["Fn::GetAtt"][0]]["Properties"]["FunctionName"]
        == resources.COMPLETE_FUNCTION
    )
    assert subs["MergeJobName"] == resources.MERGE_JOB
    maintenance = CONTEXT["ingest_maintenance"]
    assert subs["SnapshotRetentionDays"] == f"{maintenance['expire_older_than_days']:g}"
    assert subs["SnapshotRetainLast"] == str(maintenance["retain_last"])
    assert subs["OrphanRetentionHours"] == f"{maintenance['orphan_older_than_hours']:g}"
    # ... every state is reachable, the Glue tasks run the merge job synchronously
    assert reachable_states(definition) == set(definition["States"])
    for name in ("MergeScd2", "Maintenance"):
        state = definition["States"][name]
        assert state["Resource"] == "arn:aws:states:::glue:startJobRun.sync"
        assert state["Parameters"]["JobName"] == resources.MERGE_JOB
    # ... and it logs every event to a KMS-encrypted log group, traced by X-Ray
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert props["TracingConfiguration"] == {"Enabled": True}
    (destination,) = props["LoggingConfiguration"]["Destinations"]
    group = template["Resources"][destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]]
    assert group["Properties"]["KmsKeyId"]


def test_state_machine_role_only_invokes_the_two_functions_and_runs_the_one_job(synth: Synth) -> None:
    template = _template(synth)
    statements = identity_statements(template, service_role(template, "states.amazonaws.com"))
    invoke = [s for s in statements if "lambda:InvokeFunction" in as_list(s["Action"])]
    (invoke_statement,) = invoke
    invoked = {flat(r) for r in as_list(invoke_statement["Resource"])}
    fetch_id = _only(template, "AWS::Lambda::Function", "FunctionName", resources.FETCH_FUNCTION)[0]
    complete_id = _only(template, "AWS::Lambda::Function", "FunctionName", resources.COMPLETE_FUNCTION)[0]
    assert invoked == {f"<{fetch_id}.Arn>", f"<{complete_id}.Arn>"}
    (glue_statement,) = _granting(statements, "glue:")
    assert set(as_list(glue_statement["Action"])) == {
        "glue:StartJobRun",
        "glue:GetJobRun",
        "glue:GetJobRuns",
        "glue:BatchStopJobRun",
    }
    assert [flat(r) for r in as_list(glue_statement["Resource"])] == [
        f"arn:<AWS::Partition>:glue:us-east-1:123456789012:job/{resources.MERGE_JOB}"
    ]
    # whatever else it may do is log delivery and tracing
    others = actions(statements) - {"lambda:InvokeFunction", *as_list(glue_statement["Action"])}
    assert others and all(a.startswith(("logs:", "xray:")) for a in others), others


# -- the roles --------------------------------------------------------------------------------------
def test_each_function_and_the_job_run_with_their_own_role(synth: Synth) -> None:
    template = _template(synth)
    role_ids = {key: role_logical_id(template, name) for key, name in ROLES.items()}
    assert len(set(role_ids.values())) == 3
    for key, name in (("fetch", resources.FETCH_FUNCTION), ("complete", resources.COMPLETE_FUNCTION)):
        _id, fn = _only(template, "AWS::Lambda::Function", "FunctionName", name)
        assert fn["Properties"]["Role"] == {"Fn::GetAtt": [role_ids[key], "Arn"]}
    _id, job = _only(template, "AWS::Glue::Job", "Name", resources.MERGE_JOB)
    assert job["Properties"]["Role"] == {"Fn::GetAtt": [role_ids["glue"], "Arn"]}
    for role in ROLES:
        for action in actions(_role_statements(synth, role)):
            assert "*" not in action, f"{role}: wildcard action {action}"


def test_fetch_role_writes_raw_batches_and_reads_only_the_configured_secrets(synth: Synth) -> None:
    # S3: objects under raw/ of the raw bucket, the endpoint's watermark under state/ (read only),
    # listing only those two prefixes; nothing of the warehouse
    template, statements, raw = _template(synth), _role_statements(synth, "fetch"), _raw_bucket(synth)
    assert _s3_resources(statements) == {
        f"<{raw}.Arn>/raw/*": {"s3:GetObject", "s3:PutObject"},
        f"<{raw}.Arn>/state/*": {"s3:GetObject"},
        f"<{raw}.Arn>": {"s3:ListBucket"},
    }
    (listing,) = [s for s in statements if "s3:ListBucket" in as_list(s["Action"])]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["raw/*", "raw", "state/*", "state"]}}
    # Secrets Manager: GetSecretValue on exactly the configured ARNs
    (secret_statement,) = _granting(statements, "secretsmanager:")
    assert as_list(secret_statement["Action"]) == ["secretsmanager:GetSecretValue"]
    assert as_list(secret_statement["Resource"]) == CONTEXT["ingest_secret_arns"]
    # KMS: the raw key only, and only through S3
    _assert_kms_only_raw_key(template, statements)
    assert actions(statements) == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "s3:GetObject",
        "s3:PutObject",
        "s3:ListBucket",
        "kms:Decrypt",
        "kms:GenerateDataKey",
        "secretsmanager:GetSecretValue",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
    }


def test_complete_role_only_touches_the_markers_the_reasons_and_the_state(synth: Synth) -> None:
    template, statements, raw = _template(synth), _role_statements(synth, "complete"), _raw_bucket(synth)
    markers = {"s3:GetObject", "s3:PutObject", "s3:DeleteObject"}
    assert _s3_resources(statements) == {
        f"<{raw}.Arn>/raw/*/.pending": markers,
        f"<{raw}.Arn>/raw/*/.complete": markers,
        f"<{raw}.Arn>/quarantine/*/reason.json": {"s3:GetObject"},
        f"<{raw}.Arn>/state/*": {"s3:GetObject", "s3:PutObject"},
        f"<{raw}.Arn>": {"s3:ListBucket"},
    }
    _assert_kms_only_raw_key(template, statements)
    assert not {a for a in actions(statements) if a.startswith(("secretsmanager:", "glue:"))}


def _assert_kms_only_raw_key(template: dict[str, Any], statements: list[dict[str, Any]]) -> None:
    key = _logical_id(template, "AWS::KMS::Key", "Key")
    assert template["Resources"][key]["Properties"]["EnableKeyRotation"] is True
    kms = _granting(statements, "kms:")
    assert kms
    for s in kms:
        assert [flat(r) for r in as_list(s["Resource"])] == [f"<{key}.Arn>"]
        assert s["Condition"] == {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}}


def test_glue_role_reads_raw_writes_the_warehouse_prefix_and_its_databases_only(synth: Synth) -> None:
    template = _template(synth)
    statements = _role_statements(synth, "glue")
    raw = _logical_id(template, "AWS::S3::Bucket", "Raw")
    warehouse = _logical_id(template, "AWS::S3::Bucket", "Warehouse")
    s3 = _s3_resources(statements)
    assets = {r for r in s3 if r.startswith("arn:<AWS::Partition>:s3:::cdk-")}
    assert len(assets) == 2 and all(s3[r] == {"s3:GetObject"} for r in assets)  # script and wheel
    assert {r: a for r, a in s3.items() if r not in assets} == {
        f"<{raw}.Arn>/raw/*": {"s3:GetObject", "s3:DeleteObject"},  # a poison batch moves out
        f"<{raw}.Arn>/quarantine/*": {"s3:PutObject"},
        f"<{raw}.Arn>/state/*": {"s3:GetObject", "s3:PutObject"},
        f"<{raw}.Arn>": {"s3:ListBucket"},
        f"<{warehouse}.Arn>/warehouse/*": {
            "s3:GetObject",
            "s3:PutObject",
            "s3:DeleteObject",
            "s3:AbortMultipartUpload",
        },
        f"<{warehouse}.Arn>": {"s3:ListBucket"},
    }
    prefixes = {
        flat(s["Resource"]): s["Condition"]["StringLike"]["s3:prefix"]
        for s in statements
        if as_list(s["Action"]) == ["s3:ListBucket"]
    }
    assert prefixes == {
        f"<{raw}.Arn>": ["raw/*", "raw", "state/*", "state"],
        f"<{warehouse}.Arn>": ["warehouse/*", "warehouse"],
    }
    # The catalog: the configured databases and their tables, no deletes of tables
    (catalog,) = _granting(statements, "glue:")
    assert {flat(r).rsplit(":", 1)[1] for r in as_list(catalog["Resource"])} == {
        "catalog",
        *(f"database/{db}" for db in CONTEXT["ingest_databases"]),
        *(f"table/{db}/*" for db in CONTEXT["ingest_databases"]),
    }
    assert "glue:DeleteTable" not in actions(statements)
    # no secrets, and no other bucket
    assert not {a for a in actions(statements) if a.startswith("secretsmanager:")}


# -- the resources ----------------------------------------------------------------------------------
def test_raw_bucket_is_encrypted_with_the_rotated_key_private_tls_only_versioned_and_logged(
    synth: Synth,
) -> None:
    template = _template(synth)
    raw_id, raw = _only(template, "AWS::S3::Bucket", "BucketName", "icelake-raw-123456789012")
    props = raw["Properties"]
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    sse = rule["ServerSideEncryptionByDefault"]
    assert sse["SSEAlgorithm"] == "aws:kms"
    assert sse["KMSMasterKeyID"] == {"Fn::GetAtt": [_logical_id(template, "AWS::KMS::Key", "Key"), "Arn"]}
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert props["LoggingConfiguration"]["DestinationBucketName"]
    assert any(r.get("NoncurrentVersionExpiration") for r in props["LifecycleConfiguration"]["Rules"])
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in resources_of(template, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": raw_id}
    ]
    (statements,) = policies
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements
    )


def test_functions_run_the_repo_handlers_with_raw_root_and_encrypted_logs(synth: Synth) -> None:
    template = _template(synth)
    raw_id = _only(template, "AWS::S3::Bucket", "BucketName", "icelake-raw-123456789012")[0]
    for name, handler in (
        (resources.FETCH_FUNCTION, "handler.handler"),
        (resources.COMPLETE_FUNCTION, "handler.complete_handler"),
    ):
        _id, fn = _only(template, "AWS::Lambda::Function", "FunctionName", name)
        props = fn["Properties"]
        assert props["Handler"] == handler
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert flat(props["Environment"]["Variables"][resources.ENV_RAW_ROOT]) == f"s3://<{raw_id}>"
        code = synth.outdir / f"asset.{props['Code']['S3Key'].removesuffix('.zip')}"
        assert (code / "handler.py").read_text() == (REPO / resources.FETCH_HANDLER).read_text()
        group_id = props["LoggingConfig"]["LogGroup"]["Ref"]
        assert template["Resources"][group_id]["Properties"]["KmsKeyId"]
        assert template["Resources"][group_id]["Properties"]["LogGroupName"] == f"/aws/lambda/{name}"


def test_merge_job_is_the_scd2_script_with_iceberg_on_the_glue_catalog_one_run_at_a_time(
    synth: Synth,
) -> None:
    template = _template(synth)
    _id, job = _only(template, "AWS::Glue::Job", "Name", resources.MERGE_JOB)
    props = job["Properties"]
    assert props["ExecutionProperty"]["MaxConcurrentRuns"] == 1
    assert props["MaxRetries"] == 0
    assert props["SecurityConfiguration"] == "icelake-ingest"
    script = synth.outdir / f"asset.{props['Command']['ScriptLocation'].rsplit('/', 1)[1]}"
    assert script.read_text() == (REPO / resources.MERGE_SCRIPT).read_text()
    args = props["DefaultArguments"]
    assert args["--datalake-formats"] == "iceberg"
    assert args["--job-bookmark-option"] == "job-bookmark-disable"
    assert args["--extra-py-files"].endswith(".zip")  # a .whl would not reach the executors
    warehouse = _logical_id(template, "AWS::S3::Bucket", "Warehouse")
    catalog = SOURCE["table"]["table"].split(".")[0]
    conf = dict(
        item.split("=", 1) for item in flat(args["--conf"]).split(" --conf ")
    )  # key=value pairs of the Spark conf
    assert conf["spark.sql.extensions"].endswith("IcebergSparkSessionExtensions")
    assert conf[f"spark.sql.catalog.{catalog}"] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf[f"spark.sql.catalog.{catalog}.catalog-impl"] == "org.apache.iceberg.aws.glue.GlueCatalog"
    assert conf[f"spark.sql.catalog.{catalog}.warehouse"] == f"s3://<{warehouse}>/warehouse"
    # the configured databases exist, under the warehouse prefix
    databases = {
        d["Properties"]["DatabaseInput"]["Name"]: flat(d["Properties"]["DatabaseInput"]["LocationUri"])
        for d in resources_of(template, "AWS::Glue::Database").values()
    }
    assert databases == {db: f"s3://<{warehouse}>/warehouse/{db}" for db in CONTEXT["ingest_databases"]}


def test_one_schedule_per_source_whose_input_the_workflow_models_accept(synth: Synth) -> None:
    template = _template(synth)
    rules = resources_of(template, "AWS::Events::Rule")
    assert len(rules) == len(CONTEXT["ingest_sources"])
    _id, rule = _only(template, "AWS::Events::Rule", "Name", f"icelake-ingest-{SOURCE['name']}")
    props = rule["Properties"]
    assert props["ScheduleExpression"] == SOURCE["schedule"]
    assert props["State"] == "ENABLED"
    (target,) = props["Targets"]
    sm_id = _logical_id(template, "AWS::StepFunctions::StateMachine", "IngestSource")
    assert target["Arn"] == {"Ref": sm_id}
    payload = json.loads(target["Input"])
    assert set(payload) == {"fetch", "table"}
    fetch = FetchConfig.model_validate(payload["fetch"])
    table = Scd2Spec.model_validate(payload["table"])
    assert fetch == FetchConfig.model_validate(SOURCE["fetch"])
    assert table == Scd2Spec.model_validate(SOURCE["table"])
    assert fetch.auth is not None and fetch.pagination.kind == "cursor"


def test_failed_executions_alarm_notifies_the_encrypted_topic(synth: Synth) -> None:
    template = _template(synth)
    _id, alarm = _only(template, "AWS::CloudWatch::Alarm", "AlarmName", "icelake-ingest-executions-failed")
    topic_id = _only(template, "AWS::SNS::Topic", "TopicName", "icelake-ingest-notifications")[0]
    assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}]
    expression = [m for m in alarm["Properties"]["Metrics"] if "Expression" in m]
    assert expression[0]["Expression"] == "failed + timedout + aborted"
    assert template["Resources"][topic_id]["Properties"]["KmsMasterKeyId"]


# -- configuration ----------------------------------------------------------------------------------
def _bad(path: str, value: Any) -> list[dict[str, Any]]:
    """The example sources with one field of the example source set to `value`."""
    source = copy.deepcopy(SOURCE)
    *parents, last = path.split(".")
    node = source
    for part in parents:
        node = node[part]
    node[last] = value
    return [source]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"ingest_sources": _bad("fetch.pagination.kind", "offset")},
            WHERE + r" fetch: pagination\.kind: Input should be 'none', 'page' or "
            r"'cursor'",
        ),
        (
            {"ingest_sources": _bad("fetch.url", "ftp://crm.example.com")},
            WHERE + r" fetch: url: .*must start with http",
        ),
        (
            {"ingest_sources": _bad("table.table", "customers")},
            WHERE + r" table: table: .*must be catalog\.database\.table",
        ),
        (
            {"ingest_sources": _bad("table.keys", [])},
            WHERE + r" table: keys: ",
        ),
        (
            {"ingest_sources": _bad("schedule", "every day")},
            WHERE + r": schedule 'every day' must be an EventBridge",
        ),
        (
            {"ingest_sources": _bad("fetch.auth.secret_id", "other/secret")},
            WHERE + r" fetch\.auth\.secret_id: 'other/secret' is not covered by "
            r"ingest_secret_arns",
        ),
        (
            {"ingest_sources": _bad("table.table", "glue_catalog.sales.customers")},
            WHERE + r" table\.table: database 'sales' is not in ingest_databases",
        ),
        (
            {"ingest_maintenance": {"orphan_older_than_hours": 1}},
            r"ingest_maintenance: orphan_older_than_hours: ",
        ),
    ],
)
def test_a_bad_source_fails_synthesis_naming_the_source_and_the_field(
    override: dict[str, Any], message: str, tmp_path: Path
) -> None:
    with pytest.raises(IngestConfigError, match=message):
        build_app(context=override, outdir=tmp_path, config=INGEST_EXAMPLE)


def test_a_bad_source_fails_app_py_as_the_cdk_cli_runs_it(tmp_path: Path) -> None:
    # Given the CLI's context (cdk.json plus -c), passed as CDK_CONTEXT_JSON, with a bad page size
    context = {**CONTEXT, "ingest_sources": _bad("fetch.pagination.page_size", 0)}
    # When app.py runs
    proc = run_app_py(tmp_path, tmp_path / "out", {"CDK_CONTEXT_JSON": json.dumps(context)})
    # Then it fails in one line, saying which source and which field, and writes no assembly
    assert proc.returncode != 0
    assert proc.stderr.strip().startswith(
        "synth stopped: ingest_sources[0] ('crm-customers') fetch: pagination.page_size:"
    ), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_sources_from_the_command_line_are_parsed_and_disabled_sources_keep_their_rule() -> None:
    raw = json.dumps([{**SOURCE, "enabled": False}])
    app = App(context={"ingest_sources": raw, "ingest_enabled": "true", **_ingest_context()})
    settings = Settings.from_context(app.node)
    (source,) = settings.ingest_sources
    assert source.enabled is False
    assert source.fetch == FetchConfig.model_validate(SOURCE["fetch"])
    assert settings.ingest_database_names == ("crm",)
    with pytest.raises(IngestConfigError, match=r"ingest_sources\[1\] \('crm-customers'\): another source"):
        parse_ingest_sources([SOURCE, SOURCE])


def _ingest_context() -> dict[str, Any]:
    """The example's ingest keys, and the accounts and buckets every synth requires."""
    return {
        k: v
        for k, v in CONTEXT.items()
        if (k.startswith("ingest_") and k != "ingest_sources") or k in REQUIRED_CONTEXT
    }


def test_no_ingest_stack_when_disabled(tmp_path: Path) -> None:
    app = build_app(context={"ingest_enabled": False}, outdir=tmp_path, config=INGEST_EXAMPLE)
    assert INGEST not in {c.node.id for c in app.node.children}
    assert "IcelakeOrchestrator" in {c.node.id for c in app.node.children}


def test_an_existing_warehouse_bucket_and_key_are_used_as_configured(tmp_path: Path) -> None:
    # Given an existing warehouse bucket with its own key, and no database creation
    settings = ingest_example_settings(
        ingest_enabled=True,
        ingest_sources=[SOURCE],
        ingest_secret_arns=tuple(CONTEXT["ingest_secret_arns"]),
        ingest_secret_kms_key_arns=("arn:aws:kms:us-east-1:123456789012:key/secret-key",),
        ingest_create_databases=False,
        ingest_warehouse_bucket="company-lake",
        ingest_warehouse_prefix="scd2/",
        ingest_warehouse_kms_key_arn="arn:aws:kms:us-east-1:123456789012:key/lake-key",
    )
    stack = IngestStack(
        App(),
        "Ingest",
        settings=settings,
        build_dir=tmp_path,
        env=Environment(account="123456789012", region="us-east-1"),
    )
    template = Template.from_stack(stack).to_json()
    # Then the stack creates no warehouse bucket, key or database ...
    assert [k for k in resources_of(template, "AWS::S3::Bucket") if k.startswith("Warehouse")] == []
    assert [k for k in resources_of(template, "AWS::KMS::Key") if k.startswith("Warehouse")] == []
    assert not resources_of(template, "AWS::Glue::Database")
    # ... and the job's role writes under that prefix with that key
    glue = identity_statements(template, role_logical_id(template, ROLES["glue"]))
    s3 = _s3_resources(glue)
    assert s3["arn:<AWS::Partition>:s3:::company-lake/scd2/*"] >= {"s3:PutObject", "s3:DeleteObject"}
    key = [s for s in glue if s.get("Sid") == "WarehouseKey"]
    assert [flat(r) for s in key for r in as_list(s["Resource"])] == [
        "arn:aws:kms:us-east-1:123456789012:key/lake-key"
    ]
    # ... and the fetch role may decrypt the secret's key, through Secrets Manager only
    fetch = identity_statements(template, role_logical_id(template, ROLES["fetch"]))
    (secret_key,) = [s for s in fetch if s.get("Sid") == "SecretsKey"]
    assert secret_key["Action"] == "kms:Decrypt"
    assert secret_key["Condition"] == {
        "StringEquals": {"kms:ViaService": "secretsmanager.us-east-1.amazonaws.com"}
    }
    (job,) = resources_of(template, "AWS::Glue::Job").values()
    assert "warehouse=s3://company-lake/scd2 " in flat(job["Properties"]["DefaultArguments"]["--conf"]) + " "
