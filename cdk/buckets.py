"""The access-log bucket every stack with buckets has, and the KMS-encrypted buckets that log to it."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from cdk_nag import NagSuppressions
from constructs import Construct

from cdk.component import Component


class AccessLogBucket(Component):
    """The bucket that receives a stack's S3 server access logs (kept a year)."""

    def __init__(self, scope: Construct, cid: str) -> None:
        super().__init__(scope, cid)
        self.bucket = s3.Bucket(
            self,
            cid,
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(365))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        NagSuppressions.add_resource_suppressions(
            self.bucket,
            [
                {
                    "id": "AwsSolutions-S1",
                    "reason": "This is the access-log bucket; it does not log to itself.",
                }
            ],
        )


def encrypted_bucket(
    scope: Construct,
    cid: str,
    name: str | None,
    key: kms.IKey,
    access_logs: s3.IBucket,
    *,
    log_prefix: str | None = None,
    lifecycle: bool = True,
) -> s3.Bucket:
    """A versioned bucket encrypted with `key` (bucket keys on), logging to `access_logs` under
    `log_prefix` (its id in lower case unless given). With `lifecycle`, old versions expire after
    30 days and incomplete multipart uploads are aborted after 7."""
    rules = [
        s3.LifecycleRule(
            noncurrent_version_expiration=Duration.days(30),
            abort_incomplete_multipart_upload_after=Duration.days(7),
        )
    ]
    return s3.Bucket(
        scope,
        cid,
        bucket_name=name,
        encryption=s3.BucketEncryption.KMS,
        encryption_key=key,
        bucket_key_enabled=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        versioned=True,
        server_access_logs_bucket=access_logs,
        server_access_logs_prefix=log_prefix or f"{cid.lower()}/",
        lifecycle_rules=rules if lifecycle else None,
        removal_policy=RemovalPolicy.RETAIN,
    )
