"""The audit trail of a migration, opt in (context `audit_trail: true`): a CloudTrail trail in the
orchestrator account with S3 data events on the artifacts bucket and on the target bucket's
migration prefix, delivered to a log bucket of its own (encrypted, versioned, expiring, public
access blocked) under a KMS key that rotates. `audit_trail_arn` names an existing trail instead
(docs/deploy.md "Audit trail" says which event selectors it needs) and nothing is deployed.

CloudTrail delivers an S3 data event to the trails of the bucket owner's account and of the
caller's: the target role's writes are the target account's calls, so a target bucket in another
account is audited by that account's trail (deploy.md says which selectors it needs there)."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudtrail as cloudtrail
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from cdk.component import Component
from cdk.config import Settings

AUDIT_TRAIL_NAME = "icelake-audit"
AUDIT_LOG_DAYS = 400  # a year of trail logs and a margin; older ones expire


class AuditTrail(Component):
    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        settings: Settings,
        artifacts: s3.IBucket,
        access_logs: s3.IBucket,
    ) -> None:
        super().__init__(scope, cid)
        stack = Stack.of(self)
        trail_arn = (
            f"arn:{stack.partition}:cloudtrail:{stack.region}:{stack.account}:trail/{AUDIT_TRAIL_NAME}"
        )
        key = kms.Key(
            self,
            "AuditKey",
            alias="alias/icelake-audit-trail",
            description="icelake audit trail: the trail's log files",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        # CloudTrail encrypts this trail's log files only (its own ARN in the encryption context).
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudTrailEncrypts",
                principals=[iam.ServicePrincipal("cloudtrail.amazonaws.com")],
                actions=["kms:GenerateDataKey*", "kms:DescribeKey"],
                resources=["*"],
                conditions={
                    "StringEquals": {"aws:SourceArn": trail_arn},
                    "StringLike": {"kms:EncryptionContext:aws:cloudtrail:arn": trail_arn},
                },
            )
        )
        bucket = s3.Bucket(
            self,
            "AuditLogBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,  # the objects are under the trail's key too
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="audit-trail/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    expiration=Duration.days(AUDIT_LOG_DAYS),
                    noncurrent_version_expiration=Duration.days(30),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        trail = cloudtrail.Trail(
            self,
            "AuditTrail",
            trail_name=AUDIT_TRAIL_NAME,
            bucket=bucket,
            encryption_key=key,
            enable_file_validation=True,
            include_global_service_events=True,  # STS AssumeRole into the source and target roles
            is_multi_region_trail=False,
        )
        target = s3.Bucket.from_bucket_name(self, "AuditTargetBucket", settings.target_bucket)
        prefix = settings.target_prefix.strip("/")
        trail.add_s3_event_selector(
            [
                cloudtrail.S3EventSelector(bucket=artifacts),
                cloudtrail.S3EventSelector(bucket=target, object_prefix=f"{prefix}/" if prefix else None),
            ],
            read_write_type=cloudtrail.ReadWriteType.ALL,
            include_management_events=True,
        )
        self.trail_arn = trail.trail_arn
        CfnOutput(self, "AuditTrailArn", value=trail.trail_arn, description="icelake's audit trail")


class NamedAuditTrail(Component):
    """`audit_trail_arn`: an existing trail audits the migration; the stack only names it."""

    def __init__(self, scope: Construct, cid: str, *, arn: str) -> None:
        super().__init__(scope, cid)
        self.trail_arn = arn
        CfnOutput(self, "AuditTrailArn", value=arn, description="the existing trail that audits icelake")
