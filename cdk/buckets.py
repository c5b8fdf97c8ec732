"""The access-log bucket every stack with buckets has."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
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
