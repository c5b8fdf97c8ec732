"""Where the ingestion workflow keeps its data: the raw landing bucket (batches, endpoint state,
quarantined batches) and the warehouse of the SCD2 tables with its Glue databases, each encrypted
with a key; the statements that grant parts of them."""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from cdk.buckets import encrypted_bucket
from cdk.common import GlueDatabases, list_prefix_statement
from cdk.component import Component, arn_of
from cdk.config import Settings
from cdk.config_values import BucketPrefix
from icelake.ingest.resources import RAW_BUCKET

RAW_PREFIX = "raw"  # icelake.ingest.landing: raw/{source}/{endpoint}/{run_id}/
STATE_PREFIX = "state"  # state/{source}/{endpoint}.json: watermark and empty batches (landing.state_uri)
QUARANTINE_PREFIX = "quarantine"  # quarantine/{source}/{endpoint}/{run_id}/: poison batches, reason.json
MARKERS = (".pending", ".complete")


class Landing(Component):
    """The raw landing bucket (batches under raw/, endpoint state under state/, poison batches
    under quarantine/), encrypted with the ingest key, and the statements that grant parts of it."""

    def __init__(
        self, scope: Construct, cid: str, *, settings: Settings, key: kms.IKey, access_logs: s3.IBucket
    ) -> None:
        super().__init__(scope, cid)
        self.key = key
        self.via_s3 = via_s3(self)
        self.bucket = encrypted_bucket(
            self, "Raw", RAW_BUCKET.format(account=settings.orchestrator_account), key, access_logs
        )

    def key_statement(self, actions: list[str]) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            sid="RawKey", actions=actions, resources=[self.key.key_arn], conditions=self.via_s3
        )

    def list_statement(self) -> iam.PolicyStatement:
        """Listing raw/ and state/: a missing state file must read as absent (404), not denied."""
        return list_prefix_statement("RawList", self.bucket.bucket_arn, RAW_PREFIX, STATE_PREFIX)

    def state_statement(self, actions: list[str]) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            sid="EndpointState", actions=actions, resources=[self.bucket.arn_for_objects(f"{STATE_PREFIX}/*")]
        )


class Warehouse(Component):
    """Where the SCD2 tables live: an existing bucket (and its key, if SSE-KMS) or one made here with
    a key of its own, and the Glue databases of the tables unless they exist already."""

    def __init__(self, scope: Construct, cid: str, *, settings: Settings, access_logs: s3.IBucket) -> None:
        super().__init__(scope, cid)
        s = settings
        self.key: kms.IKey | None
        if s.ingest_warehouse_bucket:
            self.bucket: s3.IBucket = s3.Bucket.from_bucket_name(self, "Warehouse", s.ingest_warehouse_bucket)
            self.key = (
                kms.Key.from_key_arn(self, "WarehouseKey", s.ingest_warehouse_kms_key_arn)
                if s.ingest_warehouse_kms_key_arn
                else None
            )
        else:
            self.key = kms.Key(
                self,
                "WarehouseKey",
                alias="alias/icelake-ingest-warehouse",
                enable_key_rotation=True,
                description="icelake ingest: SSE-KMS of the SCD2 tables",
                removal_policy=RemovalPolicy.RETAIN,
            )
            self.bucket = encrypted_bucket(self, "Warehouse", None, self.key, access_logs)
        self.location = BucketPrefix(self.bucket.bucket_name, s.ingest_warehouse_prefix)
        prefix = self.location.prefix.strip("/")
        self.uri = f"s3://{self.bucket.bucket_name}" + (f"/{prefix}" if prefix else "")
        self.databases = s.ingest_database_names
        if s.ingest_create_databases:
            GlueDatabases(
                self,
                "Database",
                databases=self.databases,
                location=self.uri,
                description="icelake ingest: SCD2 tables",
            )

    def arn_in_findings(self) -> str:
        """The bucket's ARN as cdk-nag writes it: the logical ID of one made here, else its name."""
        if self.bucket.node.default_child is not None:
            return arn_of(self.bucket)
        return f"arn:<AWS::Partition>:s3:::{self.bucket.bucket_name}"  # an existing bucket


def via_s3(scope: Construct) -> dict[str, Any]:
    """A KMS condition: only through S3 in this stack's region."""
    return {"StringEquals": {"kms:ViaService": f"s3.{Stack.of(scope).region}.amazonaws.com"}}
