"""Lake Formation access carried from a source table to its target: the grants (to the principals
the request maps them to, grant option kept) and the LF-tags of the table and its columns.

A principal the request does not map is never granted anything: it is reported, so nobody gets
access by accident. Nothing is granted twice: what the target already grants is read first, and
only what is missing is granted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from icelake.errors import IcelakeError

Grant = tuple[str, str, str, bool]  # (principal, resource key, permission, with grant option)


@dataclass(frozen=True)
class TableRef:
    database: str
    name: str

    def resource(self) -> dict[str, Any]:
        return {"Table": {"DatabaseName": self.database, "Name": self.name}}


@dataclass
class Carried:
    """What carrying did: grants and tags made, principals left out, and what needs a person."""

    grants: int = 0
    tags: int = 0
    warnings: list[str] = field(default_factory=list)


def _pages(call: Any, key: str, **kwargs: Any) -> Iterable[dict[str, Any]]:
    token = None
    while True:
        page = call(**kwargs, **({"NextToken": token} if token else {}))
        yield from page.get(key, [])
        token = page.get("NextToken")
        if not token:
            return


def table_grants(lf: Any, table: TableRef) -> list[dict[str, Any]]:
    """The grants on the table and on its columns (ListPermissions on a table returns both)."""
    return [
        entry
        for entry in _pages(lf.list_permissions, "PrincipalResourcePermissions", Resource=table.resource())
        if _on_table(entry.get("Resource", {}), table)
    ]


def _on_table(resource: Mapping[str, Any], table: TableRef) -> bool:
    inner = resource.get("Table") or resource.get("TableWithColumns") or {}
    return bool(inner.get("DatabaseName") == table.database and inner.get("Name") == table.name)


def moved_resource(resource: Mapping[str, Any], target: TableRef) -> dict[str, Any]:
    """A grant's resource on the source table as the same resource on the target table: the table
    or the same columns (named, all, or all but some); the target's own catalog."""
    kind = "Table" if "Table" in resource else "TableWithColumns"
    inner = {k: v for k, v in resource[kind].items() if k not in ("CatalogId", "DatabaseName", "Name")}
    return {kind: {"DatabaseName": target.database, "Name": target.name, **inner}}


def _key(resource: Mapping[str, Any]) -> str:
    kind = "Table" if "Table" in resource else "TableWithColumns"
    inner = {k: v for k, v in resource[kind].items() if k != "CatalogId"}
    return repr((kind, sorted((k, repr(v)) for k, v in inner.items())))


def _held(entries: Iterable[dict[str, Any]]) -> set[Grant]:
    held: set[Grant] = set()
    for entry in entries:
        principal = entry["Principal"]["DataLakePrincipalIdentifier"]
        key = _key(entry["Resource"])
        held |= {(principal, key, p, False) for p in entry.get("Permissions", [])}
        held |= {(principal, key, p, True) for p in entry.get("PermissionsWithGrantOption", [])}
    return held


def carry_grants(
    source_lf: Any, target_lf: Any, source: TableRef, target: TableRef, principal_map: Mapping[str, str]
) -> Carried:
    """Grant each mapped principal on the target what its source principal holds on the source
    table and its columns; unmapped principals are listed in the warnings, never granted."""
    carried = Carried()
    held = _held(table_grants(target_lf, target))
    unmapped: set[str] = set()
    for entry in table_grants(source_lf, source):
        principal = principal_map.get(entry["Principal"]["DataLakePrincipalIdentifier"])
        if principal is None:
            unmapped.add(entry["Principal"]["DataLakePrincipalIdentifier"])
            continue
        resource = moved_resource(entry["Resource"], target)
        key = _key(resource)
        plain = [p for p in entry.get("Permissions", []) if (principal, key, p, False) not in held]
        option = [
            p for p in entry.get("PermissionsWithGrantOption", []) if (principal, key, p, True) not in held
        ]
        if not plain and not option:
            continue
        target_lf.grant_permissions(
            Principal={"DataLakePrincipalIdentifier": principal},
            Resource=resource,
            Permissions=sorted({*plain, *option}),
            PermissionsWithGrantOption=sorted(option),
        )
        held |= {(principal, key, p, False) for p in plain} | {(principal, key, p, True) for p in option}
        carried.grants += 1
    carried.warnings += [
        f"{p} holds Lake Formation permissions on the source table {source.database}.{source.name} but "
        "has no entry in target.lake_formation.principal_map: nothing was granted for it on the target"
        for p in sorted(unmapped)
    ]
    return carried


