"""S3 Tables as a target (issue 61): the target role of the deployed template, evaluated by the real
IAM evaluator, may do every call of a migration into a table bucket of `table_bucket_arns` (Plan,
Copy through the table's storage, Register, Validate, Rollback, Cutover), and may write no table
that lacks icelake's owner mark. The calls go through tests/iam's mapping (tests/iam/s3tables.py),
the same the recorded e2e evaluation uses."""

from __future__ import annotations

from typing import Any

import pytest

from cdk.config_values import ContextError
from cdk.table_buckets import OWNER_TAG, PROMOTED_TAG
from icelake.local.lake import SOURCE_ACCOUNT, TARGET_ACCOUNT
from tests.iam import evaluator
from tests.iam.s3tables import Tables
from tests.infrastructure.conftest import Synth
from tests.infrastructure.helpers import example_settings, identity_statements, role_logical_id
from tests.infrastructure.iam_eval import Call, Stack, decide

ROLE = "icelake-target-write"
BUCKET = f"arn:aws:s3tables:us-east-1:{TARGET_ACCOUNT}:bucket/lake"  # examples/context*.json
OTHER_BUCKET = f"arn:aws:s3tables:us-east-1:{TARGET_ACCOUNT}:bucket/finance"
OURS = {OWNER_TAG: f"{SOURCE_ACCOUNT}:sales.orders"}
# A storage bucket of each table (the service names them: an id, then --table-s3).
STORAGE = {
    "orders": "0a1b2c3d-orders-store--table-s3",
    "customers": "9f8e7d6c-customers-store--table-s3",
    "theirs": "5e5e5e5e-theirs-store--table-s3",
    "elsewhere": "4d4d4d4d-elsewhere-store--table-s3",
    "finance": "3c3c3c3c-finance-store--table-s3",
}


@pytest.fixture(scope="module")
def target(synth: Synth) -> Stack:
    return Stack(synth.templates["IcelakeTargetAccess"], TARGET_ACCOUNT)


@pytest.fixture(scope="module")
def tables() -> Tables:
    """Two tables icelake created (owner-marked), one someone else made in the same namespace, one
    another deployment's icelake made (marked with another source account), one in a bucket the
    deployment does not name."""
    t = Tables()
    for bucket, name, tags in (
        (BUCKET, "orders", OURS),
        (BUCKET, "customers", {OWNER_TAG: f"{SOURCE_ACCOUNT}:sales.customers", "team": "sales"}),
        (BUCKET, "theirs", {"team": "finance"}),
        (BUCKET, "elsewhere", {OWNER_TAG: "999999999999:sales.orders"}),
        (OTHER_BUCKET, "finance", OURS),
    ):
        arn = f"{bucket}/table/{STORAGE[name][:8]}-0000-4000-8000-{name}"
        t.add(bucket, "sales", name, arn, f"s3://{STORAGE[name]}", tags)
    return t


def _s3tables(
    operation: str, bucket: str = BUCKET, name: str | None = "orders", **more: Any
) -> evaluator.Call:
    params: dict[str, Any] = {"tableBucketARN": bucket, "namespace": "sales", **more}
    if name is not None:
        params["name"] = name
    return evaluator.Call(f"arn:aws:iam::{TARGET_ACCOUNT}:role/{ROLE}", "s3tables", operation, params)


def _storage(operation: str, table: str, key: str = "metadata/00001-a.metadata.json") -> evaluator.Call:
    params = {"Bucket": STORAGE[table], "Key": key}
    return evaluator.Call(f"arn:aws:iam::{TARGET_ACCOUNT}:role/{ROLE}", "s3", operation, params)


