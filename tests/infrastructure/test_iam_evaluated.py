"""The access roles, evaluated by a real IAM policy evaluator on the synthesized templates: what
the migration's steps call is allowed, and what must never happen is denied.

The calls below are the ones Plan, Copy, Register, Validate and Rollback make with each role
(icelake/workflow/steps/, icelake/aws/catalog.py, icelake/migrate/copy/objects.py), with the IAM action
and resource ARNs AWS checks for them (e.g. Glue checks the catalog, the database and the table)."""

from __future__ import annotations

import pytest

from cdk.access import BUCKET_SETTINGS_READ
from cdk.consumers import CONSUMER_LIST_ACTIONS, CONSUMER_READ_ACTIONS
from icelake.local.lake import SOURCE_ACCOUNT, TARGET_ACCOUNT
from tests.infrastructure.conftest import Synth
from tests.infrastructure.iam_eval import Call, Stack, decide

REGION = "us-east-1"
SOURCE_ROLE, TARGET_ROLE = "icelake-source-read", "icelake-target-write"


def _glue(account: str, database: str, table: str | None = None) -> list[str]:
    arns = [
        f"arn:aws:glue:{REGION}:{account}:catalog",
        f"arn:aws:glue:{REGION}:{account}:database/{database}",
    ]
    return arns + ([f"arn:aws:glue:{REGION}:{account}:table/{database}/{table}"] if table else [])


def _calls(
    stack: Stack, role: str, why: str, actions: list[str], resources: list[str], **kw: object
) -> list[Call]:
    account = stack.account
    return [
        Call(f"{why}: {a} {r}", stack.role_arn(role), a, r, account, stack.role_policies(role), **kw)  # type: ignore[arg-type]
        for a in actions
        for r in resources
    ]


ORCHESTRATOR_ACCOUNT = "123456789012"
# the example's secret (examples/context-ingest.json)
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:icelake/crm/api-token-AbCdEf"
OTHER_SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:payroll/db-password-AbCdEf"


def test_the_fetch_role_reads_its_own_secret_and_no_other(synth: Synth) -> None:
    ingest = Stack(synth.templates["IcelakeIngest"], ORCHESTRATOR_ACCOUNT, REGION)
    own = _calls(ingest, "icelake-ingest-fetch", "own secret", ["secretsmanager:GetSecretValue"], [SECRET])
    other = _calls(
        ingest, "icelake-ingest-fetch", "other secret", ["secretsmanager:GetSecretValue"], [OTHER_SECRET]
    )
    assert decide(own + other) == ["Allowed", "ImplicitlyDenied"]


@pytest.fixture(scope="module")
def stacks(synth: Synth) -> tuple[Stack, Stack]:
    return (
        Stack(synth.templates["IcelakeSourceAccess"], SOURCE_ACCOUNT, REGION),
        Stack(synth.templates["IcelakeTargetAccess"], TARGET_ACCOUNT, REGION),
    )


