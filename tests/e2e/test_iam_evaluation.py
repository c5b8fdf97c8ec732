"""Every AWS call of a real workflow run, evaluated by @cloud-copilot/iam-simulate against the
policies of the synthesized templates: a call the deployed roles would be denied fails here, naming
the call, the role and the missing permission."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cdk.app import build_app
from icelake.constants import ORCHESTRATOR_ACCOUNT_LOCAL
from icelake.ingest.deploy import deploy_ingest_workflow
from icelake.ingest.local_api import ApiServer, GeneratedSource, serve_pages
from icelake.ingest.local_run import API_SECRET, demo_fetch_config, demo_spec, run_ingest
from icelake.ingest.models import Watermark
from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution, start_embedded_aws
from icelake.local.lake import SOURCE_ACCOUNT, SOURCE_BUCKET, TARGET_ACCOUNT, TARGET_BUCKET
from icelake.workflow.client import read_report
from tests.iam.evaluator import OPERATIONS, Call, Recorder, Request, simulate, state_machine_recording
from tests.iam.templates import Deployed, Resolver, deployed
from tests.lake import Lake, add_source_table, commit

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]

STACK_ACCOUNTS = {
    "IcelakeOrchestrator": ORCHESTRATOR_ACCOUNT_LOCAL,
    "IcelakeIngest": ORCHESTRATOR_ACCOUNT_LOCAL,
    "IcelakeSourceAccess": SOURCE_ACCOUNT,
    "IcelakeTargetAccess": TARGET_ACCOUNT,
}
# The test lake as a deployment's configuration: same accounts, buckets, prefixes and databases.
CONTEXT = {
    "orchestrator_account": ORCHESTRATOR_ACCOUNT_LOCAL,
    "orchestrator_region": "us-east-1",
    "source_account": SOURCE_ACCOUNT,
    "target_account": TARGET_ACCOUNT,
    "source_locations": [{"bucket": SOURCE_BUCKET, "prefix": "lake"}],
    "source_databases": ["sales"],
    "target_bucket": TARGET_BUCKET,
    "target_prefix": "warehouse",
    "target_databases": ["sales"],
    # The ingestion workflow of tests/e2e/test_ingest_workflow's demo source: its secret and database.
    "ingest_enabled": True,
    "ingest_secret_arns": [
        f"arn:aws:secretsmanager:us-east-1:{ORCHESTRATOR_ACCOUNT_LOCAL}:secret:{API_SECRET}-??????"
    ],
    "ingest_databases": ["crm"],
    "ingest_sources": [],  # the test starts its executions itself
}
GLUE_SIZED = {"glue_threshold_bytes": 0}  # every table goes to the Glue job
BUCKET_ACCOUNTS = {SOURCE_BUCKET: SOURCE_ACCOUNT, TARGET_BUCKET: TARGET_ACCOUNT}


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Deployed, dict[str, dict[str, Any]]]:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    outdir = tmp_path_factory.mktemp("iam") / "cdk.out"
    assembly = build_app(CONTEXT, outdir=outdir).synth()
    templates = {s.stack_name: json.loads(Path(s.template_full_path).read_text()) for s in assembly.stacks}
    return deployed(templates, STACK_ACCOUNTS), templates


def _function_roles(templates: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Lambda function name -> the ARN of its execution role."""
    out = {}
    for stack, t in templates.items():
        for res in t["Resources"].values():
            if res["Type"] == "AWS::Lambda::Function":
                props = res["Properties"]
                role = t["Resources"][props["Role"]["Fn::GetAtt"][0]]["Properties"]["RoleName"]
                out[props["FunctionName"]] = f"arn:aws:iam::{STACK_ACCOUNTS[stack]}:role/{role}"
    return out


def _glue_roles(templates: dict[str, dict[str, Any]]) -> dict[str, str]:
    out = {}
    for stack, t in templates.items():
        for res in t["Resources"].values():
            if res["Type"] == "AWS::Glue::Job":
                props = res["Properties"]
                role = props["Role"]
                if isinstance(role, dict):
                    role = t["Resources"][role["Fn::GetAtt"][0]]["Properties"]["RoleName"]
                    role = f"arn:aws:iam::{STACK_ACCOUNTS[stack]}:role/{role}"
                out[props["Name"]] = role
    return out


def default_principal(functions: dict[str, str], jobs: dict[str, str]) -> Any:
    """Who signs a call made with default credentials: the Glue job whose run thread makes it, else
    the Lambda function being invoked, else nobody (the test harness)."""

    def principal() -> str | None:
        name = threading.current_thread().name
        if name.startswith("glue-"):
            return jobs[name.removeprefix("glue-")]
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        return functions[function] if function else None

    return principal


