"""A source table's Lake Formation data cells filters carried to its target with their grants
(`target.lake_formation.copy_permissions`): the same name, row filter expression, and column
names or wildcard with exclusions, granted to the principals `principal_map` maps.

Checked before anything is granted on the target table: a filter that names a column the target
lacks (in its columns, exclusions or row expression) refuses the table, since a filter Lake
Formation cannot apply would leave its principals either nothing or the whole table. A principal
that held the source only through filters is granted the filters, never the unfiltered table."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from icelake.aws.lake_formation import Carried, TableRef, _pages
from icelake.errors import DataFilterRefusedError

_FILTER_KEY = ("TableCatalogId", "DatabaseName", "TableName", "Name")
_DEFINITION = ("RowFilter", "ColumnNames", "ColumnWildcard")
# Words of Lake Formation's row filter expressions (a PartiQL subset) that are not column names.
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "like", "between", "true", "false", "date", "timestamp"}
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"([^\"]+)\"|`([^`]+)`|\b([A-Za-z_][A-Za-z0-9_]*)\b")


def source_filters(source_lf: Any, source: TableRef) -> list[dict[str, Any]]:
    table = {"DatabaseName": source.database, "Name": source.name}
    return [
        f
        for f in _pages(source_lf.list_data_cells_filter, "DataCellsFilters", Table=table)
        if f.get("DatabaseName") == source.database and f.get("TableName") == source.name
    ]


def expression_columns(expression: str) -> set[str]:
    """The column names a row filter expression reads (quoted or bare; literals and keywords not)."""
    names = set()
    for match in _TOKENS.finditer(expression):
        quoted, ticked, bare = match.groups()
        name = quoted or ticked or bare
        if name and (quoted or ticked or name.lower() not in _KEYWORDS):
            names.add(name)
    return names


def filter_columns(data_filter: Mapping[str, Any]) -> set[str]:
    """Every column a filter names: its columns, its exclusions and its row expression's."""
    row = data_filter.get("RowFilter", {})
    return (
        set(data_filter.get("ColumnNames", []))
        | set(data_filter.get("ColumnWildcard", {}).get("ExcludedColumnNames", []))
        | expression_columns(row.get("FilterExpression", ""))
    )


def check_filters(filters: Iterable[Mapping[str, Any]], target: TableRef, columns: Iterable[str]) -> None:
    """Refuse the table (DataFilterRefusedError) when a filter names a column the target lacks."""
    have = {c.lower() for c in columns}
    for data_filter in filters:
        missing = sorted(c for c in filter_columns(data_filter) if c.lower() not in have)
        if missing:
            raise DataFilterRefusedError(
                f"the source's data cells filter {data_filter.get('Name')!r} names column(s) "
                f"{', '.join(missing)} that the target {target.database}.{target.name} does not have: "
                "nothing was granted on the target; fix or drop the filter at the source, then migrate again"
            )


def carry_filters(
    source_lf: Any,
    target_lf: Any,
    filters: Iterable[Mapping[str, Any]],
    target: tuple[TableRef, str],
    principal_map: Mapping[str, str],
) -> Carried:
    """Create each filter on the target table (`target`: the table and its catalog id) unless it is
    there as it is, and grant it to the mapped principals of its source grants."""
    table, catalog_id = target
    carried = Carried()
    for data_filter in filters:
        moved = {
            "TableCatalogId": catalog_id,
            "DatabaseName": table.database,
            "TableName": table.name,
            "Name": data_filter["Name"],
            **{k: data_filter[k] for k in _DEFINITION if k in data_filter},
        }
        _ensure_filter(target_lf, moved)
        source_key = {k: data_filter[k] for k in _FILTER_KEY if k in data_filter}
        grants = source_lf.list_permissions(Resource={"DataCellsFilter": source_key})
        carried.grants += _grant(
            target_lf, moved, grants["PrincipalResourcePermissions"], principal_map, carried
        )
    return carried


def _ensure_filter(target_lf: Any, moved: dict[str, Any]) -> None:
    key = {k: moved[k] for k in _FILTER_KEY}
    try:
        there = target_lf.get_data_cells_filter(**key)["DataCellsFilter"]
    except target_lf.exceptions.EntityNotFoundException:
        target_lf.create_data_cells_filter(TableData=moved)
        return
    if {k: there.get(k) for k in _DEFINITION} != {k: moved.get(k) for k in _DEFINITION}:
        raise DataFilterRefusedError(
            f"the target table {moved['DatabaseName']}.{moved['TableName']} has a data cells filter "
            f"{moved['Name']!r} that differs from the source's: icelake changes no filter it did not "
            "create; drop or rename it on the target, then migrate again"
        )


def _grant(
    target_lf: Any,
    moved: dict[str, Any],
    source_grants: list[dict[str, Any]],
    principal_map: Mapping[str, str],
    carried: Carried,
) -> int:
    resource = {"DataCellsFilter": {k: moved[k] for k in _FILTER_KEY}}
    held = {
        (e["Principal"]["DataLakePrincipalIdentifier"], p)
        for e in target_lf.list_permissions(Resource=resource)["PrincipalResourcePermissions"]
        for p in e.get("Permissions", [])
    }
    granted = 0
    for entry in source_grants:
        source_principal = entry["Principal"]["DataLakePrincipalIdentifier"]
        principal = principal_map.get(source_principal)
        if principal is None:
            carried.warnings.append(
                f"{source_principal} holds the source's data cells filter {moved['Name']!r} but has no "
                "entry in target.lake_formation.principal_map: nothing was granted for it on the target"
            )
            continue
        missing = sorted(p for p in entry.get("Permissions", []) if (principal, p) not in held)
        if missing:
            target_lf.grant_permissions(
                Principal={"DataLakePrincipalIdentifier": principal}, Resource=resource, Permissions=missing
            )
            held |= {(principal, p) for p in missing}
            granted += 1
    return granted


def filtered_only(
    source_lf: Any,
    filters: Iterable[Mapping[str, Any]],
    table_grants: Iterable[Mapping[str, Any]],
    principal_map: Mapping[str, str],
) -> set[str]:
    """The target principals whose source principals held the table only through filters: they
    must never get SELECT on the unfiltered target (`lake_formation_principals` included)."""
    through_filters = {
        e["Principal"]["DataLakePrincipalIdentifier"]
        for f in filters
        for e in source_lf.list_permissions(
            Resource={"DataCellsFilter": {k: f[k] for k in _FILTER_KEY if k in f}}
        )["PrincipalResourcePermissions"]
    }
    whole = {
        e["Principal"]["DataLakePrincipalIdentifier"]
        for e in table_grants
        if "SELECT" in e.get("Permissions", [])
    }
    return {principal_map[p] for p in through_filters - whole if p in principal_map}
