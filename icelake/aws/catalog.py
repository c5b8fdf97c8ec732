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
# A view's TableInput takes its SQL back too (a rollback's restore of a view icelake updated).
VIEW_INPUT_FIELDS = (*_TABLE_INPUT_FIELDS, "ViewOriginalText", "ViewExpandedText", "ViewDefinition")


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


# Parameters that are the table's pointer or icelake's own marks: never carried from a source
# (they point at the source, or say what icelake did there), and set by icelake on the target.
NOT_CARRIED_PARAMETERS = frozenset(
    {
        "table_type",
        "metadata_location",
        "previous_metadata_location",
        OWNER_PARAMETER,
        PROMOTED_PARAMETER,
        PROMOTED_TO_PARAMETER,
    }
)


def carried_metadata(table: dict[str, Any] | None) -> dict[str, Any]:
    """What of a Glue table icelake carries to its target besides the Iceberg pointer: its
    Description and Owner, its other Parameters (owner tags, classification, custom keys) and its
    columns with their comments; compared as they are by Validate."""
    if table is None:
        return {}
    carried: dict[str, Any] = {k: table[k] for k in ("Description", "Owner") if table.get(k)}
    parameters = {k: v for k, v in table.get("Parameters", {}).items() if k not in NOT_CARRIED_PARAMETERS}
    if parameters:
        carried["Parameters"] = parameters
    columns = table.get("StorageDescriptor", {}).get("Columns")
    if columns:
        carried["Columns"] = columns
    return carried


def metadata_differences(source: dict[str, Any] | None, target: dict[str, Any] | None) -> list[str]:
    """How the target's carried Glue metadata differs from the source's: one line per field."""
    want, got = carried_metadata(source), carried_metadata(target)
    problems = []
    for key in ("Description", "Owner", "Columns"):
        if want.get(key) != got.get(key):
            problems.append(f"Glue {key}: the source has {want.get(key)!r}, the target {got.get(key)!r}")
    want_params, got_params = want.get("Parameters", {}), got.get("Parameters", {})
    for key in sorted(set(want_params) | set(got_params)):
        if want_params.get(key) != got_params.get(key):
            problems.append(
                f"Glue parameter {key}: the source has {want_params.get(key)!r}, "
                f"the target {got_params.get(key)!r}"
            )
    return problems


def _table_input(
    name: str,
    location: str,
    metadata: str,
    previous: str | None,
    owner: str,
    carried: dict[str, Any] | None = None,
) -> dict[str, Any]:
    carried = carried or {}
    params = {
        **carried.get("Parameters", {}),
        "table_type": ICEBERG,
        "metadata_location": metadata,
        OWNER_PARAMETER: owner,
    }
    if previous:
        params["previous_metadata_location"] = previous
    table_input: dict[str, Any] = {
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": params,
        "StorageDescriptor": {"Location": location},
    }
    table_input |= {k: carried[k] for k in ("Description", "Owner") if k in carried}
    if carried.get("Columns"):
        table_input["StorageDescriptor"]["Columns"] = carried["Columns"]
    return table_input


def check_target_is_ours(existing: dict[str, Any] | None, owner: str, target: str) -> None:
    if existing is None:
        return
    found = existing.get("Parameters", {}).get(OWNER_PARAMETER)
    if found != owner:
        raise TargetNotOursError(
            f"target table {target} exists and icelake did not create it for {owner} (owner mark: "
            f"{found or 'none'}), so icelake leaves it untouched: send this table to another target "
            "name (target.names or target.renames) or another target database"
        )


def register_table(
    glue: Any,
    database: str,
    name: str,
    location: str,
    new_metadata: str,
    expected_previous: str | None,
    owner: str,
    carried: dict[str, Any] | None = None,
) -> None:
    """Create the table, or move it from `expected_previous` to `new_metadata`; never clobber.
    `carried`: the source's Glue metadata to carry (`carried_metadata`)."""
    ensure_database(glue, database)
    current = get_table(glue, database, name)
    if current is None:
        if expected_previous is not None:
            raise ConcurrentCatalogChangeError(f"{database}.{name} was dropped while the migration ran")
        glue.create_table(
            DatabaseName=database,
            TableInput=_table_input(name, location, new_metadata, None, owner, carried),
        )
        return
    check_target_is_ours(current, owner, f"{database}.{name}")
    found = metadata_location(current)
    if found == new_metadata and carried_metadata(current) == (carried or {}):
        return  # a re-run of a step that already registered
    if found not in (expected_previous, new_metadata):
        raise ConcurrentCatalogChangeError(
            f"{database}.{name} points at {found}, expected {expected_previous}: it changed while the "
            "migration ran; nothing was overwritten, re-run the migration"
        )
    # the pointer already moved (a re-run whose carried metadata changed): its previous stays
    previous = found if found != new_metadata else current["Parameters"].get("previous_metadata_location")
    kwargs: dict[str, Any] = {}
    if current.get("VersionId"):
        kwargs["VersionId"] = current["VersionId"]  # AWS rejects the update if another one landed first
    glue.update_table(
        DatabaseName=database,
        TableInput=_table_input(name, location, new_metadata, previous, owner, carried),
        **kwargs,
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
            DatabaseName=database,
            TableInput=_table_input(name, location, previous, None, owner, carried_metadata(current)),
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


def move_pointer(glue: Any, database: str, name: str, new_metadata: str, expected: str) -> None:
    """Point a table icelake promoted at `new_metadata`, only from `expected` (a carry-over's
    commit, or its rollback), keeping everything else of the Glue table as it is: someone else's
    commit since is never overwritten."""
    current = get_table(glue, database, name)
    found = metadata_location(current) if current else None
    if found == new_metadata:
        return  # a re-run of a step that already moved it
    if current is None or found != expected:
        raise ConcurrentCatalogChangeError(
            f"{database}.{name} points at {found}, expected {expected}: a writer committed to it meanwhile; "
            "nothing was overwritten, run the carry-over again"
        )
    table_input = {k: current[k] for k in _TABLE_INPUT_FIELDS if k in current}
    table_input["Parameters"] = {
        **current.get("Parameters", {}),
        "metadata_location": new_metadata,
        "previous_metadata_location": expected,
    }
    # VersionId of the version read above: AWS refuses the update if another one landed since.
    kwargs: dict[str, Any] = {"VersionId": current["VersionId"]} if current.get("VersionId") else {}
    glue.update_table(DatabaseName=database, TableInput=table_input, **kwargs)
