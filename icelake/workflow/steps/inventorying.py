"""Inventory: the tables a request selects in the source catalog, and the icelake targets whose
source has gone, written as the run's worklist for the Map."""

from __future__ import annotations

import fnmatch
from typing import Any

from pydantic import ValidationError

from icelake.aws import catalog
from icelake.errors import InvalidRequestError
from icelake.workflow.inputs import InventoryInput
from icelake.workflow.models import InventoryResult, MigrationRequest, WorkItem
from icelake.workflow.steps.deps import Deps


def parse_request(raw: dict[str, Any]) -> MigrationRequest:
    try:
        return MigrationRequest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors())
        raise InvalidRequestError(f"malformed migration request: {problems}") from None


def inventory(given: InventoryInput, deps: Deps) -> InventoryResult:
    """The execution name is the run id unless the request names one."""
    request = parse_request({"run_id": given.execution_name, **given.request})
    chosen, dropped = _selected(request, deps)
    items = [_item(request, database, name) for database, name in sorted(dropped)]
    for (database, name), table in sorted(chosen.items()):
        location = catalog.metadata_location(table)
        if not location:
            raise InvalidRequestError(f"{database}.{name} has no metadata_location parameter")
        # pinned: commits after this moment wait for the next run
        items.append(_item(request, database, name, location, given.execution_arn))
    key = f"runs/{request.run_id}/worklist.json"
    deps.artifacts.put_json(key, [item.model_dump(mode="json") for item in items])
    return InventoryResult(
        run_id=request.run_id,
        tables=len(items),
        worklist_bucket=deps.env.artifacts_bucket,
        worklist_key=key,
        concurrency=request.options.concurrency,
    )


Table = dict[str, Any]


def _selected(
    request: MigrationRequest, deps: Deps
) -> tuple[dict[tuple[str, str], Table], set[tuple[str, str]]]:
    """(the source's Iceberg tables the selection names, keyed by (database, name); the selected
    tables icelake migrated before whose source is gone). Names that match nothing are refused."""
    glue = deps.sessions(request).source.client("glue")
    chosen: dict[tuple[str, str], Table] = {}
    for database in request.selection.databases:
        if not catalog.database_exists(glue, database):
            raise InvalidRequestError(
                f"database {database} does not exist in account {request.source.account_id}"
            )
        for table in catalog.list_tables(glue, database):
            if catalog.is_iceberg(table) and _matches(request, table["Name"]):
                chosen[(database, table["Name"])] = table
    named, dropped = _named_tables(request, deps, glue)
    chosen |= named
    for database in request.selection.databases:
        names = {n for d, n in chosen if d == database}
        before = _migrated_before(request, deps, database, None)
        dropped |= {(d, n) for d, n in before if n not in names and _matches(request, n)}
    return chosen, dropped


def _named_tables(
    request: MigrationRequest, deps: Deps, glue: Any
) -> tuple[dict[tuple[str, str], Table], set[tuple[str, str]]]:
    """The tables the selection names one by one: found, or gone from a source icelake migrated
    before; any other name is refused, all problems in one error."""
    found_tables: dict[tuple[str, str], Table] = {}
    dropped: set[tuple[str, str]] = set()
    problems = []
    for ident in request.selection.tables:
        database, name = ident.split(".")
        found = catalog.get_table(glue, database, name)
        if found is None and (database, name) in _migrated_before(request, deps, database, [name]):
            dropped.add((database, name))
        elif found is None:
            problems.append(f"{ident} does not exist in account {request.source.account_id}")
        elif not catalog.is_iceberg(found):
            problems.append(f"{ident} is not an Iceberg table (table_type is not ICEBERG)")
        else:
            found_tables[(database, name)] = found
    if problems:
        raise InvalidRequestError("; ".join(problems))
    return found_tables, dropped


def _matches(request: MigrationRequest, name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in request.selection.patterns)


def _migrated_before(
    request: MigrationRequest, deps: Deps, database: str, names: list[str] | None
) -> set[tuple[str, str]]:
    """Source tables of `database` (all, or `names`) that icelake registered in the target catalog:
    the target tables that carry this source's owner mark."""
    glue = deps.sessions(request).target.client("glue")
    target_db = request.target.database_prefix + database
    if names is None:
        if not catalog.database_exists(glue, target_db):
            return set()
        candidates = catalog.list_tables(glue, target_db)
    else:
        candidates = [t for n in names if (t := catalog.get_table(glue, target_db, n)) is not None]
    mark = f"{request.source.account_id}:{database}."
    owners = (t.get("Parameters", {}).get(catalog.OWNER_PARAMETER) or "" for t in candidates)
    return {(database, owner[len(mark) :]) for owner in owners if owner.startswith(mark)}


def _item(
    request: MigrationRequest,
    database: str,
    name: str,
    metadata_location: str | None = None,
    execution_arn: str | None = None,
) -> WorkItem:
    """The work item of one table; without a metadata location, a source that was dropped."""
    target_db = request.target.database_prefix + database
    return WorkItem(
        run_id=request.run_id,
        source_database=database,
        source_table=name,
        source_metadata_location=metadata_location or "",
        target_database=target_db,
        target_table=name,
        target_location=request.target.table_location(target_db, name),
        request=request,
        execution_arn=execution_arn,
        source_dropped=metadata_location is None,
    )