def requests_of(calls: list[Call], d: Deployed, aliases: dict[str, str]) -> list[tuple[Call, Request]]:
    """The IAM requests of the calls; `aliases` maps local resource ARNs (the lake's KMS key) to the
    deployed ones."""
    unmapped = sorted(
        {f"{c.service}:{c.operation}" for c in calls if (c.service, c.operation) not in OPERATIONS}
    )
    assert not unmapped, f"no IAM mapping for {unmapped}: add them to tests/iam/evaluator.py OPERATIONS"
    out = []
    for i, call in enumerate(calls):
        for j, (action, raw, *more) in enumerate(call.needs(d.bucket_keys)):
            resource = aliases.get(raw, raw)
            account = _resource_account(resource, call)
            assert call.principal in d.identity, f"{call.principal} is not a role of the synthesized stacks"
            policy = _resource_policy(resource, d)
            out.append(
                (
                    call,
                    Request(
                        id=f"{i}.{j}",
                        principal=call.principal,
                        action=action,
                        resource=resource,
                        resource_account=account,
                        identity_policies=d.identity[call.principal],
                        resource_policy=policy,
                        context=more[0] if more else {},
                    ),
                )
            )
    return out


def _state_machine_role(templates: dict[str, dict[str, Any]], stack: str) -> str:
    t = templates[stack]
    (machine,) = [v for v in t["Resources"].values() if v["Type"] == "AWS::StepFunctions::StateMachine"]
    return str(Resolver(t, ORCHESTRATOR_ACCOUNT_LOCAL).resolve(machine["Properties"]["RoleArn"]))


def _target_key_arn(templates: dict[str, dict[str, Any]]) -> str:
    t = templates["IcelakeTargetAccess"]
    (key,) = [k for k, v in t["Resources"].items() if v["Type"] == "AWS::KMS::Key"]
    return str(Resolver(t, TARGET_ACCOUNT).get_att(key, "Arn"))


def _resource_account(arn: str, call: Call) -> str:
    if arn.startswith("arn:aws:s3:::"):
        bucket = arn.removeprefix("arn:aws:s3:::").split("/", 1)[0]
        return BUCKET_ACCOUNTS.get(bucket, ORCHESTRATOR_ACCOUNT_LOCAL)
    parts = arn.split(":")
    return parts[4] if len(parts) > 4 and parts[4] else call.account


def _resource_policy(arn: str, d: Deployed) -> dict[str, Any] | None:
    if arn.startswith("arn:aws:s3:::"):
        return d.resource_policies.get(arn.split("/", 1)[0])
    return d.resource_policies.get(arn)


def test_every_call_of_a_migration_is_allowed_by_the_synthesized_policies(
    world: tuple[Lake, LocalDeployment], policies: tuple[Deployed, dict[str, dict[str, Any]]]
) -> None:
    lake, deployment = world
    d, templates = policies
    for name in ("orders", "customers"):
        add_source_table(lake, name, [[1, 2], [3]])
    recorder = Recorder(default_principal(_function_roles(templates), _glue_roles(templates)))

    machine_role = _state_machine_role(templates, "IcelakeOrchestrator")
    # An assessment (the buckets' settings read too), a full run, an incremental one and a verify in
    # Lambda, then one with every table sent to the Glue job, and a verify of it whose files the
    # Glue job checks.
    runs: tuple[tuple[str, str, dict[str, Any]], ...] = (
        ("iam-assess", "assess", {}),
        ("iam-full", "full", {}),
        ("iam-incr", "incremental", {}),
        ("iam-verify", "verify", {}),
        ("iam-glue", "full", GLUE_SIZED),
        ("iam-verify-glue", "verify", {"verify_glue_threshold_files": 0}),
    )
    for run_id, mode, options in runs:
        if mode == "incremental":
            commit(lake, "orders", [4])  # the test's own writes are not the workflow's
        if options and mode == "full":
            add_source_table(lake, "returns", [[5, 6], [7]])
        request = lake.request(run_id, mode=mode)
        if options:
            request.update(options={**request["options"], **options}, selection={"tables": ["sales.returns"]})
        with recorder.recording(), state_machine_recording(recorder, machine_role):
            result = run_execution(deployment.state_machine_arn, request, timeout=600, name=run_id)
        assert result.status == "SUCCEEDED", result.failure()
    # the Glue job checked the last verify's files, and found them whole
    (verified,) = read_report(result.output["report_uri"])["tables"]
    assert (verified["status"], verified["engines"]) == ("verified", {"verify": "glue"}), verified

    assert_all_allowed(recorder.calls, d, {lake.kms_key: _target_key_arn(templates)})


