"""The ingestion workflow's SCD2 merge (and maintenance) Glue job: its Spark catalogs, its security
configuration and its role (reads raw/, moves poison batches to quarantine/, writes the warehouse
prefix and its tables)."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Stack
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from cdk_nag import NagSuppressions
from constructs import Construct

from cdk.common import (
    GlueSecurity,
    GlueSparkJob,
    glue_catalog_arns,
    glue_log_statements,
    list_prefix_statement,
)
from cdk.component import Component, arn_of
from cdk.config import INGEST_GLUE_ROLE_NAME, Settings
from cdk.ingest_store import QUARANTINE_PREFIX, RAW_PREFIX, STATE_PREFIX, Landing, Warehouse
from icelake.ingest.resources import MERGE_JOB, MERGE_SCRIPT

DEFAULT_CATALOG = "glue_catalog"
# The merge job reads the batches with boto3 and pydantic models; Iceberg comes with Glue.
MERGE_PIP_MODULES = ("pydantic",)
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


def spark_catalog_conf(catalogs: list[str], warehouse: str) -> str:
    """Glue's `--conf` value: the Iceberg extensions and each catalog named by the tables' first part
    as an Iceberg catalog on the Glue Data Catalog, with S3FileIO and the warehouse location."""
    confs = [f"spark.sql.extensions={ICEBERG_EXTENSIONS}"]
    for name in catalogs:
        prefix = f"spark.sql.catalog.{name}"
        confs += [
            f"{prefix}=org.apache.iceberg.spark.SparkCatalog",
            f"{prefix}.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog",
            f"{prefix}.io-impl=org.apache.iceberg.aws.s3.S3FileIO",
            f"{prefix}.warehouse={warehouse}",
        ]
    return " --conf ".join(confs)


class MergeGlueJob(Component):
    """The SCD2 merge (and maintenance) Glue job, one run at a time, with a role that reads raw/,
    moves poison batches to quarantine/, and writes the warehouse prefix and its tables."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        settings: Settings,
        build_dir: Path,
        landing: Landing,
        warehouse: Warehouse,
    ) -> None:
        super().__init__(scope, cid)
        s = settings
        self.role = iam.Role(
            self,
            "GlueRole",
            role_name=INGEST_GLUE_ROLE_NAME,
            assumed_by=iam.ServicePrincipal("glue.amazonaws.com"),
            description="icelake ingest Glue job: reads raw/, writes the warehouse prefix and its tables",
        )
        s3_encryption = (
            glue.CfnSecurityConfiguration.S3EncryptionProperty(
                s3_encryption_mode="SSE-KMS", kms_key_arn=warehouse.key.key_arn
            )
            if warehouse.key is not None
            else glue.CfnSecurityConfiguration.S3EncryptionProperty(s3_encryption_mode="DISABLED")
        )
        security = GlueSecurity(
            self, "GlueSecurity", name="icelake-ingest", key=landing.key, s3_encryption=s3_encryption
        )
        catalogs = sorted({src.table.table.split(".")[0] for src in s.ingest_sources}) or [DEFAULT_CATALOG]
        job = GlueSparkJob(
            self,
            cid,
            name=MERGE_JOB,
            script=MERGE_SCRIPT,
            build_dir=build_dir,
            role=self.role,
            glue_version=s.glue_version,
            worker_type=s.ingest_glue_worker_type,
            workers=s.ingest_glue_workers,
            timeout_minutes=3 * 60,
            security=security,
            # One run at a time: two merges into one table would conflict (and SCD2 needs batch order).
            max_concurrent_runs=1,
            pip_modules=MERGE_PIP_MODULES,
            arguments={"--conf": spark_catalog_conf(catalogs, warehouse.uri)},
        )
        self.job = job.job
        self.arn = Stack.of(self).format_arn(service="glue", resource="job", resource_name=MERGE_JOB)
        raw = landing.bucket
        statements = [
            job.asset_statement(),
            # Reads pending batches; moves a poison batch to quarantine/ (copy, then delete).
            iam.PolicyStatement(
                sid="RawRead",
                actions=["s3:GetObject", "s3:DeleteObject"],
                resources=[raw.arn_for_objects(f"{RAW_PREFIX}/*")],
            ),
            iam.PolicyStatement(
                sid="Quarantine",
                actions=["s3:PutObject"],
                resources=[raw.arn_for_objects(f"{QUARANTINE_PREFIX}/*")],
            ),
            landing.state_statement(["s3:GetObject", "s3:PutObject"]),  # empty batches' ledger
            landing.list_statement(),
            iam.PolicyStatement(
                sid="WarehouseObjects",
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[warehouse.bucket.arn_for_objects(warehouse.location.object_pattern)],
            ),
            list_prefix_statement("WarehouseList", warehouse.bucket.bucket_arn, warehouse.location.prefix),
            iam.PolicyStatement(
                sid="Catalog",
                actions=[
                    "glue:GetDatabase",
                    "glue:GetTable",
                    "glue:GetTables",
                    "glue:CreateTable",
                    "glue:UpdateTable",
                ],
                resources=glue_catalog_arns(Stack.of(self), warehouse.databases),
            ),
            *glue_log_statements(Stack.of(self)),
            # Raw objects (through S3), the job's logs and bookmarks (security configuration).
            iam.PolicyStatement(
                sid="Key",
                actions=["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"],
                resources=[landing.key.key_arn],
            ),
        ]
        if warehouse.key is not None:
            statements.append(
                iam.PolicyStatement(
                    sid="WarehouseKey",
                    actions=["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[warehouse.key.key_arn],
                    conditions=landing.via_s3,
                )
            )
        self.policy = iam.Policy(self, "GluePolicy", roles=[self.role], statements=statements)
        raw_arn = arn_of(raw)
        NagSuppressions.add_resource_suppressions(
            [self.role, self.policy],
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "The merge job reads per-run batches under raw/ (and moves a poison batch to "
                    "quarantine/<source>/<endpoint>/<run>/), keeps each endpoint's ledger under state/, "
                    "writes and removes (snapshot "
                    "expiry, orphan removal) data and metadata files under the warehouse prefix and updates "
                    "any table of the configured databases; Glue creates its own log groups under "
                    "/aws-glue/; PutMetricData has no resource type (limited to the Glue namespace).",
                    "appliesTo": [
                        *(
                            f"Resource::{raw_arn}/{p}/*"
                            for p in (RAW_PREFIX, STATE_PREFIX, QUARANTINE_PREFIX)
                        ),
                        f"Resource::{warehouse.arn_in_findings()}/{warehouse.location.object_pattern}",
                        {"regex": "/^Resource::arn:<AWS::Partition>:glue:.*:table\\/[^/]+\\/\\*$/g"},
                        {
                            "regex": "/^Resource::arn:<AWS::Partition>:logs:.*:log-group:"
                            "\\/aws-glue\\/\\*(:\\*)?$/g"
                        },
                        "Resource::*",
                    ],
                }
            ],
            apply_to_children=True,
        )