def _needed(source: Stack, target: Stack) -> list[Call]:
    table = "s3://target-lake/warehouse/sales/orders"
    obj = "arn:aws:s3:::target-lake/warehouse/sales/orders/data/part-0.parquet"
    src_obj = "arn:aws:s3:::source-lake/warehouse/sales/orders/data/part-0.parquet"
    (key,) = [r for r, v in target.template["Resources"].items() if v["Type"] == "AWS::KMS::Key"]
    return [
        # Inventory and Plan read the source catalog and files
        *_calls(
            source,
            SOURCE_ROLE,
            "inventory",
            ["glue:GetDatabase", "glue:GetTables"],
            _glue(SOURCE_ACCOUNT, "sales"),
        ),
        *_calls(source, SOURCE_ROLE, "plan", ["glue:GetTable"], _glue(SOURCE_ACCOUNT, "sales", "orders")),
        *_calls(source, SOURCE_ROLE, "plan reads", ["s3:GetObject"], [src_obj]),
        *_calls(
            source,
            SOURCE_ROLE,
            "plan lists",
            ["s3:ListBucket"],
            ["arn:aws:s3:::source-lake"],
            context={"s3:prefix": "warehouse/sales/orders/"},
        ),
        # Copy: server-side copies are signed by the target role; it writes and stats the target
        *_calls(target, TARGET_ROLE, "copy reads the source", ["s3:GetObject"], [src_obj]),
        *_calls(
            target,
            TARGET_ROLE,
            "copy writes",
            ["s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"],
            [obj],
        ),
        *_calls(
            target,
            TARGET_ROLE,
            "validate lists",
            ["s3:ListBucket"],
            ["arn:aws:s3:::target-lake"],
            context={"s3:prefix": table.removeprefix("s3://target-lake/") + "/"},
        ),
        *_calls(
            target,
            TARGET_ROLE,
            "encrypt",
            ["kms:GenerateDataKey", "kms:Decrypt"],
            [target.arn(key)],
            resource_policy=target.key_policy(key),
        ),
        # Register creates the database when missing, then creates or moves the table
        *_calls(
            target,
            TARGET_ROLE,
            "register",
            ["glue:CreateDatabase", "glue:GetDatabase"],
            _glue(TARGET_ACCOUNT, "sales"),
        ),
        *_calls(
            target,
            TARGET_ROLE,
            "register",
            ["glue:GetTable", "glue:CreateTable", "glue:UpdateTable"],
            _glue(TARGET_ACCOUNT, "sales", "orders"),
        ),
        # Carry-over (issue 43): reads the target's metadata, writes the carried files, manifests
        # and metadata.json, moves the promoted table's pointer; reads the source only
        *_calls(
            target,
            TARGET_ROLE,
            "carry-over",
            ["s3:GetObject", "s3:PutObject"],
            ["arn:aws:s3:::target-lake/warehouse/sales/orders/metadata/00003-c.metadata.json"],
        ),
        *_calls(
            target,
            TARGET_ROLE,
            "carry-over moves",
            ["glue:UpdateTable"],
            _glue(TARGET_ACCOUNT, "sales", "orders"),
        ),
        *_calls(
            source,
            SOURCE_ROLE,
            "carry-over reads",
            ["glue:GetTable"],
            _glue(SOURCE_ACCOUNT, "sales", "orders"),
        ),
        # The assessment's consumer scan (issue 58) lists and reads the source's consumers
        *_calls(source, SOURCE_ROLE, "consumers", list(CONSUMER_LIST_ACTIONS), ["*"]),
        *_calls(
            source,
            SOURCE_ROLE,
            "consumers",
            [a for a in CONSUMER_READ_ACTIONS if a.startswith("athena:")],
            [f"arn:aws:athena:{REGION}:{SOURCE_ACCOUNT}:workgroup/primary"],
        ),
        *_calls(
            source,
            SOURCE_ROLE,
            "consumers",
            ["states:DescribeStateMachine"],
            [f"arn:aws:states:{REGION}:{SOURCE_ACCOUNT}:stateMachine:nightly-orders"],
        ),
        # Rollback deletes what the run journaled and restores or drops the table
        *_calls(target, TARGET_ROLE, "rollback", ["s3:DeleteObject"], [obj]),
        *_calls(
            target, TARGET_ROLE, "rollback", ["glue:DeleteTable"], _glue(TARGET_ACCOUNT, "sales", "orders")
        ),
    ]


# Every write the source role could attempt on a source table's objects and catalog entry.
SOURCE_S3_WRITES = [
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:DeleteObjectVersion",
    "s3:AbortMultipartUpload",
    "s3:PutObjectTagging",
    "s3:PutObjectAcl",
    "s3:RestoreObject",
]
SOURCE_TABLE_WRITES = [
    "glue:CreateTable",
    "glue:UpdateTable",
    "glue:DeleteTable",
    "glue:BatchDeleteTable",
    "glue:DeleteTableVersion",
    "glue:BatchDeleteTableVersion",
    "glue:CreatePartition",
    "glue:BatchCreatePartition",
    "glue:UpdatePartition",
    "glue:DeletePartition",
    "glue:BatchDeletePartition",
]


