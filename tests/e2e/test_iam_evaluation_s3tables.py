"""Every AWS call of migrations into an S3 Tables table bucket (issue 61), recorded on the embedded
AWS and evaluated by @cloud-copilot/iam-simulate against the templates synthesized with the table
bucket in `table_bucket_arns`: an assessment, a full run whose Validate fails for one table (the
table it created deleted), a sync, and a cutover (maintenance set, the promoted mark) make no call
the deployed roles would be denied. And the same writes, on a table that does not carry icelake's
owner mark, are denied every one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cdk.app import build_app
from cdk.table_buckets import OWNER_TAG
from icelake.assess.gather.table_bucket import NEW_TABLE_BUCKET
from icelake.aws import s3tables
from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution
from icelake.local.lake import SAMPLE_TABLE_BUCKET, TARGET_ACCOUNT, publish_sample_tables
from icelake.workflow.steps import validating
from tests.e2e.test_iam_evaluation import (
    CONTEXT,
    STACK_ACCOUNTS,
    _function_roles,
    _glue_roles,
    _resource_account,
    _resource_policy,
    _state_machine_role,
    default_principal,
)
from tests.iam import s3tables as iam_s3tables
from tests.iam.evaluator import Call, Recorder, Request, simulate, state_machine_recording
from tests.iam.templates import Deployed, deployed
from tests.lake import Lake

pytestmark = pytest.mark.slow
BUCKET_ARN = f"arn:aws:s3tables:us-east-1:{TARGET_ACCOUNT}:bucket/{SAMPLE_TABLE_BUCKET}"
# What the table bucket's writes are, as IAM names them: denied on a table icelake does not own.
WRITES = {
    "s3tables:PutTableData",
    "s3tables:UpdateTableMetadataLocation",
    "s3tables:DeleteTable",
    "s3tables:PutTableMaintenanceConfiguration",
}


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Deployed, dict[str, dict[str, Any]]]:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    outdir = tmp_path_factory.mktemp("iam-s3tables") / "cdk.out"
    assembly = build_app(CONTEXT | {"table_bucket_arns": [BUCKET_ARN]}, outdir=outdir).synth()
    templates = {s.stack_name: json.loads(Path(s.template_full_path).read_text()) for s in assembly.stacks}
    return deployed(templates, STACK_ACCOUNTS), templates


def _request(lake: Lake, run_id: str, **overrides: Any) -> dict[str, Any]:
    request = lake.request(run_id, **overrides)
    for field in ("bucket", "prefix", "kms_key_id"):
        request["target"].pop(field)
    request["target"].update(kind="s3tables", table_bucket_arn=BUCKET_ARN, database_prefix="migrated_")
    return request


def _seen_tables(monkeypatch: pytest.MonkeyPatch) -> iam_s3tables.Tables:
    """What IAM knows of each table the runs touch, which the calls do not say (its ARN with the
    service's id, its storage bucket, its tags): taken from every answer icelake's own lookup
    (s3tables.find) gets, so a table a rollback deleted is known too."""
    tables = iam_s3tables.Tables()
    real = s3tables.find

    def seen(client: Any, ref: s3tables.TableRef) -> s3tables.Found | None:
        found = real(client, ref)
        if found is not None:
            tags = {OWNER_TAG: found.owner} if found.owner else {}
            tables.add(ref.bucket_arn, ref.namespace, ref.name, found.arn, found.warehouse_location, tags)
        return found

    monkeypatch.setattr(s3tables, "find", seen)
    return tables


def _failing(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The source tables whose Validate finds a problem (after their copy and commit), as a real
    mismatch would: the set returned, which the test fills and empties."""
    failing: set[str] = set()
    real = validating._catalog_problems

    def problems(planned: Any, sessions: Any) -> list[str]:
        if planned.item.source_table in failing:
            return [f"injected failure of {planned.item.source_table}"]
        return real(planned, sessions)

    monkeypatch.setattr(validating, "_catalog_problems", problems)
    return failing


def _requests(calls: list[Call], d: Deployed, tables: iam_s3tables.Tables) -> list[tuple[Call, Request]]:
    """The IAM requests of the calls, S3 Tables' through tests/iam/s3tables.py. The HEADs an
    assessment counts for a table Plan has not created are answered without being sent
    (icelake/assess/gather/table_bucket.new_table_io): they need no permission."""
    out = []
    for i, call in enumerate(calls):
        if call.params.get("Bucket") == NEW_TABLE_BUCKET:
            continue
        for j, (action, resource, *more) in enumerate(call.needs(d.bucket_keys, tables)):
            assert call.principal in d.identity, f"{call.principal} is not a role of the synthesized stacks"
            request = Request(
                id=f"{i}.{j}",
                principal=call.principal,
                action=action,
                resource=resource,
                resource_account=_resource_account(resource, call),
                identity_policies=d.identity[call.principal],
                resource_policy=_resource_policy(resource, d),
                context=more[0] if more else {},
            )
            out.append((call, request))
    return out


def test_every_call_of_a_migration_into_a_table_bucket_is_allowed_and_no_other_table_is_written(
    world: tuple[Lake, LocalDeployment],
    policies: tuple[Deployed, dict[str, dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lake, deployment = world
    d, templates = policies
    publish_sample_tables(lake)  # sales.orders and sales.customers; the table bucket "lake"
    tables = _seen_tables(monkeypatch)
    recorder = Recorder(default_principal(_function_roles(templates), _glue_roles(templates)))
    machine_role = _state_machine_role(templates, "IcelakeOrchestrator")

    # When an assessment, a full run (customers' Validate failing: the table it made is deleted),
    # a sync and a cutover of orders run into the table bucket
    runs: list[tuple[str, dict[str, Any], str | None]] = [
        ("s3t-iam-assess", {"mode": "assess"}, None),
        ("s3t-iam-full", {}, "customers"),
        ("s3t-iam-sync", {"mode": "incremental"}, None),
        ("s3t-iam-cutover", {"mode": "cutover", "selection": {"tables": ["sales.orders"]}}, None),
    ]
    failing = _failing(monkeypatch)
    statuses = []
    for run_id, overrides, fails in runs:
        failing.clear()
        failing.update([fails] if fails else [])
        request = _request(lake, run_id, **overrides)
        with recorder.recording(), state_machine_recording(recorder, machine_role):
            result = run_execution(deployment.state_machine_arn, request, timeout=600, name=run_id)
        assert result.status == "SUCCEEDED", result.failure()
        statuses.append(result.output["counts"])
    assert statuses[1] == {"migrated": 1, "rolled_back": 1}, statuses
    assert statuses[3] == {"promoted": 1}, statuses

    # Then every call is allowed by the synthesized policies
    pairs = _requests(recorder.calls, d, tables)
    decisions = simulate([r for _c, r in pairs])
    denied = sorted(
        {
            f"{c.service}:{c.operation} by {c.principal}: {r.action} on {r.resource} -> {decisions[r.id]}"
            for c, r in pairs
            if decisions[r.id] != "Allowed"
        }
    )
    actions = {r.action for _c, r in pairs}
    recorded = len(recorder.calls)
    print(f"\nIAM S3 Tables: {recorded} AWS calls recorded, {len(pairs)} IAM requests, {len(denied)} denied")
    assert not denied, "calls the deployed roles would be denied:\n" + "\n".join(denied)
    # ... and the runs did write the table bucket: every kind of write was among them
    assert WRITES | {"s3tables:CreateTable", "s3tables:TagResource", "s3tables:GetTableData"} <= actions, (
        actions
    )

    # And each of those writes, sent to a table that carries no owner mark of icelake's, is denied
    foreign = iam_s3tables.Tables(
        arns=dict(tables.arns),
        tags={arn: {"team": "finance"} for arn in tables.tags},
        storage=dict(tables.storage),
    )
    writes = [(c, r) for c, r in _requests(recorder.calls, d, foreign) if r.action in WRITES]
    refused = simulate([r for _c, r in writes])
    allowed = sorted({f"{r.action} on {r.resource}" for _c, r in writes if refused[r.id] == "Allowed"})
    print(f"IAM S3 Tables: {len(writes)} writes on tables not icelake's, {len(writes) - len(allowed)} denied")
    assert writes and not allowed, allowed
