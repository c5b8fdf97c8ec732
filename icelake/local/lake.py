"""A two-account lake in the embedded AWS, for the demo and the tests: source tables in a bucket and
a Glue catalog of account 111111111111, an empty target account 222222222222 with a KMS key, and
the orchestrator's ledger and artifacts bucket in moto's default account."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from icelake.aws import catalog
from icelake.aws.clients import new_session
from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.aws.ledger import create_ledger_table
from icelake.aws.session import assume_role_session
from icelake.constants import ARTIFACTS_BUCKET, LEDGER_TABLE, ORCHESTRATOR_ACCOUNT_LOCAL
from icelake.local.backend_io import BackendS3FileIO
from icelake.migrate import migrate_table
from icelake.migrate.plan.since import FULL, Since
from icelake.migrate.settings import EngineSettings
from icelake.request.deps import Deps, WorkflowEnv

SOURCE_ACCOUNT = "111111111111"
TARGET_ACCOUNT = "222222222222"
SOURCE_ROLE = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/icelake-source-read"
TARGET_ROLE = f"arn:aws:iam::{TARGET_ACCOUNT}:role/icelake-target-write"
SOURCE_BUCKET = "source-lake"
TARGET_BUCKET = "target-lake"
SAMPLE_TABLE_BUCKET = "lake"  # arn:aws:s3tables:us-east-1:222222222222:bucket/lake


@dataclass
class Lake:
    source: boto3.Session
    target: boto3.Session
    env: WorkflowEnv
    kms_key: str
    local_root: Path

    @property
    def deps(self) -> Deps:
        """What the workflow steps get in the Lambdas, here on the orchestrator's moto credentials."""
        return Deps(self.env)

    def request(self, run_id: str, **overrides: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "run_id": run_id,
            "source": {"account_id": SOURCE_ACCOUNT, "role_arn": SOURCE_ROLE},
            "target": {
                "account_id": TARGET_ACCOUNT,
                "role_arn": TARGET_ROLE,
                "bucket": TARGET_BUCKET,
                "prefix": "warehouse",
                "kms_key_id": self.kms_key,
            },
            "selection": {"databases": ["sales"]},
            "mode": "full",
            "options": {"concurrency": 2, "validation": "rows"},
        }
        body.update(overrides)
        return body

    def publish(
        self,
        database: str,
        name: str,
        local_metadata: str,
        *,
        incremental: bool = False,
        direct: bool = False,
        maps: Sequence[tuple[str, str]] = (),
    ) -> str:
        """Copy a local table's state to the source bucket and point the source Glue table at it:
        its whole history, what older logged versions alone reach too (history all).
        `incremental`: only what the table committed since it was last published; `direct`: its
        files written into the embedded S3's store, not PUT through the server (a benchmark's
        large table: `backend_io`); `maps`: where its files outside its location go (`--map`)."""
        location = f"s3://{SOURCE_BUCKET}/lake/{database}/{name}"
        s3 = self.source.client("s3")
        result = migrate_table(
            local_metadata,
            location,
            maps,
            src_io=LocalFileIO(),
            dst_io=BackendS3FileIO(s3, SOURCE_ACCOUNT) if direct else S3FileIO(s3),
            settings=EngineSettings(history="all", since=Since(from_target=True) if incremental else FULL),
        )
        glue = self.source.client("glue")
        catalog.ensure_database(glue, database)
        params = {"table_type": "ICEBERG", "metadata_location": result.target_metadata_location}
        existing = catalog.get_table(glue, database, name)
        table_input = {"Name": name, "Parameters": params, "StorageDescriptor": {"Location": location}}
        if existing:
            glue.update_table(DatabaseName=database, TableInput=table_input)
        else:
            glue.create_table(DatabaseName=database, TableInput=table_input)
        return result.target_metadata_location


def build_lake(local_root: Path, *, orchestrator_resources: bool = True) -> Lake:
    """Buckets and a KMS key in the two accounts; with `orchestrator_resources`, also the ledger and
    artifacts bucket (leave them to `deploy_migration_workflow` when the state machine is deployed)."""
    source = assume_role_session(SOURCE_ROLE)
    target = assume_role_session(TARGET_ROLE)
    source.client("s3").create_bucket(Bucket=SOURCE_BUCKET)
    target.client("s3").create_bucket(Bucket=TARGET_BUCKET)
    kms_key = target.client("kms").create_key(Description="target lake")["KeyMetadata"]["Arn"]
    orchestrator = new_session()  # the process's shared data loader: a bare Session() parses S3's model again
    artifacts = ARTIFACTS_BUCKET.format(account=ORCHESTRATOR_ACCOUNT_LOCAL)
    if orchestrator_resources:
        orchestrator.client("s3").create_bucket(Bucket=artifacts)
        create_ledger_table(orchestrator.client("dynamodb"), LEDGER_TABLE)
    return Lake(
        source,
        target,
        WorkflowEnv(ledger_table=LEDGER_TABLE, artifacts_bucket=artifacts),
        kms_key,
        local_root,
    )


def bucket_state(session: boto3.Session, bucket: str) -> dict[str, str]:
    pages = session.client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {o["Key"]: o["ETag"] for p in pages for o in p.get("Contents", [])}


def catalog_state(session: boto3.Session) -> dict[str, Any]:
    glue = session.client("glue")
    out: dict[str, Any] = {}
    for db in glue.get_databases()["DatabaseList"]:
        for t in catalog.list_tables(glue, db["Name"]):
            out[f"{db['Name']}.{t['Name']}"] = t.get("Parameters", {})
    return out


def publish_sample_tables(lake: Lake) -> dict[str, str]:
    """Two small tables with history in the source account's `sales` database, written by
    pyiceberg (no Spark needed), so the README's requests have something to migrate (and an S3
    Tables table bucket in the target account to go to); returns name -> source metadata location."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.types import StringType

    root = lake.local_root / "samples"
    root.mkdir(parents=True, exist_ok=True)
    local = SqlCatalog("samples", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    local.create_namespace_if_not_exists("sales")
    published: dict[str, str] = {}

    orders = local.create_table(
        "sales.orders",
        schema=pa.schema([("id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64())]),
    )
    for start in (0, 100, 200):
        ids = range(start, start + 100)
        orders.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "customer": [f"c{i % 17}" for i in ids],
                    "amount": [i * 1.25 for i in ids],
                }
            )
        )
    orders.delete("id < 10")  # a copy-on-write delete: one more snapshot, files replaced
    published["orders"] = lake.publish("sales", "orders", local.load_table("sales.orders").metadata_location)

    customers = local.create_table(
        "sales.customers", schema=pa.schema([("id", pa.int64()), ("name", pa.string())])
    )
    customers.append(
        pa.table({"id": pa.array(range(17), pa.int64()), "name": [f"name-{i}" for i in range(17)]})
    )
    with customers.update_schema() as update:
        update.add_column("tier", StringType())
    published["customers"] = lake.publish(
        "sales", "customers", local.load_table("sales.customers").metadata_location
    )
    # The table bucket tests/events/migrate_request_s3tables.json sends them to (S3 Tables target)
    lake.target.client("s3tables").create_table_bucket(name=SAMPLE_TABLE_BUCKET)
    return published