def _must_deny(source: Stack, target: Stack) -> list[Call]:
    src_obj = "arn:aws:s3:::source-lake/warehouse/sales/orders/data/part-0.parquet"
    return [
        # the source is never written: no write of any kind by the source role (without
        # source_allow_mark), in S3, the Glue catalog or Lake Formation (a carry-over reads it too)
        *_calls(source, SOURCE_ROLE, "source writes", SOURCE_S3_WRITES, [src_obj]),
        *_calls(
            source,
            SOURCE_ROLE,
            "source catalog writes",
            SOURCE_TABLE_WRITES,
            _glue(SOURCE_ACCOUNT, "sales", "orders"),
        ),
        *_calls(
            source,
            SOURCE_ROLE,
            "source catalog writes",
            ["glue:CreateDatabase", "glue:UpdateDatabase", "glue:DeleteDatabase"],
            _glue(SOURCE_ACCOUNT, "sales"),
        ),
        *_calls(
            source,
            SOURCE_ROLE,
            "source bucket writes",
            ["s3:PutBucketPolicy", "s3:DeleteBucket", "s3:PutLifecycleConfiguration"],
            ["arn:aws:s3:::source-lake"],
        ),
        # the consumer scan reads consumers and never edits, runs or downloads one
        *_calls(
            source,
            SOURCE_ROLE,
            "consumer edits",
            [
                "glue:UpdateJob",
                "glue:StartJobRun",
                "glue:UpdateCrawler",
                "athena:CreateNamedQuery",
                "athena:DeleteNamedQuery",
                "athena:UpdatePreparedStatement",
                "athena:StartQueryExecution",
                "states:UpdateStateMachine",
                "states:StartExecution",
                "lambda:UpdateFunctionConfiguration",
                "lambda:InvokeFunction",
                "lambda:GetFunction",
            ],
            ["*"],
        ),
        # the target role writes only under its prefix and databases, and never deletes the source
        # (a Glue call needs every ARN it names allowed: the shared catalog ARN alone decides nothing)
        *_calls(
            target,
            TARGET_ROLE,
            "outside the prefix",
            ["s3:PutObject", "s3:DeleteObject"],
            ["arn:aws:s3:::target-lake/other/x"],
        ),
        *_calls(target, TARGET_ROLE, "delete the source", ["s3:DeleteObject", "s3:PutObject"], [src_obj]),
        *_calls(
            target,
            TARGET_ROLE,
            "another database",
            ["glue:CreateTable", "glue:DeleteTable"],
            _glue(TARGET_ACCOUNT, "finance", "x")[1:],
        ),
    ]


def test_every_call_of_a_migration_is_allowed(stacks: tuple[Stack, Stack]) -> None:
    calls = _needed(*stacks)
    decisions = decide(calls)
    denied = [
        f"{c.why} ({c.principal}): {d}" for c, d in zip(calls, decisions, strict=True) if d != "Allowed"
    ]
    print(f"IAM: {len(calls)} calls evaluated, {len(denied)} denied")
    assert not denied, "\n".join(denied)


def test_what_must_never_happen_is_denied(stacks: tuple[Stack, Stack]) -> None:
    calls = _must_deny(*stacks)
    decisions = decide(calls)
    allowed = [c.why for c, d in zip(calls, decisions, strict=True) if d == "Allowed"]
    print(f"IAM: {len(calls)} must-deny cases, {len(calls) - len(allowed)} denied")
    assert not allowed, "\n".join(allowed)


