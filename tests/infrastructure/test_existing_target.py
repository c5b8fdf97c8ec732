"""An existing lake as the target (issue 60): `target_bucket_existing` and
`target_databases_existing` import what exists instead of creating it, so the stack neither fails
on a name that is taken nor ever owns (or deletes) someone else's bucket or databases; the target
role is granted them as it is granted what the stack creates, decided by the real IAM evaluator."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Environment
from aws_cdk.assertions import Template

from cdk.access import TargetAccessStack
from cdk.config_values import ContextError
from icelake.local.lake import TARGET_ACCOUNT
from tests.infrastructure.helpers import example_settings, resources_of
from tests.infrastructure.iam_eval import Call, Stack, decide

ROLE = "icelake-target-write"
LAKE_KEY = f"arn:aws:kms:us-east-1:{TARGET_ACCOUNT}:key/lake-key"
# A key's default policy (KMS grants nothing its key policy does not): the account's IAM policies
# decide, as docs/deploy.md asks of an existing bucket's key.
DEFAULT_KEY_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "Enable IAM User Permissions",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{TARGET_ACCOUNT}:root"},
            "Action": "kms:*",
            "Resource": "*",
        }
    ],
}


def _glue(database: str, table: str) -> list[str]:
    base = f"arn:aws:glue:us-east-1:{TARGET_ACCOUNT}"
    return [f"{base}:catalog", f"{base}:database/{database}", f"{base}:table/{database}/{table}"]


@pytest.fixture(scope="module")
def existing() -> Stack:
    """The target stack of an account that has the bucket `target-lake` (SSE-KMS by its own key)
    and the database `sales`, and gets a new database `finance` from icelake."""
    settings = example_settings(
        target_account=TARGET_ACCOUNT,
        target_databases=["sales", "finance"],
        target_bucket_existing=True,
        target_databases_existing=["sales"],
        target_kms_key_arn=LAKE_KEY,
    )
    stack = TargetAccessStack(
        App(), "Target", settings=settings, env=Environment(account=TARGET_ACCOUNT, region="us-east-1")
    )
    return Stack(Template.from_stack(stack).to_json(), TARGET_ACCOUNT)


def test_an_existing_bucket_and_database_are_not_created(existing: Stack) -> None:
    template = existing.template
    # no bucket at all (nor the access-log bucket of one), and no key: the bucket has its own
    assert resources_of(template, "AWS::S3::Bucket") == {}
    assert resources_of(template, "AWS::KMS::Key") == {}
    # the new database only, under the logical ID its place in target_databases gives it
    databases = {
        k: v["Properties"]["DatabaseInput"]["Name"]
        for k, v in resources_of(template, "AWS::Glue::Database").items()
    }
    assert databases == {"Database1": "finance"}
    # ... retained, as every database the stacks create
    assert template["Resources"]["Database1"]["DeletionPolicy"] == "Retain"
    # the statements the bucket's owner adds to its policy are an output
    outputs = template["Outputs"]
    assert "TargetKeyArn" not in outputs
    statements = json.loads(outputs["TargetBucketPolicyStatement"]["Value"])
    assert {s["Sid"] for s in statements} >= {"IcelakeTargetRoleObjects", "IcelakeTargetRoleLists"}


def _needed(stack: Stack, bucket_policy: dict[str, Any] | None) -> list[Call]:
    obj = "arn:aws:s3:::target-lake/warehouse/sales/orders/data/part-0.parquet"
    tls = {"aws:SecureTransport": "true"}
    policies = stack.role_policies(ROLE)
    principal = stack.role_arn(ROLE)

    def call(why: str, action: str, resource: str, **kw: Any) -> Call:
        return Call(why, principal, action, resource, TARGET_ACCOUNT, policies, **kw)

    calls = [
        call("copy writes", a, obj, resource_policy=bucket_policy, context=tls)
        for a in ("s3:PutObject", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload")
    ]
    calls += [
        call(
            "validate lists",
            "s3:ListBucket",
            "arn:aws:s3:::target-lake",
            resource_policy=bucket_policy,
            context={"s3:prefix": "warehouse/sales/orders/", **tls},
        ),
        call(
            "bucket region", "s3:GetBucketLocation", "arn:aws:s3:::target-lake", resource_policy=bucket_policy
        ),
        call("encrypt", "kms:GenerateDataKey", LAKE_KEY, resource_policy=DEFAULT_KEY_POLICY),
        call("decrypt", "kms:Decrypt", LAKE_KEY, resource_policy=DEFAULT_KEY_POLICY),
    ]
    for database in ("sales", "finance"):  # the existing one and the created one alike
        calls += [
            call(f"register in {database}", a, arn)
            for a in ("glue:GetTable", "glue:CreateTable", "glue:UpdateTable", "glue:DeleteTable")
            for arn in _glue(database, "orders")
        ]
    return calls


def test_the_role_is_granted_the_existing_bucket_and_databases(existing: Stack) -> None:
    outputs = existing.template["Outputs"]
    bucket_policy = {
        "Version": "2012-10-17",
        "Statement": json.loads(outputs["TargetBucketPolicyStatement"]["Value"]),
    }
    # by its identity policy alone (the bucket's own account), and with the documented bucket policy
    calls = _needed(existing, None) + _needed(existing, bucket_policy)
    decisions = decide(calls)
    denied = [
        f"{c.why} {c.action} {c.resource}: {d}"
        for c, d in zip(calls, decisions, strict=True)
        if d != "Allowed"
    ]
    print(f"IAM existing target: {len(calls)} calls evaluated, {len(denied)} denied")
    assert not denied, "\n".join(denied)
    # and the documented policy still refuses plain HTTP, as the stack's own bucket does
    (plain,) = decide(
        [
            Call(
                "plain http",
                existing.role_arn(ROLE),
                "s3:GetObject",
                "arn:aws:s3:::target-lake/warehouse/sales/orders/data/part-0.parquet",
                TARGET_ACCOUNT,
                existing.role_policies(ROLE),
                resource_policy=bucket_policy,
                context={"aws:SecureTransport": "false"},
            )
        ]
    )
    assert plain == "ExplicitlyDenied"


def test_existing_names_that_do_not_agree_are_refused() -> None:
    with pytest.raises(ContextError, match=r"target_databases_existing names \['crm'\], which are not in"):
        example_settings(target_databases_existing=["crm"])
    with pytest.raises(ContextError, match="target_kms_key_arn is the key of an existing target bucket"):
        example_settings(target_kms_key_arn=LAKE_KEY)
