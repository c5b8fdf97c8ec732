"""Lake Formation data cells filters for the embedded AWS, which moto 5.2.5 lacks (its
ListDataCellsFilter always answers an empty list): CreateDataCellsFilter, GetDataCellsFilter,
ListDataCellsFilter, DeleteDataCellsFilter, and grants on a DataCellsFilter resource listed by
ListPermissions. Requests and answers follow the service model's shapes in botocore's own JSON
(`DataCellsFilter`, `TableResource`, `DataCellsFilterResource`); tests/functional/
test_data_filters_backend.py checks every answer against them.

What it does not do: enforce the filters on reads (moto enforces no Lake Formation permission).
Installed by icelake/local/embedded.py with its other patches and undone with them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

NEW_PATHS = ("CreateDataCellsFilter", "GetDataCellsFilter", "DeleteDataCellsFilter")
_KEY = ("TableCatalogId", "DatabaseName", "TableName", "Name")
PAGE = 100  # ListDataCellsFilter's MaxResults default and cap here


def _store(backend: Any) -> dict[tuple[str, ...], dict[str, Any]]:
    if not hasattr(backend, "icelake_data_filters"):
        backend.icelake_data_filters = {}
    store: dict[tuple[str, ...], dict[str, Any]] = backend.icelake_data_filters
    return store


def _key(values: dict[str, Any], account: str) -> tuple[str, ...]:
    return tuple(str(values.get(k) or (account if k == "TableCatalogId" else "")) for k in _KEY)


_ORIGINAL: dict[str, Callable[[Any], str]] = {}  # moto's own ListPermissions handler


def _errors() -> Any:
    from moto.lakeformation import exceptions

    return exceptions


def create_data_cells_filter(self: Any) -> str:
    data = dict(self._get_param("TableData"))
    if not data.get("RowFilter") or not (data.get("ColumnNames") or "ColumnWildcard" in data):
        raise _errors().InvalidInput(
            "A data cells filter needs a RowFilter and ColumnNames or a ColumnWildcard"
        )
    store = _store(self.lakeformation_backend)
    key = _key(data, self.current_account)
    if key in store:
        raise _errors().AlreadyExists(f"A data cells filter named {data['Name']} already exists on the table")
    store[key] = {**data, "TableCatalogId": key[0], "VersionId": "1"}
    return "{}"


def get_data_cells_filter(self: Any) -> str:
    found = _store(self.lakeformation_backend).get(_key(json.loads(self.body or "{}"), self.current_account))
    if found is None:
        raise _errors().EntityNotFound()
    return json.dumps({"DataCellsFilter": found})


def delete_data_cells_filter(self: Any) -> str:
    store = _store(self.lakeformation_backend)
    if store.pop(_key(json.loads(self.body or "{}"), self.current_account), None) is None:
        raise _errors().EntityNotFound()
    return "{}"


def list_data_cells_filter(self: Any) -> str:
    table = self._get_param("Table") or {}
    where = (table.get("CatalogId") or self.current_account, table.get("DatabaseName"), table.get("Name"))
    found = [
        f for key, f in sorted(_store(self.lakeformation_backend).items()) if not table or key[:3] == where
    ]
    start = int(self._get_param("NextToken") or 0)
    size = min(int(self._get_param("MaxResults") or PAGE), PAGE)
    page: dict[str, Any] = {"DataCellsFilters": found[start : start + size]}
    if start + size < len(found):
        page["NextToken"] = str(start + size)
    return json.dumps(page)


def list_permissions(self: Any) -> str:
    """moto's ListPermissions, and the grants on a DataCellsFilter resource it cannot list."""
    resource = self._get_param("Resource") or {}
    if "DataCellsFilter" not in resource:
        return _ORIGINAL["list_permissions"](self)
    wanted = _key(resource["DataCellsFilter"], self.current_account)
    grants = self.lakeformation_backend.grants.get(self._get_param("CatalogId") or self.current_account)
    principal = self._get_param("Principal")
    entries = [
        p.to_external_form()
        for p in (grants.permissions if grants else [])
        if "DataCellsFilter" in p.resource
        and _key(p.resource["DataCellsFilter"], self.current_account) == wanted
        and principal in (None, p.principal)
    ]
    return json.dumps({"PrincipalResourcePermissions": entries})


def install(replace: Callable[[Any, str, Any], None]) -> None:
    """Add the operations to moto's Lake Formation (`replace(owner, name, value)` records each
    change so that it can be undone); before the embedded server first answers Lake Formation."""
    from moto.lakeformation import responses, urls

    response_class = responses.LakeFormationResponse
    paths = dict(urls.url_paths)
    for name in NEW_PATHS:
        paths["{0}/" + name + "$"] = urls.response.dispatch
    replace(urls, "url_paths", paths)
    _ORIGINAL.setdefault("list_permissions", response_class.list_permissions)
    for method in (
        create_data_cells_filter,
        get_data_cells_filter,
        delete_data_cells_filter,
        list_data_cells_filter,
        list_permissions,
    ):
        replace(response_class, method.__name__, method)