@pytest.fixture(scope="module")
def cross_region() -> tuple[Stack, Stack]:
    """The access stacks of a source in us-east-1 and a target in eu-west-1, with Lake Formation
    carried (synthesized alone: no cdk-nag, fast)."""
    from aws_cdk import App, Environment
    from aws_cdk.assertions import Template

    from cdk.access import SourceAccessStack, TargetAccessStack
    from tests.infrastructure.helpers import example_settings

    settings = example_settings(
        source_account=SOURCE_ACCOUNT,
        target_account=TARGET_ACCOUNT,
        source_region="us-east-1",
        target_region="eu-west-1",
        table_bucket_arns=[],  # the example's is in us-east-1 (tests/infrastructure/test_table_buckets.py)
        source_locations=[{"bucket": "source-lake", "prefix": "warehouse"}],
        target_bucket="target-lake",
        target_prefix="warehouse",
        source_databases=["sales"],
        target_databases=["sales"],
        lake_formation_enabled=True,
    )
    source = SourceAccessStack(
        App(), "Source", settings=settings, env=Environment(account=SOURCE_ACCOUNT, region="us-east-1")
    )
    target = TargetAccessStack(
        App(), "Target", settings=settings, env=Environment(account=TARGET_ACCOUNT, region="eu-west-1")
    )
    return (
        Stack(Template.from_stack(source).to_json(), SOURCE_ACCOUNT, "us-east-1"),
        Stack(Template.from_stack(target).to_json(), TARGET_ACCOUNT, "eu-west-1"),
    )


def _glue_in(region: str, account: str, database: str, table: str) -> list[str]:
    return [
        f"arn:aws:glue:{region}:{account}:catalog",
        f"arn:aws:glue:{region}:{account}:database/{database}",
        f"arn:aws:glue:{region}:{account}:table/{database}/{table}",
    ]


def test_cross_region_and_lake_formation_calls_are_allowed_and_nothing_more(
    cross_region: tuple[Stack, Stack],
) -> None:
    source, target = cross_region
    (key,) = [r for r, v in target.template["Resources"].items() if v["Type"] == "AWS::KMS::Key"]
    src_obj = "arn:aws:s3:::source-lake/warehouse/sales/orders/data/part-0.parquet"
    dst_obj = "arn:aws:s3:::target-lake/warehouse/sales_eu/orders/data/part-0.parquet"
    lf_read = ["ListPermissions", "ListDataCellsFilter", "GetResourceLFTags", "GetLFTag"]
    lf_write = ["GrantPermissions", "CreateLFTag", "UpdateLFTag", "AddLFTagsToResource", "ListPermissions"]
    lf_write += ["GetDataCellsFilter", "CreateDataCellsFilter"]  # the source's filters, carried
    needed = [
        # each side finds its buckets' regions once; the source role reads its catalog in us-east-1
        *_calls(
            source,
            SOURCE_ROLE,
            "source bucket region and settings",
            ["s3:GetBucketLocation", *BUCKET_SETTINGS_READ],
            ["arn:aws:s3:::source-lake"],
        ),
        *_calls(
            target,
            TARGET_ROLE,
            "target bucket region and settings",
            ["s3:GetBucketLocation", *BUCKET_SETTINGS_READ],
            ["arn:aws:s3:::target-lake"],
        ),
        *_calls(
            source,
            SOURCE_ROLE,
            "source catalog",
            ["glue:GetTable"],
            _glue_in("us-east-1", SOURCE_ACCOUNT, "sales", "orders"),
        ),
        # Register reads the source's grants and tags, and carries them in the target
        *_calls(source, SOURCE_ROLE, "read grants and tags", [f"lakeformation:{a}" for a in lf_read], ["*"]),
        *_calls(target, TARGET_ROLE, "grant and tag", [f"lakeformation:{a}" for a in lf_write], ["*"]),
        # the copy, sent to eu-west-1, reads the us-east-1 source and writes under the target's key
        *_calls(target, TARGET_ROLE, "cross-region copy", ["s3:GetObject"], [src_obj]),
        *_calls(target, TARGET_ROLE, "cross-region copy", ["s3:PutObject"], [dst_obj]),
        *_calls(
            target,
            TARGET_ROLE,
            "key in eu-west-1",
            ["kms:GenerateDataKey", "kms:Decrypt"],
            [target.arn(key)],
            resource_policy=target.key_policy(key),
        ),
        *_calls(
            target,
            TARGET_ROLE,
            "register in eu-west-1",
            ["glue:GetTable", "glue:CreateTable", "glue:UpdateTable"],
            _glue_in("eu-west-1", TARGET_ACCOUNT, "sales", "orders"),
        ),
    ]
    must_deny = [
        # the source role grants, tags and creates nothing, in Lake Formation as anywhere
        *_calls(
            source,
            SOURCE_ROLE,
            "source grants",
            [
                f"lakeformation:{a}"
                for a in ("GrantPermissions", "CreateLFTag", "AddLFTagsToResource", "UpdateLFTag")
            ],
            ["*"],
        ),
        # the target role registers nothing in the target account's other region
        *_calls(
            target,
            TARGET_ROLE,
            "other region",
            ["glue:CreateTable", "glue:UpdateTable"],
            _glue_in("us-east-1", TARGET_ACCOUNT, "sales", "orders")[1:],
        ),
        # nor asks where buckets other than its own are
        *_calls(target, TARGET_ROLE, "other bucket", ["s3:GetBucketLocation"], ["arn:aws:s3:::payroll"]),
    ]
    assert "kms" in target.arn(key) and ":eu-west-1:" in target.arn(key)
    decisions = decide(needed + must_deny)
    wrong = [
        f"{c.why}: {d}"
        for c, d, want in zip(
            needed + must_deny,
            decisions,
            ["Allowed"] * len(needed) + ["denied"] * len(must_deny),
            strict=True,
        )
        if (d == "Allowed") != (want == "Allowed")
    ]
    print(f"IAM cross-region: {len(needed)} calls allowed, {len(must_deny)} must-deny cases")
    assert not wrong, "\n".join(wrong)


