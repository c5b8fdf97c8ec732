"""The target estate on embedded AWS (the workflow's ASL, handlers and Glue scripts): the sample
lake migrated into another region under new names, with its Glue description and a Lake Formation
grant carried, nothing left in the target's other region, the source unchanged; and a request
whose renames collide refused before anything runs."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution
from icelake.local.lake import SOURCE_ACCOUNT, TARGET_ACCOUNT, publish_sample_tables
from tests.e2e.conftest import run_workflow
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, bucket_state, catalog_state, s3_props
from tests.verify import assert_same_table

pytestmark = pytest.mark.slow
TARGET_REGION = "eu-west-1"  # the workflow and the source are in us-east-1
EU_BUCKET = "target-lake-eu"
ANALYST = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/analyst"
ANALYST_EU = f"arn:aws:iam::{TARGET_ACCOUNT}:role/analyst-eu"
DESCRIPTION = "Orders of the web shop, one row per order"


def _lake_formation_state(session: boto3.Session, region: str | None = None) -> list[Any]:
    lf = session.client("lakeformation", region_name=region)
    return sorted(str(p) for p in lf.list_permissions()["PrincipalResourcePermissions"])


def _describe_and_grant(lake: Lake) -> None:
    """Before the run, as a platform team's table would be: a description and a grant."""
    glue = lake.source.client("glue")
    table = glue.get_table(DatabaseName="sales", Name="orders")["Table"]
    glue.update_table(
        DatabaseName="sales",
        TableInput={
            "Name": "orders",
            "Description": DESCRIPTION,
            "Parameters": table["Parameters"],
            "StorageDescriptor": table["StorageDescriptor"],
        },
    )
    lake.source.client("lakeformation").grant_permissions(
        Principal={"DataLakePrincipalIdentifier": ANALYST},
        Resource={"Table": {"DatabaseName": "sales", "Name": "orders"}},
        Permissions=["SELECT"],
    )


def test_the_sample_lake_moves_to_another_region_under_new_names_with_its_grants(
    world: tuple[Lake, LocalDeployment],
) -> None:
    # Given the sample lake, a described and granted orders table, and a target bucket and key in
    # eu-west-1
    lake, deployment = world
    sources = publish_sample_tables(lake)
    _describe_and_grant(lake)
    lake.target.client("s3", region_name=TARGET_REGION).create_bucket(
        Bucket=EU_BUCKET, CreateBucketConfiguration={"LocationConstraint": TARGET_REGION}
    )
    eu_key = lake.target.client("kms", region_name=TARGET_REGION).create_key()["KeyMetadata"]["Arn"]
    source_files, source_catalog = bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)
    source_grants = _lake_formation_state(lake.source)
    request = lake.request("estate-1")
    request["target"] |= {
        "bucket": EU_BUCKET,
        "kms_key_id": eu_key,
        "region": TARGET_REGION,
        "names": {"database": "{database}_eu", "table": "{table}"},
        "renames": {"sales.orders": "archive.orders_2026"},
        "lake_formation": {"copy_permissions": True, "principal_map": {ANALYST: ANALYST_EU}},
    }

    # When the workflow runs
    report = run_workflow(deployment, request)

    # Then both tables are in the eu-west-1 catalog under their new names and read like the source
    assert report["status"] == "succeeded"
    outcomes = {t["table"]: t for t in report["tables"]}
    assert {t: o["target"] for t, o in outcomes.items()} == {
        "sales.orders": "archive.orders_2026",
        "sales.customers": "sales_eu.customers",
    }
    eu_glue = lake.target.client("glue", region_name=TARGET_REGION)
    for name, metadata in sources.items():
        outcome = outcomes[f"sales.{name}"]
        database, table = outcome["target"].split(".")
        target = eu_glue.get_table(DatabaseName=database, Name=table)["Table"]
        assert target["Parameters"]["metadata_location"] == outcome["target_metadata_location"]
        assert outcome["target_metadata_location"].startswith(
            f"s3://{EU_BUCKET}/warehouse/{database}/{table}/"
        )
        assert assert_same_table(
            metadata, outcome["target_metadata_location"], source_props=s3_props(), target_props=s3_props()
        )

    # And the description and the mapped grant came along
    orders = eu_glue.get_table(DatabaseName="archive", Name="orders_2026")["Table"]
    assert orders["Description"] == DESCRIPTION
    granted = lake.target.client("lakeformation", region_name=TARGET_REGION).list_permissions(
        Resource={"Table": {"DatabaseName": "archive", "Name": "orders_2026"}}
    )["PrincipalResourcePermissions"]
    assert [(g["Principal"]["DataLakePrincipalIdentifier"], g["Permissions"]) for g in granted] == [
        (ANALYST_EU, ["SELECT"])
    ]
    assert outcomes["sales.orders"]["warnings"] == []

    # And nothing is in the target account's other region; the source is as it was
    assert lake.target.client("glue").get_databases()["DatabaseList"] == []
    assert _lake_formation_state(lake.target) == []
    assert bucket_state(lake.target, TARGET_BUCKET) == {}
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_files
    assert catalog_state(lake.source) == source_catalog
    assert _lake_formation_state(lake.source) == source_grants


def test_renames_onto_one_name_are_refused_before_anything_runs(world: tuple[Lake, LocalDeployment]) -> None:
    lake, deployment = world
    publish_sample_tables(lake)
    request = lake.request("collide-1")
    request["target"]["renames"] = {"sales.orders": "sales.all", "sales.customers": "sales.all"}

    result = run_execution(deployment.state_machine_arn, request, timeout=60, name="collide-1")

    assert result.status == "FAILED"
    error, cause = result.failure()
    assert error == "InvalidRequest"
    assert "sales.customers and sales.orders would both go to target table sales.all" in (cause or "")
    assert bucket_state(lake.target, TARGET_BUCKET) == {} and catalog_state(lake.target) == {}