def grant_principals(target_lf: Any, target: TableRef, principals: Iterable[str]) -> int:
    """`lake_formation_principals`: SELECT and DESCRIBE on the target table, unless already held."""
    held = _held(table_grants(target_lf, target))
    key, granted = _key(target.resource()), 0
    for principal in principals:
        missing = [p for p in ("SELECT", "DESCRIBE") if (principal, key, p, False) not in held]
        if missing:
            target_lf.grant_permissions(
                Principal={"DataLakePrincipalIdentifier": principal},
                Resource=target.resource(),
                Permissions=missing,
            )
            granted += 1
    return granted


def _tags(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"TagKey": t["TagKey"], "TagValues": sorted(t["TagValues"])} for t in entries]


def carry_tags(
    source_lf: Any, target_lf: Any, source: TableRef, target: TableRef, columns: Iterable[str]
) -> Carried:
    """Create the LF-tags the source table and its columns carry in the target (with every value
    the source defines), then tag the target table and its columns as the source is tagged."""
    carried = Carried()
    on_table = source_lf.get_resource_lf_tags(Resource=source.resource(), ShowAssignedLFTags=True)
    table_tags = _tags(on_table.get("LFTagsOnTable", []))
    column_tags = {c["Name"]: _tags(c["LFTags"]) for c in on_table.get("LFTagsOnColumns", [])}
    names = list(columns)
    if names:  # the embedded AWS answers a table's column tags only when asked by column
        by_column = source_lf.get_resource_lf_tags(
            Resource={
                "TableWithColumns": {
                    "DatabaseName": source.database,
                    "Name": source.name,
                    "ColumnNames": names,
                }
            },
            ShowAssignedLFTags=True,
        )
        column_tags |= {c["Name"]: _tags(c["LFTags"]) for c in by_column.get("LFTagsOnColumns", [])}
    column_tags = {name: tags for name, tags in column_tags.items() if tags and tags != table_tags}
    keys = {t["TagKey"] for t in table_tags} | {t["TagKey"] for tags in column_tags.values() for t in tags}
    for key in sorted(keys):
        carried.tags += _ensure_tag(target_lf, key, source_lf.get_lf_tag(TagKey=key)["TagValues"])
    if table_tags:
        _add_tags(target_lf, target.resource(), table_tags)
    for name, tags in sorted(column_tags.items()):
        resource = {
            "TableWithColumns": {"DatabaseName": target.database, "Name": target.name, "ColumnNames": [name]}
        }
        _add_tags(target_lf, resource, tags)
    return carried


def _ensure_tag(lf: Any, key: str, values: list[str]) -> int:
    """The tag key exists in the target with at least `values`; 1 when it had to be created."""
    try:
        have = lf.get_lf_tag(TagKey=key).get("TagValues", [])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "EntityNotFoundException":
            raise
        have = []
    if not have:
        lf.create_lf_tag(TagKey=key, TagValues=sorted(values))
        return 1
    missing = sorted(set(values) - set(have))
    if missing:
        lf.update_lf_tag(TagKey=key, TagValuesToAdd=missing)
    return 0


def _add_tags(lf: Any, resource: dict[str, Any], tags: list[dict[str, Any]]) -> None:
    failures = lf.add_lf_tags_to_resource(Resource=resource, LFTags=tags).get("Failures", [])
    if failures:
        raise IcelakeError(f"could not tag {resource} in Lake Formation: {failures}")