def test_the_consumer_scan_reads_the_code_prefixes_it_is_given_and_no_other() -> None:
    """consumer_code_prefixes (a DAG folder, a Glue scripts prefix): the source role reads and
    lists under them, and writes nothing there nor reads beside them (the source stack alone)."""
    from aws_cdk import App, Environment
    from aws_cdk.assertions import Template

    from cdk.access import SourceAccessStack
    from tests.infrastructure.helpers import example_settings

    assets = f"aws-glue-assets-{SOURCE_ACCOUNT}-{REGION}"
    settings = example_settings(
        consumer_code_prefixes=[
            {"bucket": "source-mwaa", "prefix": "dags"},
            {"bucket": assets, "prefix": "scripts"},
        ]
    )
    stack = SourceAccessStack(
        App(), "Source", settings=settings, env=Environment(account=SOURCE_ACCOUNT, region=REGION)
    )
    source = Stack(Template.from_stack(stack).to_json(), SOURCE_ACCOUNT, REGION)
    dag, script = (
        "arn:aws:s3:::source-mwaa/dags/orders_dag.py",
        f"arn:aws:s3:::{assets}/scripts/orders_etl.py",
    )
    mwaa = ["arn:aws:s3:::source-mwaa"]
    allowed = [
        *_calls(source, SOURCE_ROLE, "code", ["s3:GetObject"], [dag, script]),
        *_calls(source, SOURCE_ROLE, "code lists", ["s3:ListBucket"], mwaa, context={"s3:prefix": "dags/"}),
        *_calls(source, SOURCE_ROLE, "consumers", list(CONSUMER_LIST_ACTIONS), ["*"]),
    ]
    denied = [
        *_calls(source, SOURCE_ROLE, "code writes", ["s3:PutObject", "s3:DeleteObject"], [dag, script]),
        *_calls(source, SOURCE_ROLE, "beside", ["s3:GetObject"], ["arn:aws:s3:::source-mwaa/x.py"]),
        *_calls(
            source, SOURCE_ROLE, "lists beside", ["s3:ListBucket"], mwaa, context={"s3:prefix": "plugins/"}
        ),
    ]
    assert set(decide(allowed)) == {"Allowed"}
    assert "Allowed" not in decide(denied)
