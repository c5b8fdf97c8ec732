"""Lake Formation access carried by Register on moto: the source's grants to mapped principals
(grant option kept), unmapped principals reported and never granted, LF-tags created and put on the
target table and its columns, lake_formation_principals still granted, nothing granted twice."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from icelake.aws.lake_formation import TableRef, moved_resource
from icelake.aws.ledger import Ledger
from icelake.workflow import steps
from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput
from tests.lake import SOURCE_ACCOUNT, TARGET_ACCOUNT, Lake, add_source_table

ANALYST = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/analyst"
AUDITOR = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/auditor"  # not mapped: must get nothing
TARGET_ANALYST = f"arn:aws:iam::{TARGET_ACCOUNT}:role/analyst-eu"
READER = f"arn:aws:iam::{TARGET_ACCOUNT}:role/reader"


def _run(lake: Lake, request: dict[str, Any]) -> dict[str, Any]:
    inv = steps.inventory(InventoryInput.model_validate(request), lake.deps)
    body = boto3.client("s3").get_object(Bucket=inv.worklist_bucket, Key=inv.worklist_key)["Body"].read()
    (item,) = json.loads(body)
    state = PlannedInput.model_validate(
        {"plan": steps.plan(PlanInput.model_validate({"item": item}), lake.deps).model_dump(mode="json")}
    )
    if state.plan.engine == "lambda":
        steps.copy(state, lake.deps)
        steps.register(state, lake.deps)
    return steps.validate(state, lake.deps).model_dump(mode="json")


def _permissions(session: boto3.Session, database: str, table: str) -> dict[str, tuple[list[str], list[str]]]:
    entries = session.client("lakeformation").list_permissions(
        Resource={"Table": {"DatabaseName": database, "Name": table}}
    )["PrincipalResourcePermissions"]
    return {
        e["Principal"]["DataLakePrincipalIdentifier"]: (
            sorted(e["Permissions"]),
            sorted(e.get("PermissionsWithGrantOption", [])),
        )
        for e in entries
    }


@pytest.mark.slow
def test_grants_and_tags_of_the_source_are_carried_to_mapped_principals_once(lake: Lake) -> None:
    # Given a source table whose analyst may select (and grant select) and describe, an auditor
    # who may select, and LF-tags on the table and on one column
    add_source_table(lake, "orders", [[1, 2]])
    glue = lake.source.client("glue")
    table = glue.get_table(DatabaseName="sales", Name="orders")["Table"]
    columns = [{"Name": "id", "Type": "bigint"}, {"Name": "v", "Type": "string"}]
    glue.update_table(
        DatabaseName="sales",
        TableInput={
            "Name": "orders",
            "Parameters": table["Parameters"],
            "StorageDescriptor": {**table["StorageDescriptor"], "Columns": columns},
        },
    )
    source_lf = lake.source.client("lakeformation")
    resource = {"Table": {"DatabaseName": "sales", "Name": "orders"}}
    source_lf.grant_permissions(
        Principal={"DataLakePrincipalIdentifier": ANALYST},
        Resource=resource,
        Permissions=["SELECT", "DESCRIBE"],
        PermissionsWithGrantOption=["SELECT"],
    )
    source_lf.grant_permissions(
        Principal={"DataLakePrincipalIdentifier": AUDITOR}, Resource=resource, Permissions=["SELECT"]
    )
    source_lf.create_lf_tag(TagKey="domain", TagValues=["sales", "finance"])
    source_lf.create_lf_tag(TagKey="pii", TagValues=["yes", "no"])
    source_lf.add_lf_tags_to_resource(
        Resource=resource, LFTags=[{"TagKey": "domain", "TagValues": ["sales"]}]
    )
    source_lf.add_lf_tags_to_resource(
        Resource={"TableWithColumns": {"DatabaseName": "sales", "Name": "orders", "ColumnNames": ["v"]}},
        LFTags=[{"TagKey": "pii", "TagValues": ["yes"]}],
    )
    source_grants = _permissions(lake.source, "sales", "orders")
    request = lake.request("run-1")
    request["target"] |= {
        "renames": {"sales.orders": "sales_eu.orders"},
        "lake_formation": {
            "copy_permissions": True,
            "principal_map": {ANALYST: TARGET_ANALYST},
            "copy_tags": True,
        },
        "lake_formation_principals": [READER],
    }

    # When the table migrates
    outcome = _run(lake, request)

    # Then the mapped analyst holds on the target what the source's held (grant option kept), the
    # auditor has nothing there and is named in the warnings, and the listed reader may read
    assert outcome["status"] == "migrated"
    assert _permissions(lake.target, "sales_eu", "orders") == {
        TARGET_ANALYST: (["DESCRIBE", "SELECT"], ["SELECT"]),
        READER: (["DESCRIBE", "SELECT"], []),
    }
    assert len(outcome["warnings"]) == 1 and AUDITOR in outcome["warnings"][0]
    assert "principal_map" in outcome["warnings"][0]

    # And the tags exist in the target with every value, on the table and on the column
    target_lf = lake.target.client("lakeformation")
    assert sorted(target_lf.get_lf_tag(TagKey="domain")["TagValues"]) == ["finance", "sales"]
    assert sorted(target_lf.get_lf_tag(TagKey="pii")["TagValues"]) == ["no", "yes"]
    tagged = target_lf.get_resource_lf_tags(
        Resource={"Table": {"DatabaseName": "sales_eu", "Name": "orders"}}, ShowAssignedLFTags=True
    )
    assert [(t["TagKey"], t["TagValues"]) for t in tagged["LFTagsOnTable"]] == [("domain", ["sales"])]
    by_column = target_lf.get_resource_lf_tags(
        Resource={
            "TableWithColumns": {"DatabaseName": "sales_eu", "Name": "orders", "ColumnNames": ["id", "v"]}
        }
    )
    assert [
        (c["Name"], [(t["TagKey"], t["TagValues"]) for t in c["LFTags"]])
        for c in by_column["LFTagsOnColumns"]
    ] == [("v", [("pii", ["yes"])])]

    # When the migration runs again, in full and then incrementally, nothing is granted or created twice
    ledger = Ledger(boto3.client("dynamodb"), lake.env.ledger_table)
    _run(lake, {**request, "run_id": "run-2"})
    assert _run(lake, {**request, "run_id": "run-3", "mode": "incremental"})["status"] == "in_sync"
    for run in ("run-2", "run-3"):
        row = ledger.get_table(run, "sales.orders")
        assert row is not None and (row["lf_grants"], row["lf_tags_created"]) == (0, 0)
    first = ledger.get_table("run-1", "sales.orders")
    assert first is not None and (first["lf_grants"], first["lf_tags_created"]) == (2, 2)

    # When the source grants the analyst more after the sync, an incremental run with nothing to
    # copy still carries the new grant
    source_lf.grant_permissions(
        Principal={"DataLakePrincipalIdentifier": ANALYST}, Resource=resource, Permissions=["ALTER"]
    )
    assert _run(lake, {**request, "run_id": "run-4", "mode": "incremental"})["status"] == "in_sync"
    assert _permissions(lake.target, "sales_eu", "orders")[TARGET_ANALYST] == (
        ["ALTER", "DESCRIBE", "SELECT"],
        ["SELECT"],
    )

    # And the source's grants are as they were, but for the one this test added
    source_grants[ANALYST] = (["ALTER", *source_grants[ANALYST][0]], source_grants[ANALYST][1])
    assert _permissions(lake.source, "sales", "orders") == source_grants


def test_a_column_grant_moves_to_the_same_columns_of_the_target() -> None:
    target = TableRef("sales_eu", "orders")
    granted = {
        "TableWithColumns": {
            "CatalogId": SOURCE_ACCOUNT,
            "DatabaseName": "sales",
            "Name": "orders",
            "ColumnWildcard": {"ExcludedColumnNames": ["card"]},
        }
    }
    assert moved_resource(granted, target) == {
        "TableWithColumns": {
            "DatabaseName": "sales_eu",
            "Name": "orders",
            "ColumnWildcard": {"ExcludedColumnNames": ["card"]},
        }
    }