def assert_all_allowed(calls: list[Call], d: Deployed, aliases: dict[str, str]) -> None:
    pairs = requests_of(calls, d, aliases)
    decisions = simulate([r for _c, r in pairs])
    denied = [
        f"{c.service}:{c.operation} by {c.principal}: {r.action} on {r.resource} -> {decisions[r.id]}"
        for c, r in pairs
        if decisions[r.id] != "Allowed"
    ]
    by_role = Counter(c.principal.rsplit("/", 1)[-1] for c in calls)
    print(
        f"\nIAM: {len(calls)} AWS calls recorded ({dict(by_role)}), {len(pairs)} IAM requests "
        f"evaluated, {len(denied)} denied"
    )
    assert not denied, "calls the deployed roles would be denied:\n" + "\n".join(sorted(set(denied)))


def test_every_call_of_a_cutover_and_a_carry_over_is_allowed_by_the_synthesized_policies(
    world: tuple[Lake, LocalDeployment], policies: tuple[Deployed, dict[str, dict[str, Any]]]
) -> None:
    """A cutover, a run that finds a commit stranded after it, and the carry-over that brings it
    (issue 43): the source role reads only, the target role copies, writes the new snapshot's
    manifests and metadata.json and moves the Glue pointer."""
    lake, deployment = world
    d, templates = policies
    add_source_table(lake, "orders", [[1, 2], [3]])
    recorder = Recorder(default_principal(_function_roles(templates), _glue_roles(templates)))
    machine_role = _state_machine_role(templates, "IcelakeOrchestrator")
    expected = (
        ("iam-full", "full", "migrated"),
        ("iam-cutover", "cutover", "promoted"),
        ("iam-stranded", "incremental", "stranded"),
        ("iam-carry", "carry_over", "promoted"),
    )
    for run_id, mode, status in expected:
        if mode == "incremental":
            commit(lake, "orders", [4])  # a late writer after promotion (the test's, not the workflow's)
        with recorder.recording(), state_machine_recording(recorder, machine_role):
            result = run_execution(
                deployment.state_machine_arn, lake.request(run_id, mode=mode), timeout=600, name=run_id
            )
        assert result.status == "SUCCEEDED", result.failure()
        assert result.output["counts"] == {status: 1}, (run_id, result.output)
    assert_all_allowed(recorder.calls, d, {lake.kms_key: _target_key_arn(templates)})


@pytest.mark.spark
def test_every_call_of_an_ingestion_is_allowed_by_the_synthesized_policies(
    spark: Any, tmp_path: Path, policies: tuple[Deployed, dict[str, dict[str, Any]]]
) -> None:
    """Three runs of the ingestion workflow against a local API: the first creates the table, the
    second merges changes fetched since the watermark, the third lands a poison batch (a NULL key)
    that the merge moves to quarantine. Fetch, complete, the SCD2 merge job and the state machine."""
    d, templates = policies
    recorder = Recorder(default_principal(_function_roles(templates), _glue_roles(templates)))
    machine_role = _state_machine_role(templates, "IcelakeIngest")
    source = GeneratedSource(initial=20, seed=5, change_rate=0.3)
    poison: list[dict[str, Any]] = []
    with (
        ApiServer(serve_pages(lambda: source.records() + poison, token="t0ken")) as api,
        start_embedded_aws(REPO),
    ):
        deployment = deploy_ingest_workflow(
            local_warehouse=str(tmp_path / "warehouse"), secrets={API_SECRET: json.dumps({"token": "t0ken"})}
        )
        fetch = demo_fetch_config(api.url + "/customers", page_size=8).model_copy(
            update={"full_load": False, "watermark": Watermark(param="since", from_column="updated_at")}
        )
        spec = demo_spec("iam_ingest.crm.customers")
        for run, expected in enumerate(("SUCCEEDED", "SUCCEEDED", "FAILED")):
            source.advance()
            if expected == "FAILED":
                poison.append({"id": None, "name": "no key", "email": None, "tier": "x", "updated_at": 99})
            with recorder.recording(), state_machine_recording(recorder, machine_role):
                result = run_ingest(deployment.state_machine_arn, fetch, spec, name=f"iam-ingest-{run}")
            assert result.status == expected, result.failure()
        assert "quarantine" in json.dumps(result.failure()).lower(), result.failure()
    roles = {c.principal.rsplit("/", 1)[-1] for c in recorder.calls}
    assert {"icelake-ingest-fetch", "icelake-ingest-complete", "icelake-ingest-glue"} <= roles, roles
    assert_all_allowed(recorder.calls, d, {})
