"""The Glue Data Catalog as Iceberg sees it: list, read, register and restore Iceberg tables."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from icelake.errors import ConcurrentCatalogChangeError, TargetNotOursError

ICEBERG = "ICEBERG"
OWNER_PARAMETER = "icelake.source"  # marks a target table as ours: "<account>:<db>.<table>"
PROMOTED_PARAMETER = "icelake.promoted_at"  # a target table that a cutover made the table's home
PROMOTED_TO_PARAMETER = "icelake.promoted_to"  # on the source, with options.mark_source only
# The fields of GetTable's answer that UpdateTable accepts back in its TableInput.
_TABLE_INPUT_FIELDS = (
    "Name",
    "Description",
    "Owner",
    "Retention",
    "StorageDescriptor",
    "PartitionKeys",
    "TableType",
    "Parameters",
    "TargetTable",
)


def _is_not_found(exc: ClientError) -> bool:
    return bool(exc.response.get("Error", {}).get("Code") == "EntityNotFoundException")


def is_iceberg(table: dict[str, Any]) -> bool:
    return bool(str(table.get("Parameters", {}).get("table_type", "")).upper() == ICEBERG)


def get_table(glue: Any, database: str, name: str) -> dict[str, Any] | None:
    try:
        table: dict[str, Any] = glue.get_table(DatabaseName=database, Name=name)["Table"]
    except ClientError as exc:
        if _is_not_found(exc):
            return None
        raise
    return table


def list_tables(glue: Any, database: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for page in glue.get_paginator("get_tables").paginate(DatabaseName=database):
        out += page.get("TableList", [])
    return out


def metadata_location(table: dict[str, Any]) -> str | None:
    value = table.get("Parameters", {}).get("metadata_location")
    return str(value) if value else None


def database_exists(glue: Any, database: str) -> bool:
    try:
        glue.get_database(Name=database)
    except ClientError as exc:
        if _is_not_found(exc):
            return False
        raise
    return True


def ensure_database(glue: Any, database: str) -> None:
    try:
        glue.create_database(DatabaseInput={"Name": database})
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "AlreadyExistsException":
            raise


def _table_input(name: str, location: str, metadata: str, previous: str | None, owner: str) -> dict[str, Any]:
    params = {"table_type": ICEBERG, "metadata_location": metadata, OWNER_PARAMETER: owner}
    if previous:
        params["previous_metadata_location"] = previous
    return {
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": params,
        "StorageDescriptor": {"Location": location},
    }


def check_target_is_ours(existing: dict[str, Any] | None, owner: str, target: str) -> None:
    if existing is None:
        return
    found = existing.get("Parameters", {}).get(OWNER_PARAMETER)
    if found != owner:
        raise TargetNotOursError(
            f"target table {target} exists and was not created by icelake for {owner} "
            f"(owner: {found or 'none'}); drop it or choose another target database"
        )


def register_table(
    glue: Any,
    database: str,
    name: str,
    location: str,
    new_metadata: str,
    expected_previous: str | None,
    owner: str,
) -> None:
    """Create the table, or move it from `expected_previous` to `new_metadata`; never clobber."""
    ensure_database(glue, database)
    current = get_table(glue, database, name)
    if current is None:
        if expected_previous is not None:
            raise ConcurrentCatalogChangeError(f"{database}.{name} was dropped while the migration ran")
        glue.create_table(
            DatabaseName=database, TableInput=_table_input(name, location, new_metadata, None, owner)
        )
        return
    check_target_is_ours(current, owner, f"{database}.{name}")
    found = metadata_location(current)
    if found == new_metadata:
        return  # a re-run of a step that already registered
    if found != expected_previous:
        raise ConcurrentCatalogChangeError(
            f"{database}.{name} points at {found}, expected {expected_previous}: it changed while the "
            "migration ran; nothing was overwritten, re-run the migration"
        )
    kwargs: dict[str, Any] = {}
    if current.get("VersionId"):
        kwargs["VersionId"] = current["VersionId"]  # AWS rejects the update if another one landed first
    glue.update_table(
        DatabaseName=database, TableInput=_table_input(name, location, new_metadata, found, owner), **kwargs
    )


def restore_table(glue: Any, database: str, name: str, previous: str | None, owner: str) -> str:
    """Put the table back as it was before the run: previous metadata, or no table at all."""
    current = get_table(glue, database, name)
    if current is None:
        return "absent"
    if current.get("Parameters", {}).get(OWNER_PARAMETER) != owner:
        return "not ours: left alone"
    if previous is None:
        glue.delete_table(DatabaseName=database, Name=name)
        return "deleted"
    if metadata_location(current) != previous:
        location = current.get("StorageDescriptor", {}).get("Location", "")
        glue.update_table(
            DatabaseName=database, TableInput=_table_input(name, location, previous, None, owner)
        )
        return "restored"
    return "unchanged"


def set_parameters(glue: Any, database: str, name: str, parameters: dict[str, str]) -> None:
    """Add or change table parameters, keeping everything else of the table as it is."""
    current = get_table(glue, database, name)
    if current is None:
        raise ConcurrentCatalogChangeError(f"{database}.{name} was dropped while the migration ran")
    table_input = {k: current[k] for k in _TABLE_INPUT_FIELDS if k in current}
    table_input["Parameters"] = {**current.get("Parameters", {}), **parameters}
    kwargs: dict[str, Any] = {"VersionId": current["VersionId"]} if current.get("VersionId") else {}
    glue.update_table(DatabaseName=database, TableInput=table_input, **kwargs)
