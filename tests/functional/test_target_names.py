"""Renamed targets through the workflow's steps on moto: Inventory decides every target name,
refuses names that collide before anything runs, and a changed rename is a new target that leaves
the earlier one in place, reported."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from icelake.errors import InvalidRequestError, ValidationFailedError
from icelake.workflow import steps
from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput
from tests.lake import (
    SOURCE_BUCKET,
    Lake,
    add_source_table,
    bucket_state,
    catalog_state,
    s3_props,
)
from tests.verify import assert_same_table


def _request(lake: Lake, run_id: str, **target: Any) -> dict[str, Any]:
    body = lake.request(run_id)
    body["target"].update(target)
    return body


def _migrate(lake: Lake, request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return _run(lake, request)[0]


def _run(lake: Lake, request: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, PlannedInput]]:
    """Every step of a run, as the state machine calls them: (outcomes, Validate's inputs) by table."""
    inv = steps.inventory(InventoryInput.model_validate(request), lake.deps)
    body = boto3.client("s3").get_object(Bucket=inv.worklist_bucket, Key=inv.worklist_key)["Body"].read()
    outcomes, states = {}, {}
    for item in json.loads(body):
        planned = steps.plan(PlanInput.model_validate({"item": item}), lake.deps).model_dump(mode="json")
        state = PlannedInput.model_validate({"plan": planned})
        if planned["engine"] == "lambda":
            steps.copy(state, lake.deps)
            steps.register(state, lake.deps)
        outcome = steps.validate(state, lake.deps).model_dump(mode="json")
        outcomes[outcome["table"]] = outcome
        states[outcome["table"]] = state
    return outcomes, states


@pytest.mark.slow
def test_templates_and_renames_name_the_targets_and_a_changed_rename_is_a_new_target(lake: Lake) -> None:
    # Given two source tables
    add_source_table(lake, "orders", [[1, 2], [3]])
    add_source_table(lake, "customers", [[10]])
    source_before = bucket_state(lake.source, SOURCE_BUCKET)
    names = {"database": "{database}_eu", "table": "{table}"}

    # When they migrate under a database template, one of them renamed
    first = _migrate(
        lake, _request(lake, "run-1", names=names, renames={"sales.orders": "archive.orders_v1"})
    )

    # Then each is in the target catalog under its new name, at a location that follows it
    assert {t: o["target"] for t, o in first.items()} == {
        "sales.orders": "archive.orders_v1",
        "sales.customers": "sales_eu.customers",
    }
    target_catalog = catalog_state(lake.target)
    assert set(target_catalog) == {"archive.orders_v1", "sales_eu.customers"}
    orders_v1 = target_catalog["archive.orders_v1"]["metadata_location"]
    assert orders_v1.startswith("s3://target-lake/warehouse/archive/orders_v1/metadata/")
    assert first["sales.orders"]["status"] == "migrated" and first["sales.orders"]["warnings"] == []

    # When the rename changes and an incremental run follows
    second = _migrate(
        lake,
        {
            **_request(lake, "run-2", names=names, renames={"sales.orders": "archive.orders_v2"}),
            "mode": "incremental",
        },
    )

    # Then the new name is a new target, copied whole and reading like the source; the earlier target
    # is left as it was and reported; the unrenamed table is in sync
    orders = second["sales.orders"]
    assert orders["status"] == "migrated" and orders["target"] == "archive.orders_v2"
    assert orders["files_copied"] == first["sales.orders"]["files_copied"]
    assert (
        orders["warnings"]
        and "archive.orders_v1 is an earlier target of sales.orders" in orders["warnings"][0]
    )
    assert second["sales.customers"]["status"] == "in_sync"
    target_catalog = catalog_state(lake.target)
    assert target_catalog["archive.orders_v1"]["metadata_location"] == orders_v1
    sources = catalog_state(lake.source)
    for table, outcome in second.items():
        target = target_catalog[outcome["target"]]["metadata_location"]
        assert target == outcome["target_metadata_location"]
        assert assert_same_table(
            sources[table]["metadata_location"], target, source_props=s3_props(), target_props=s3_props()
        )
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before


def test_names_that_collide_are_refused_before_anything_runs(lake: Lake) -> None:
    add_source_table(lake, "orders", [[1]])
    add_source_table(lake, "customers", [[10]])
    renames = {"sales.orders": "sales.all", "sales.customers": "sales.all", "sales.returns": "sales.r"}

    with pytest.raises(InvalidRequestError) as info:
        _migrate(lake, _request(lake, "run-1", renames=renames))

    said = str(info.value)
    assert "sales.customers and sales.orders would both go to target table sales.all" in said
    assert "target.renames names sales.returns, which the selection does not hold" in said
    assert catalog_state(lake.target) == {}
    artifacts = boto3.client("s3").list_objects_v2(Bucket=lake.env.artifacts_bucket).get("Contents", [])
    assert artifacts == []


def _describe_source(lake: Lake, name: str) -> dict[str, Any]:
    """Give a source table what a platform team's tables carry: a description, an owner, custom
    parameters and column comments (as Iceberg's GlueCatalog writes its columns)."""
    glue = lake.source.client("glue")
    table = glue.get_table(DatabaseName="sales", Name=name)["Table"]
    table_input = {
        "Name": name,
        "Description": "Orders placed on the EU web shop",
        "Owner": "team-sales",
        "Parameters": {**table["Parameters"], "classification": "iceberg", "data_owner": "sales@example.com"},
        "StorageDescriptor": {
            "Location": table["StorageDescriptor"]["Location"],
            "Columns": [
                {
                    "Name": "id",
                    "Type": "bigint",
                    "Comment": "order id",
                    "Parameters": {"iceberg.field.id": "1"},
                },
                {"Name": "v", "Type": "string", "Comment": "order value"},
            ],
        },
    }
    glue.update_table(DatabaseName="sales", TableInput=table_input)
    return table_input


def test_glue_metadata_is_carried_and_validate_compares_it(lake: Lake) -> None:
    # Given a source table with a description, an owner, custom parameters and column comments
    add_source_table(lake, "orders", [[1, 2]])
    described = _describe_source(lake, "orders")
    source_glue = catalog_state(lake.source)["sales.orders"]

    # When it migrates under another name
    outcomes, states = _run(lake, _request(lake, "run-1", renames={"sales.orders": "sales_eu.orders"}))

    # Then the target's Glue table carries all of it, and its own pointer, not the source's
    assert outcomes["sales.orders"]["status"] == "migrated"
    target = lake.target.client("glue").get_table(DatabaseName="sales_eu", Name="orders")["Table"]
    assert target["Description"] == described["Description"] and target["Owner"] == "team-sales"
    assert target["StorageDescriptor"]["Columns"] == described["StorageDescriptor"]["Columns"]
    assert target["Parameters"]["classification"] == "iceberg"
    assert target["Parameters"]["data_owner"] == "sales@example.com"
    assert target["Parameters"]["metadata_location"] == outcomes["sales.orders"]["target_metadata_location"]
    assert target["Parameters"]["metadata_location"] != source_glue["metadata_location"]
    assert "previous_metadata_location" not in target["Parameters"]

    # When the target's description is changed behind icelake's back, Validate says so
    glue = lake.target.client("glue")
    glue.update_table(
        DatabaseName="sales_eu",
        TableInput={k: target[k] for k in ("Name", "Parameters", "StorageDescriptor", "Owner")}
        | {"Description": "something else"},
    )
    with pytest.raises(ValidationFailedError, match="Glue Description: the source has 'Orders placed"):
        steps.validate(states["sales.orders"], lake.deps)