def _workflow_calls(tables: Tables) -> list[evaluator.Call]:
    """What a full run, a sync, a rollback and a cutover send for sales.orders (and a new table,
    sales.returns, that Plan creates with the owner mark)."""
    maintenance = {"type": "icebergSnapshotManagement", "value": {"status": "disabled"}}
    orders = tables.arns[(BUCKET, "sales", "orders")]
    token = {"versionToken": "t1", "metadataLocation": "s3://x/metadata/00002-b.metadata.json"}
    return [
        # Plan (and the assessment): the namespace, the table and its mark, its pointer, maintenance
        _s3tables("GetNamespace", name=None),
        _s3tables("CreateNamespace", name=None),
        _s3tables("GetTable", name="returns"),  # not there yet: IAM decides before the service looks
        _s3tables(
            "CreateTable",
            name="returns",
            format="ICEBERG",
            tags={OWNER_TAG: f"{SOURCE_ACCOUNT}:sales.returns"},
        ),
        _s3tables("GetTable"),
        _s3tables("ListTagsForResource", name=None, resourceArn=orders),
        _s3tables("GetTableMetadataLocation"),
        _s3tables("GetTableMaintenanceConfiguration"),
        _s3tables("PutTableMaintenanceConfiguration", **maintenance),
        _s3tables("GetTableBucketMaintenanceConfiguration", name=None),
        # Copy: read back what exists (HEAD), write with If-None-Match, large files in parts
        *(_storage(op, "orders", "data/part-0.parquet") for op in ("HeadObject", "GetObject", "PutObject")),
        *(
            _storage(op, "customers", "data/big.parquet")
            for op in (
                "CreateMultipartUpload",
                "UploadPart",
                "CompleteMultipartUpload",
                "AbortMultipartUpload",
            )
        ),
        # Register, then Validate reads through the pointer
        _s3tables("UpdateTableMetadataLocation", **token),
        _storage("GetObject", "orders"),
        # Rollback: the run's own table deleted, or the earlier pointer put back
        _s3tables("DeleteTable", name="customers", versionToken="t2"),
        _s3tables("UpdateTableMetadataLocation", **token),
        # Cutover: maintenance as the request says, and the promoted mark
        _s3tables("PutTableMaintenanceConfiguration", type="icebergCompaction", value={"status": "enabled"}),
        _s3tables("TagResource", name=None, resourceArn=orders, tags={PROMOTED_TAG: "2026-12-07T03:00:00Z"}),
    ]


def _must_deny_calls(tables: Tables) -> list[evaluator.Call]:
    """Writing a table icelake does not own: someone else's, another deployment's, or one in a
    table bucket this deployment does not name; marking a table as promoted that is not ours, or
    as another source account's. (Putting icelake's own owner mark on an unmarked table is not
    refused by IAM, which cannot tell it from the tag CreateTable sets: cdk/table_buckets.py.)"""
    token = {"versionToken": "t1", "metadataLocation": "s3://x/metadata/00009-z.metadata.json"}
    out = []
    for name in ("theirs", "elsewhere"):
        out += [
            _s3tables("UpdateTableMetadataLocation", name=name, **token),
            _s3tables("DeleteTable", name=name),
            _s3tables("PutTableMaintenanceConfiguration", name=name, type="icebergCompaction", value={}),
            _storage("PutObject", name, "data/part-0.parquet"),
            _storage("CreateMultipartUpload", name, "data/big.parquet"),
            _storage("GetObject", name, "data/part-0.parquet"),
            _s3tables(
                "TagResource",
                name=None,
                resourceArn=tables.arns[(BUCKET, "sales", name)],
                tags={PROMOTED_TAG: "2026-12-07T03:00:00Z"},
            ),
        ]
    out += [
        _s3tables("CreateTable", bucket=OTHER_BUCKET, name="orders", tags=OURS),
        _s3tables("CreateNamespace", bucket=OTHER_BUCKET, name=None),
        _s3tables("UpdateTableMetadataLocation", bucket=OTHER_BUCKET, name="finance", **token),
        _storage("PutObject", "finance", "data/part-0.parquet"),
        # tags: another key, or a value naming another source account
        _s3tables("CreateTable", name="returns", tags={OWNER_TAG: "999999999999:sales.returns"}),
        _s3tables("CreateTable", name="returns", tags={**OURS, "team": "sales"}),
    ]
    return out


def _evaluated(
    calls: list[evaluator.Call], target: Stack, tables: Tables
) -> list[tuple[evaluator.Call, list[tuple[Call, str]]]]:
    """Each call with its IAM requests and their decisions (a call is allowed when all are)."""
    requests: list[tuple[int, Call]] = []
    for i, c in enumerate(calls):
        for action, arn, *more in c.needs({}, tables):
            what = c.params.get("name") or c.params.get("Bucket")
            why = f"{c.service}:{c.operation} {what}: {action} on {arn}"
            policies = target.role_policies(ROLE)
            context = more[0] if more else {}
            requests.append(
                (i, Call(why, c.principal, action, arn, TARGET_ACCOUNT, policies, context=context))
            )
    decisions = decide([r for _i, r in requests])
    return [
        (c, [(r, d) for (j, r), d in zip(requests, decisions, strict=True) if j == i])
        for i, c in enumerate(calls)
    ]


