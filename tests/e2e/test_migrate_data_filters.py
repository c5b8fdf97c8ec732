"""Data cells filters carried with their grants (issue 46), through the real state machine on the
embedded AWS (whose Lake Formation has data cells filters: icelake/local/data_filters.py): the
target gets the source's filter, the mapped principal its grant through it and nothing on the
unfiltered table; a filter naming a column the target lacks refuses its table before anyone is
granted anything."""

from __future__ import annotations

from typing import Any

import pytest

from icelake.local.deploy import LocalDeployment
from tests.e2e.conftest import run_workflow
from tests.lake import SOURCE_ACCOUNT, TARGET_ACCOUNT, Lake, add_source_table, catalog_state

pytestmark = pytest.mark.slow

ANALYST = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/analyst"  # reads orders only through the filter
MANAGER = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/manager"  # reads the whole table
TARGET_ANALYST = f"arn:aws:iam::{TARGET_ACCOUNT}:role/analyst-eu"
TARGET_MANAGER = f"arn:aws:iam::{TARGET_ACCOUNT}:role/manager-eu"


def _filter(table: str, name: str, expression: str, excluded: list[str]) -> dict[str, Any]:
    return {
        "TableCatalogId": SOURCE_ACCOUNT,
        "DatabaseName": "sales",
        "TableName": table,
        "Name": name,
        "RowFilter": {"FilterExpression": expression},
        "ColumnWildcard": {"ExcludedColumnNames": excluded},
    }


def _grants(lf: Any, resource: dict[str, Any]) -> dict[str, list[str]]:
    entries = lf.list_permissions(Resource=resource)["PrincipalResourcePermissions"]
    return {e["Principal"]["DataLakePrincipalIdentifier"]: sorted(e["Permissions"]) for e in entries}


def test_a_row_and_column_filter_is_carried_with_its_grant_and_a_bad_one_refuses_its_table(
    world: tuple[Lake, LocalDeployment],
) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1, 2], [3]])
    add_source_table(lake, "customers", [[10]])
    source_lf = lake.source.client("lakeformation")
    # orders: a row filter and a column exclusion, granted to the analyst; the manager reads all
    rows = _filter("orders", "big_ids", "id > 1 AND v <> 'v9'", ["v"])
    source_lf.create_data_cells_filter(TableData=rows)
    key = {k: rows[k] for k in ("TableCatalogId", "DatabaseName", "TableName", "Name")}
    source_lf.grant_permissions(
        Principal={"DataLakePrincipalIdentifier": ANALYST},
        Resource={"DataCellsFilter": key},
        Permissions=["SELECT"],
    )
    orders = {"Table": {"DatabaseName": "sales", "Name": "orders"}}
    source_lf.grant_permissions(
        Principal={"DataLakePrincipalIdentifier": MANAGER}, Resource=orders, Permissions=["SELECT"]
    )
    # customers: a filter on a column no version of the table has
    source_lf.create_data_cells_filter(TableData=_filter("customers", "eu_only", "region = 'eu'", []))
    customers = {"Table": {"DatabaseName": "sales", "Name": "customers"}}
    source_lf.grant_permissions(
        Principal={"DataLakePrincipalIdentifier": MANAGER}, Resource=customers, Permissions=["SELECT"]
    )
    request = lake.request("lf-1")
    request["target"] |= {
        "lake_formation": {
            "copy_permissions": True,
            "principal_map": {ANALYST: TARGET_ANALYST, MANAGER: TARGET_MANAGER},
        },
        # listed as a reader, but it held orders only through the filter: not the whole table
        "lake_formation_principals": [TARGET_ANALYST],
    }

    report = run_workflow(deployment, request)

    outcomes = {t["table"]: t for t in report["tables"]}
    assert outcomes["sales.orders"]["status"] == "migrated", outcomes["sales.orders"]
    target_lf = lake.target.client("lakeformation")
    target_key = {**key, "TableCatalogId": TARGET_ACCOUNT}
    carried = target_lf.get_data_cells_filter(**target_key)["DataCellsFilter"]
    assert carried["RowFilter"] == rows["RowFilter"] and carried["ColumnWildcard"] == rows["ColumnWildcard"]
    assert _grants(target_lf, {"DataCellsFilter": target_key}) == {TARGET_ANALYST: ["SELECT"]}
    on_table = _grants(target_lf, orders)
    assert TARGET_ANALYST not in on_table, on_table  # nothing on the unfiltered table
    assert on_table[TARGET_MANAGER] == ["SELECT"]
    assert any("only through data cells filters" in w for w in outcomes["sales.orders"]["warnings"])

    refused = outcomes["sales.customers"]
    assert refused["status"] == "rolled_back", refused
    assert refused["error"]["type"] == "DataFilterRefusedError" and refused["error"]["step"] == "Register"
    assert "'eu_only'" in refused["error"]["message"] and "region" in refused["error"]["message"]
    assert _grants(target_lf, customers) == {}  # granted to nobody
    assert (
        target_lf.list_data_cells_filter(Table={"DatabaseName": "sales", "Name": "customers"})[
            "DataCellsFilters"
        ]
        == []
    )
    assert "sales.customers" not in catalog_state(lake.target)
