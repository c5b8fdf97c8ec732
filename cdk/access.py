"""The roles the orchestrator assumes: read-only in the source account, prefix-scoped writes in the
target account (with the target bucket, its KMS key, the Glue databases and Lake Formation)."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import CfnOutput, CfnResource, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lakeformation as lakeformation
from aws_cdk import aws_s3 as s3
from cdk_nag import NagSuppressions
from constructs import Construct

from cdk.buckets import AccessLogBucket, encrypted_bucket
from cdk.common import GlueDatabases, glue_catalog_arns, list_prefix_statement
from cdk.component import IcelakeStack, arn_of
from cdk.config import SOURCE_ROLE_NAME, TARGET_ROLE_NAME, Settings
from cdk.config_values import BucketPrefix
from cdk.consumers import (
    CONSUMER_LIST_ACTIONS,
    CONSUMER_READ_ACTIONS,
    consumer_statements,
    consumer_wildcards,
)
from cdk.table_buckets import table_bucket_statements, table_bucket_wildcards

# What the assessment reads of each bucket to compare the source's with the target's
# (icelake/assess/gather/buckets.py): settings only, never an object.
BUCKET_SETTINGS_READ = (
    "s3:GetBucketVersioning",
    "s3:GetEncryptionConfiguration",
    "s3:GetLifecycleConfiguration",
    "s3:GetBucketObjectLockConfiguration",
    "s3:GetReplicationConfiguration",
    "s3:GetBucketNotification",
    "s3:GetIntelligentTieringConfiguration",
)
# Read-only actions of the source role; tests assert nothing else ever appears there.
SOURCE_READ_ACTIONS = (
    "s3:GetObject",
    "s3:ListBucket",
    "s3:GetBucketLocation",
    *BUCKET_SETTINGS_READ,
    "glue:GetDatabase",
    "glue:GetDatabases",
    "glue:GetTable",
    "glue:GetTables",
    "kms:Decrypt",
    *("lakeformation:ListPermissions", "lakeformation:ListDataCellsFilter"),
    *("lakeformation:GetResourceLFTags", "lakeformation:GetLFTag"),
    *CONSUMER_LIST_ACTIONS,  # the assessment's consumer scan: definitions read, never edited
    *CONSUMER_READ_ACTIONS,
)
# What Register does in the target's Lake Formation (target.lake_formation, lake_formation_principals):
# read what the target grants, grant what is missing, create missing LF-tags and tag the table.
TARGET_LAKE_FORMATION_ACTIONS = (
    "lakeformation:GetDataAccess",
    "lakeformation:ListPermissions",
    "lakeformation:GrantPermissions",
    "lakeformation:GetLFTag",
    "lakeformation:CreateLFTag",
    "lakeformation:UpdateLFTag",
    "lakeformation:GetResourceLFTags",
    "lakeformation:AddLFTagsToResource",
    # the source's data cells filters, created on the target and granted (icelake/aws/data_filters.py)
    "lakeformation:GetDataCellsFilter",
    "lakeformation:CreateDataCellsFilter",
)


def orchestrator_principal(settings: Settings) -> iam.IPrincipal:
    """Only the orchestrator's step Lambdas and Glue job, not the whole account. By account and
    aws:PrincipalArn rather than by role ARN, so that the stacks deploy in any order."""
    conditions: dict[str, object] = {"ArnEquals": {"aws:PrincipalArn": settings.orchestrator_principal_arns}}
    if settings.source_external_id:
        conditions["StringEquals"] = {"sts:ExternalId": settings.source_external_id}
    return iam.AccountPrincipal(settings.orchestrator_account).with_conditions(conditions)


def access_role(scope: Construct, cid: str, name: str, settings: Settings, does: str) -> iam.Role:
    """A role of a source or target account (the source's, the target's): assumed by the
    orchestrator (`orchestrator_principal`) and, if named, by operators (`trust_operators`)."""
    role = iam.Role(
        scope,
        cid,
        role_name=name,
        assumed_by=orchestrator_principal(settings),
        max_session_duration=Duration.hours(1),  # assumed by role sessions: chaining caps it at 1 h
        description=f"icelake: {does}",
    )
    trust_operators(role, settings)
    return role


def trust_operators(role: iam.Role, settings: Settings) -> None:
    """Opt in (operator_principal_arns): the named principals may assume the role too, for an
    operator's CLI to read or write directly. One statement per account, by account and
    aws:PrincipalArn (ArnLike: an SSO role's path holds its region), so the principals need not
    exist when the stack deploys; the external id applies to them as to the orchestrator."""
    by_account: dict[str, list[str]] = {}
    for arn in settings.operator_principal_arns:
        by_account.setdefault(arn.split(":")[4], []).append(arn)
    for i, (account, arns) in enumerate(sorted(by_account.items())):
        conditions: dict[str, Any] = {"ArnLike": {"aws:PrincipalArn": arns}}
        if settings.source_external_id:
            conditions["StringEquals"] = {"sts:ExternalId": settings.source_external_id}
        trust = role.assume_role_policy
        assert trust is not None
        trust.add_statements(
            iam.PolicyStatement(
                sid=f"Operators{i}",
                actions=["sts:AssumeRole"],
                principals=[iam.AccountPrincipal(account)],
                conditions=conditions,
            )
        )


def _bucket_location(sid: str, buckets: list[str]) -> iam.PolicyStatement:
    """GetBucketLocation: S3 requests go to each bucket's own region, asked once per bucket; and
    the bucket's settings, which the assessment compares."""
    return iam.PolicyStatement(
        sid=sid,
        actions=["s3:GetBucketLocation", *BUCKET_SETTINGS_READ],
        resources=[f"arn:aws:s3:::{b}" for b in dict.fromkeys(buckets)],
    )


def _s3_read(locations: tuple[BucketPrefix, ...], sid: str) -> list[iam.PolicyStatement]:
    statements = [
        iam.PolicyStatement(
            sid=f"{sid}Objects",
            actions=["s3:GetObject"],
            resources=[f"arn:aws:s3:::{loc.bucket}/{loc.object_pattern}" for loc in locations],
        )
    ]
    for i, loc in enumerate(locations):
        statements.append(list_prefix_statement(f"{sid}List{i}", f"arn:aws:s3:::{loc.bucket}", loc.prefix))
    return statements


def target_bucket_statements(settings: Settings) -> list[dict[str, Any]]:
    """What the policy of an existing target bucket (target_bucket_existing) must allow the target
    role, as the bucket the stack creates is used: its objects under the prefix, the listing of the
    prefix, the bucket's region and the settings the assessment compares; and TLS only, as the
    stack's own bucket. The role's identity policy grants the same: in the bucket's own account
    these are needed only where the bucket policy denies what it does not name."""
    loc = settings.target_location
    bucket = f"arn:aws:s3:::{loc.bucket}"
    role = {"AWS": settings.target_role_arn}
    prefix = loc.prefix.strip("/")
    listing: dict[str, Any] = {
        "Sid": "IcelakeTargetRoleLists",
        "Effect": "Allow",
        "Principal": role,
        "Action": "s3:ListBucket",
        "Resource": bucket,
    }
    if prefix:
        listing["Condition"] = {"StringLike": {"s3:prefix": [f"{prefix}/*", prefix]}}
    return [
        {
            "Sid": "IcelakeTargetRoleObjects",
            "Effect": "Allow",
            "Principal": role,
            "Action": [
                "s3:GetObject",
                "s3:PutObject",
                "s3:DeleteObject",
                "s3:AbortMultipartUpload",
                "s3:ListMultipartUploadParts",
            ],
            "Resource": f"{bucket}/{loc.object_pattern}",
        },
        listing,
        {
            "Sid": "IcelakeTargetRoleBucketSettings",
            "Effect": "Allow",
            "Principal": role,
            "Action": ["s3:GetBucketLocation", *BUCKET_SETTINGS_READ],
            "Resource": bucket,
        },
        {
            "Sid": "TlsOnly",
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Action": "s3:*",
            "Resource": [bucket, f"{bucket}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        },
    ]


class SourceAccessStack(IcelakeStack):
    """Deployed in the source account: what the orchestrator may read there, and nothing more."""

    def __init__(self, scope: Construct, cid: str, *, settings: Settings, **kw: object):
        super().__init__(scope, cid, **kw)  # type: ignore[arg-type]
        s = settings
        self.role = access_role(
            self,
            "SourceRole",
            SOURCE_ROLE_NAME,
            s,
            "read-only access to the source Iceberg tables (S3, Glue, KMS)",
        )
        statements = [
            *_s3_read(s.source_locations, "SourceData"),
            _bucket_location("SourceBucketRegions", [loc.bucket for loc in s.source_locations]),
            iam.PolicyStatement(
                sid="Catalog",
                actions=["glue:GetDatabase", "glue:GetDatabases", "glue:GetTable", "glue:GetTables"],
                resources=glue_catalog_arns(self, s.source_databases),
            ),
            *consumer_statements(s),
        ]
        if s.source_kms_key_arns:
            statements.append(
                iam.PolicyStatement(
                    sid="Decrypt", actions=["kms:Decrypt"], resources=list(s.source_kms_key_arns)
                )
            )
        if s.lake_formation_enabled:  # target.lake_formation: the source's grants and tags, read only
            statements.append(
                iam.PolicyStatement(
                    sid="LakeFormationRead",
                    actions=[a for a in SOURCE_READ_ACTIONS if a.startswith("lakeformation:")],
                    resources=["*"],  # Lake Formation actions have no resource-level permissions
                )
            )
        if s.source_allow_mark:  # cutover's options.mark_source: a parameter on the source table
            statements.append(
                iam.PolicyStatement(
                    sid="MarkPromoted",
                    actions=["glue:UpdateTable"],
                    resources=glue_catalog_arns(self, s.source_databases),
                )
            )
        self.policy = iam.Policy(self, "ReadOnly", roles=[self.role], statements=statements)
        NagSuppressions.add_resource_suppressions(
            [self.role, self.policy],
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "Read-only: every object under the named source prefixes and every table of "
                    "the named source databases is part of a migration; Lake Formation's read actions "
                    "have no resource-level permissions, nor do the consumer scan's listings (Glue jobs "
                    "and crawlers, workgroups, state machines, functions), whose reads take every "
                    "workgroup, state machine and object under the named code prefixes.",
                    "appliesTo": [
                        *(
                            f"Resource::arn:aws:s3:::{loc.bucket}/{loc.object_pattern}"
                            for loc in s.source_locations
                        ),
                        *(
                            f"Resource::arn:<AWS::Partition>:glue:{s.source_region}:{s.source_account}:table/{db}/*"
                            for db in s.source_databases
                        ),
                        *consumer_wildcards(s),
                    ],
                }
            ],
            apply_to_children=True,
        )
        # S3 server-side copies (CopyObject / UploadPartCopy) are signed by the *target* role, so the
        # source bucket must let it read the prefixes too. The source buckets are not this stack's
        # (their policies belong to their owners): the statement to add is an output.
        for i, loc in enumerate(s.source_locations):
            CfnOutput(
                self,
                f"SourceBucketPolicyStatement{i}",
                description=f"Add to the bucket policy of {loc.bucket} (and key policies: kms:Decrypt)",
                value=json.dumps(
                    {
                        "Sid": "IcelakeTargetRoleReadsForServerSideCopy",
                        "Effect": "Allow",
                        "Principal": {"AWS": s.target_role_arn},
                        "Action": "s3:GetObject",
                        "Resource": f"arn:aws:s3:::{loc.bucket}/{loc.object_pattern}",
                    }
                ),
            )
        CfnOutput(self, "SourceRoleArn", value=self.role.role_arn)


class TargetAccessStack(IcelakeStack):
    """Deployed in the target account: the target bucket and key, Glue databases, and the role."""

    def __init__(self, scope: Construct, cid: str, *, settings: Settings, **kw: object):
        super().__init__(scope, cid, **kw)  # type: ignore[arg-type]
        s = settings
        self.key: kms.IKey | None = None
        if s.target_bucket_existing:  # someone else's: imported, never created nor deleted here
            self.bucket: s3.IBucket = s3.Bucket.from_bucket_name(self, "TargetBucket", s.target_bucket)
            key_arns = [s.target_kms_key_arn] if s.target_kms_key_arn else []
        else:
            self.key, self.bucket = self._bucket_and_key(s)
            key_arns = [self.key.key_arn]
        location = s.target_location
        prefix = location.prefix.strip("/")
        self.databases = GlueDatabases(
            self,
            "Database",
            databases=s.target_databases,
            location=f"s3://{s.target_bucket}" + (f"/{prefix}" if prefix else ""),
            description="icelake migration target",
            existing=s.target_databases_existing,
        ).databases
        self.role = access_role(
            self,
            "TargetRole",
            TARGET_ROLE_NAME,
            s,
            "writes only under the target prefix and to the target Glue databases",
        )
        objects = self.bucket.arn_for_objects(location.object_pattern)
        statements = [
            iam.PolicyStatement(
                sid="TargetObjects",
                actions=[
                    "s3:GetObject",
                    "s3:PutObject",
                    "s3:DeleteObject",
                    "s3:AbortMultipartUpload",
                    "s3:ListMultipartUploadParts",
                ],
                resources=[objects],
            ),
            list_prefix_statement("TargetList", self.bucket.bucket_arn, location.prefix),
            iam.PolicyStatement(
                sid="TargetBucketRegion",
                actions=["s3:GetBucketLocation", *BUCKET_SETTINGS_READ],
                resources=[self.bucket.bucket_arn],
            ),
            # Server-side copies are signed by this role: it reads the source prefixes (read only).
            *_s3_read(s.source_locations, "SourceCopy"),
            *(
                [
                    iam.PolicyStatement(
                        sid="TargetKey",
                        actions=["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"],
                        resources=key_arns,
                    )
                ]
                if key_arns
                else []
            ),
            iam.PolicyStatement(
                sid="Catalog",
                actions=[
                    "glue:GetDatabase",
                    # Register creates the target database when it is missing (ensure_database); IAM
                    # is checked before existence, so without it Register is denied for every table.
                    "glue:CreateDatabase",
                    "glue:GetTable",
                    "glue:GetTables",
                    "glue:CreateTable",
                    "glue:UpdateTable",
                    "glue:DeleteTable",
                ],
                resources=glue_catalog_arns(self, s.target_databases),
            ),
            *table_bucket_statements(s),  # target.kind s3tables: the tables it creates, owner-marked
        ]
        if s.source_kms_key_arns:
            statements.append(
                iam.PolicyStatement(
                    sid="SourceDecrypt", actions=["kms:Decrypt"], resources=list(s.source_kms_key_arns)
                )
            )
        if s.lake_formation_enabled:
            statements.append(
                iam.PolicyStatement(
                    sid="LakeFormation",
                    actions=list(TARGET_LAKE_FORMATION_ACTIONS),
                    resources=["*"],
                )
            )
        self.policy = iam.Policy(self, "Write", roles=[self.role], statements=statements)
        bucket_arn = f"arn:aws:s3:::{s.target_bucket}" if s.target_bucket_existing else arn_of(self.bucket)
        applies_to: list[object] = [
            f"Resource::{bucket_arn}/{location.object_pattern}",
            *(f"Resource::arn:aws:s3:::{loc.bucket}/{loc.object_pattern}" for loc in s.source_locations),
            *(
                f"Resource::arn:<AWS::Partition>:glue:{s.target_region}:{s.target_account}:table/{db}/*"
                for db in s.target_databases
            ),
            *table_bucket_wildcards(s),
        ]
        if s.lake_formation_enabled:
            applies_to.append("Resource::*")
        NagSuppressions.add_resource_suppressions(
            [self.role, self.policy],
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "Writes are limited to objects under the target prefix and tables of the "
                    "target databases (whose names are chosen per run) and of the table buckets (whose ids "
                    "the service chooses; writes need icelake's owner tag); source prefixes are read for "
                    "server-side copies; Lake Formation grants have no resource-level permissions.",
                    "appliesTo": applies_to,
                }
            ],
            apply_to_children=True,
        )
        if s.lake_formation_enabled:
            self._lake_formation(s, prefix)
        CfnOutput(self, "TargetRoleArn", value=self.role.role_arn)
        if self.key is not None:
            CfnOutput(self, "TargetKeyArn", value=self.key.key_arn)
        else:
            CfnOutput(
                self,
                "TargetBucketPolicyStatement",
                description=f"{s.target_bucket} is not this stack's: see docs/deploy.md, 'An existing lake'",
                value=json.dumps(target_bucket_statements(s)),
            )

    def _bucket_and_key(self, s: Settings) -> tuple[kms.Key, s3.Bucket]:
        """The target bucket the stack owns (kept when the stack goes) and its rotated key."""
        key = kms.Key(
            self,
            "TargetKey",
            alias="alias/icelake-target",
            enable_key_rotation=True,
            description="icelake: SSE-KMS of the migrated tables",
            removal_policy=RemovalPolicy.RETAIN,
        )
        access_logs = AccessLogBucket(self, "AccessLogs").bucket
        bucket = encrypted_bucket(
            self, "TargetBucket", s.target_bucket, key, access_logs, log_prefix="target/", lifecycle=False
        )
        return key, bucket

    def _lake_formation(self, s: Settings, prefix: str) -> None:
        """The target prefix registered, and what the target role holds in Lake Formation: CREATE_TABLE
        and DESCRIBE on its databases and access to its location, none of it grantable. The role is
        no data lake admin, so by Lake Formation's rule it grants only what it holds with the grant
        option: on the tables it creates (a table's creator holds all of it, grantable to principals
        of its account), never on a table it did not register."""
        principal = lakeformation.CfnPrincipalPermissions.DataLakePrincipalProperty(
            data_lake_principal_identifier=self.role.role_arn
        )
        held: list[CfnResource] = []
        if s.lake_formation_admins:  # else the account's admins are left as they are
            held.append(
                lakeformation.CfnDataLakeSettings(
                    self,
                    "LakeFormationSettings",
                    admins=[
                        lakeformation.CfnDataLakeSettings.DataLakePrincipalProperty(
                            data_lake_principal_identifier=a
                        )
                        for a in s.lake_formation_admins
                    ],
                )
            )
        location = lakeformation.CfnResource(
            self,
            "LakeFormationLocation",
            resource_arn=self.bucket.arn_for_objects(prefix) if prefix else self.bucket.bucket_arn,
            use_service_linked_role=True,
        )
        grants = [
            lakeformation.CfnPrincipalPermissions(
                self,
                f"TargetRoleDatabase{i}",
                principal=principal,
                resource=lakeformation.CfnPrincipalPermissions.ResourceProperty(
                    database=lakeformation.CfnPrincipalPermissions.DatabaseResourceProperty(
                        catalog_id=s.target_account, name=db
                    )
                ),
                permissions=["CREATE_TABLE", "DESCRIBE"],
                permissions_with_grant_option=[],
            )
            for i, db in enumerate(s.target_databases)
        ]
        grants.append(
            lakeformation.CfnPrincipalPermissions(
                self,
                "TargetRoleLocation",
                principal=principal,
                resource=lakeformation.CfnPrincipalPermissions.ResourceProperty(
                    data_location=lakeformation.CfnPrincipalPermissions.DataLocationResourceProperty(
                        catalog_id=s.target_account, resource_arn=location.resource_arn
                    )
                ),
                permissions=["DATA_LOCATION_ACCESS"],
                permissions_with_grant_option=[],
            )
        )
        for grant in grants:
            for needed in (*held, location, *self.databases):
                grant.add_resource_dependency(needed)