def test_every_call_of_a_migration_into_a_table_bucket_is_allowed(target: Stack, tables: Tables) -> None:
    decided = [rd for _c, rds in _evaluated(_workflow_calls(tables), target, tables) for rd in rds]
    denied = [f"{r.why}: {d}" for r, d in decided if d != "Allowed"]
    print(f"IAM S3 Tables: {len(decided)} requests evaluated, {len(denied)} denied")
    assert not denied, "\n".join(denied)
    actions = {r.action for r, _ in decided}
    # the table's storage is authorized as the table's data, never as s3:* on the bucket
    assert {"s3tables:GetTableData", "s3tables:PutTableData"} <= actions
    assert not any(a.startswith("s3:") for a in actions)


def test_writing_a_table_icelake_does_not_own_is_denied(target: Stack, tables: Tables) -> None:
    decided = _evaluated(_must_deny_calls(tables), target, tables)
    allowed = [f"{c.operation} {c.params}" for c, rds in decided if all(d == "Allowed" for _r, d in rds)]
    print(f"IAM S3 Tables: {len(decided)} must-deny calls, {len(decided) - len(allowed)} denied")
    assert not allowed, "\n".join(allowed)
    # a write on a table not ours is refused by its own request, not by a neighbour's
    for c, rds in decided:
        if c.operation != "CreateTable":
            assert [d for _r, d in rds] == ["ImplicitlyDenied"], (c.operation, c.params, rds)


def test_the_role_conditions_on_the_marks_the_steps_put() -> None:
    from icelake.aws import s3tables

    assert (OWNER_TAG, PROMOTED_TAG) == (s3tables.OWNER_TAG, s3tables.PROMOTED_TAG)


def test_a_storage_operation_the_service_refuses_is_named() -> None:
    t = Tables()
    t.add(BUCKET, "sales", "orders", f"{BUCKET}/table/x", f"s3://{STORAGE['orders']}", OURS)
    for operation in ("CopyObject", "DeleteObject", "ListObjectsV2", "UploadPartCopy"):
        with pytest.raises(AssertionError, match="a table's storage, which accepts only"):
            _storage(operation, "orders").needs({}, t)


@pytest.mark.slow  # a stack synthesized on its own: jsii's start
def test_no_table_bucket_no_s3tables_permission() -> None:
    from aws_cdk import App, Environment
    from aws_cdk.assertions import Template

    from cdk.access import TargetAccessStack

    settings = example_settings(table_bucket_arns=[])
    stack = TargetAccessStack(
        App(), "Target", settings=settings, env=Environment(account=TARGET_ACCOUNT, region="us-east-1")
    )
    template = Template.from_stack(stack).to_json()
    statements = identity_statements(template, role_logical_id(template, ROLE))
    assert not [s for s in statements if "s3tables" in str(s.get("Action"))]


@pytest.mark.parametrize(
    ("arn", "said"),
    [
        (f"arn:aws:s3tables:eu-west-1:{TARGET_ACCOUNT}:bucket/lake", "is in eu-west-1, account 222222222222"),
        ("arn:aws:s3tables:us-east-1:999999999999:bucket/lake", "is in us-east-1, account 999999999999"),
        ("arn:aws:s3:::lake", "is not a table bucket ARN"),
        (f"arn:aws:s3tables:us-east-1:{TARGET_ACCOUNT}:bucket/lake--table-s3", "is not a table bucket name"),
    ],
)
def test_a_table_bucket_the_role_cannot_use_is_refused_in_one_line(arn: str, said: str) -> None:
    with pytest.raises(ContextError, match=said) as refused:
        example_settings(table_bucket_arns=[arn])
    assert "\n" not in str(refused.value)
    assert "table_bucket_arns" in str(refused.value)


def test_a_scheduled_sync_into_a_table_bucket_must_name_a_configured_one() -> None:
    request = example_settings().sync_request
    assert request is not None
    target = {k: v for k, v in request["target"].items() if k not in ("bucket", "prefix")}
    into = {**request, "target": {**target, "kind": "s3tables", "table_bucket_arn": BUCKET}}
    assert example_settings(sync_request=into).sync_request is not None
    other = {**into, "target": {**into["target"], "table_bucket_arn": OTHER_BUCKET}}
    with pytest.raises(ContextError, match=r"target.table_bucket_arn .*finance' is not in table_bucket_arns"):
        example_settings(sync_request=other)
