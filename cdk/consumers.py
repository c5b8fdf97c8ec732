"""What the assessment's consumer scan reads in the source account (icelake/assess/consumers/,
docs/assessment.md "rewire.json"): the definitions of Glue jobs and crawlers, Athena's saved SQL,
state machines and Lambda functions, and the code under `consumer_code_prefixes`. Read only; the
source role gets it beside its table reads."""

from __future__ import annotations

from aws_cdk import aws_iam as iam

from cdk.common import list_prefix_statement
from cdk.config import Settings

# Listings without resource-level permissions in IAM: they take "*".
CONSUMER_LIST_ACTIONS = (
    "glue:GetJobs",
    "glue:GetCrawlers",
    "athena:ListWorkGroups",
    "states:ListStateMachines",
    "lambda:ListFunctions",
)
# Reads scoped to the source account's workgroups and state machines.
CONSUMER_READ_ACTIONS = (
    "athena:ListNamedQueries",
    "athena:BatchGetNamedQuery",
    "athena:ListPreparedStatements",
    "athena:GetPreparedStatement",
    "states:DescribeStateMachine",
)


def _scoped(s: Settings) -> list[str]:
    return [
        f"arn:aws:athena:{s.source_region}:{s.source_account}:workgroup/*",
        f"arn:aws:states:{s.source_region}:{s.source_account}:stateMachine:*",
    ]


def consumer_statements(s: Settings) -> list[iam.PolicyStatement]:
    statements = [
        iam.PolicyStatement(sid="ConsumersList", actions=list(CONSUMER_LIST_ACTIONS), resources=["*"]),
        iam.PolicyStatement(sid="ConsumersRead", actions=list(CONSUMER_READ_ACTIONS), resources=_scoped(s)),
    ]
    if s.consumer_code_prefixes:
        statements.append(
            iam.PolicyStatement(
                sid="ConsumerCode",
                actions=["s3:GetObject"],
                resources=[f"arn:aws:s3:::{p.bucket}/{p.object_pattern}" for p in s.consumer_code_prefixes],
            )
        )
        statements += [
            list_prefix_statement(f"ConsumerCodeList{i}", f"arn:aws:s3:::{p.bucket}", p.prefix)
            for i, p in enumerate(s.consumer_code_prefixes)
        ]
    return statements


def consumer_wildcards(s: Settings) -> list[str]:
    """cdk-nag's IAM5 `appliesTo` entries of the statements above."""
    return [
        "Resource::*",
        *(f"Resource::{arn}" for arn in _scoped(s)),
        *(f"Resource::arn:aws:s3:::{p.bucket}/{p.object_pattern}" for p in s.consumer_code_prefixes),
    ]
