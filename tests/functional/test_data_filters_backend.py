"""The embedded AWS's Lake Formation data cells filters (icelake/local/data_filters.py), checked
against the service model's shapes in botocore's own JSON: every request is validated by botocore
before it is sent, and every answer's raw JSON is checked member by member against the operation's
output shape (no member the model does not define, each of the model's type)."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError

from tests.lake import SOURCE_ACCOUNT, Lake
from tests.shapes import check_shape

MODEL = botocore.session.get_session().get_service_model("lakeformation")
PRINCIPAL = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/analyst"


def _raw_answers(lf: Any) -> list[tuple[str, dict[str, Any]]]:
    """(operation, the answer's JSON as the embedded AWS sent it) for every call of `lf`."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def keep(http_response: Any, operation_name: str, **_: Any) -> None:
        if http_response.status_code == 200:
            seen.append((operation_name, json.loads(http_response.content or b"{}")))

    lf.meta.events.register(
        "after-call.lakeformation", lambda **kw: keep(kw["http_response"], kw["model"].name)
    )
    return seen


def test_data_cells_filters_and_their_grants_answer_in_the_models_shapes(patched_lake: Lake) -> None:
    lf = patched_lake.source.client("lakeformation")
    answers = _raw_answers(lf)
    table = {"DatabaseName": "sales", "Name": "orders"}
    rows = {
        "TableCatalogId": SOURCE_ACCOUNT,
        "DatabaseName": "sales",
        "TableName": "orders",
        "Name": "eu_rows",
        "RowFilter": {"FilterExpression": "region = 'eu' AND amount > 10"},
        "ColumnWildcard": {"ExcludedColumnNames": ["email"]},
    }
    columns = {
        **{k: rows[k] for k in ("TableCatalogId", "DatabaseName", "TableName")},
        "Name": "ids_only",
        "RowFilter": {"AllRowsWildcard": {}},
        "ColumnNames": ["id"],
    }
    # Create, get, list (paged), grant on one, list its grants
    lf.create_data_cells_filter(TableData=rows)
    lf.create_data_cells_filter(TableData=columns)
    key = {k: rows[k] for k in ("TableCatalogId", "DatabaseName", "TableName", "Name")}
    got = lf.get_data_cells_filter(**key)["DataCellsFilter"]
    assert {k: got[k] for k in rows} == rows
    first = lf.list_data_cells_filter(Table=table, MaxResults=1)
    second = lf.list_data_cells_filter(Table=table, MaxResults=1, NextToken=first["NextToken"])
    assert [f["Name"] for f in first["DataCellsFilters"] + second["DataCellsFilters"]] == [
        "eu_rows",
        "ids_only",
    ]
    assert "NextToken" not in second
    assert (
        lf.list_data_cells_filter(Table={"DatabaseName": "sales", "Name": "other"})["DataCellsFilters"] == []
    )
    resource = {"DataCellsFilter": key}
    lf.grant_permissions(
        Principal={"DataLakePrincipalIdentifier": PRINCIPAL}, Resource=resource, Permissions=["SELECT"]
    )
    (grant,) = lf.list_permissions(Resource=resource)["PrincipalResourcePermissions"]
    assert grant["Principal"]["DataLakePrincipalIdentifier"] == PRINCIPAL and grant["Permissions"] == [
        "SELECT"
    ]
    # a grant through a filter is not a grant on the table
    assert lf.list_permissions(Resource={"Table": table})["PrincipalResourcePermissions"] == []
    other = {"DataCellsFilter": {**key, "Name": "ids_only"}}
    assert lf.list_permissions(Resource=other)["PrincipalResourcePermissions"] == []

    # Refusals in the service's error codes
    with pytest.raises(ClientError, match="AlreadyExistsException"):
        lf.create_data_cells_filter(TableData=rows)
    with pytest.raises(ClientError, match="InvalidInputException"):
        lf.create_data_cells_filter(TableData={**key, "Name": "no_columns", "RowFilter": rows["RowFilter"]})
    lf.delete_data_cells_filter(**{**key, "Name": "ids_only"})
    with pytest.raises(ClientError, match="EntityNotFoundException"):
        lf.get_data_cells_filter(**{**key, "Name": "ids_only"})
    assert [f["Name"] for f in lf.list_data_cells_filter(Table=table)["DataCellsFilters"]] == ["eu_rows"]
    # filters are kept per account, as Lake Formation keeps them
    assert patched_lake.target.client("lakeformation").list_data_cells_filter()["DataCellsFilters"] == []

    # Every answer, raw, in the output shape of its operation in botocore's model
    operations = {name for name, _ in answers}
    assert {
        "CreateDataCellsFilter",
        "GetDataCellsFilter",
        "ListDataCellsFilter",
        "DeleteDataCellsFilter",
    } <= operations
    for name, body in answers:
        check_shape(MODEL.operation_model(name).output_shape, body, name)
