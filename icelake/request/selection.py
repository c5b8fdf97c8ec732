"""The Inventory's selection: the tables a request selects in the source catalog, each pinned
at its current metadata under its target name, and the selected tables icelake migrated before
whose source has gone. The Inventory step writes them as the run's worklist; `icelake assess
--request` and the Assess step assess the same tables."""

from __future__ import annotations

import fnmatch
from typing import Any

from pydantic import ValidationError

from icelake.aws import catalog
from icelake.errors import InvalidRequestError
from icelake.request.deps import Deps
from icelake.request.models import MigrationRequest, WorkItem
from icelake.request.names import Naming, TargetName, check_targets


def parse_request(raw: dict[str, Any]) -> MigrationRequest:
    try:
        return MigrationRequest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors())
        raise InvalidRequestError(f"malformed migration request: {problems}") from None


def work_items(request: MigrationRequest, deps: Deps, execution_arn: str | None = None) -> list[WorkItem]:
    """The request's tables, each pinned at its current metadata (commits after this moment wait
    for the next run) under its target name, and the selected tables icelake migrated before whose
    source is gone; names that collide are refused. `icelake assess` selects with this too."""
    naming = request.target.naming
    marked = _MarkedTargets(request, deps)
    chosen, dropped = _selected(request, deps, marked)
    targets = {key: naming.target_of(*key, _location(table)) for key, table in chosen.items()}
    targets |= {key: _found_target(naming, key, marked.of(key)) for key in dropped}
    check_targets(naming, targets)
    items = [_item(request, key, targets[key], marked) for key in sorted(dropped)]
    for key, table in sorted(chosen.items()):
        location = catalog.metadata_location(table)
        if not location:
            raise InvalidRequestError(f"{key[0]}.{key[1]} has no metadata_location parameter")
        items.append(_item(request, key, targets[key], marked, location, execution_arn))
    return items


Table = dict[str, Any]
Key = tuple[str, str]  # (source database, source table)


def _location(table: Table) -> str | None:
    return table.get("StorageDescriptor", {}).get("Location") or None


class _MarkedTargets:
    """The target tables icelake registered for this source account, by the source table their
    owner mark names: read once per source database, from every target database its tables can go
    to under the request's names (templates and renames)."""

    def __init__(self, request: MigrationRequest, deps: Deps) -> None:
        self.request = request
        self.glue = deps.sessions(request).target.client("glue")
        self.by_database: dict[str, dict[str, list[TargetName]]] = {}

    def in_database(self, database: str) -> dict[str, list[TargetName]]:
        """Source table name -> where icelake put it, for the source tables of `database`."""
        if database not in self.by_database:
            mark = f"{self.request.source.account_id}:{database}."
            found: dict[str, list[TargetName]] = {}
            for target_db in sorted(self.request.target.naming.databases_of(database)):
                if not catalog.database_exists(self.glue, target_db):
                    continue
                for table in catalog.list_tables(self.glue, target_db):
                    owner = str(table.get("Parameters", {}).get(catalog.OWNER_PARAMETER) or "")
                    if owner.startswith(mark):
                        location = _location(table) or ""
                        found.setdefault(owner[len(mark) :], []).append(
                            TargetName(target_db, table["Name"], location)
                        )
            self.by_database[database] = found
        return self.by_database[database]

    def of(self, key: Key) -> list[TargetName]:
        return self.in_database(key[0]).get(key[1], [])


def _found_target(naming: Naming, key: Key, found: list[TargetName]) -> TargetName:
    """Where a dropped source table's target is: at its name under the request's names, if icelake
    registered it there, else where icelake registered it."""
    wanted = naming.target_of(*key)
    return next((t for t in found if t.name == wanted.name), found[0])


def _selected(
    request: MigrationRequest, deps: Deps, marked: _MarkedTargets
) -> tuple[dict[Key, Table], set[Key]]:
    """(the source's Iceberg tables the selection names, keyed by (database, name); the selected
    tables icelake migrated before whose source is gone). Names that match nothing are refused."""
    glue = deps.sessions(request).source.client("glue")
    chosen: dict[Key, Table] = {}
    for database in request.selection.databases:
        if not catalog.database_exists(glue, database):
            raise InvalidRequestError(
                f"database {database} does not exist in account {request.source.account_id}"
            )
        for table in catalog.list_tables(glue, database):
            if catalog.is_iceberg(table) and _matches(request, table["Name"]):
                chosen[(database, table["Name"])] = table
    named, dropped = _named_tables(request, glue, marked)
    chosen |= named
    for database in request.selection.databases:
        names = {n for d, n in chosen if d == database}
        before = marked.in_database(database)
        dropped |= {(database, n) for n in before if n not in names and _matches(request, n)}
    return chosen, dropped


def _named_tables(
    request: MigrationRequest, glue: Any, marked: _MarkedTargets
) -> tuple[dict[Key, Table], set[Key]]:
    """The tables the selection names one by one: found, or gone from a source icelake migrated
    before; any other name is refused, all problems in one error."""
    found_tables: dict[Key, Table] = {}
    dropped: set[Key] = set()
    problems = []
    for ident in request.selection.tables:
        database, name = ident.split(".")
        found = catalog.get_table(glue, database, name)
        if found is None and marked.of((database, name)):
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


def _item(
    request: MigrationRequest,
    key: Key,
    target: TargetName,
    marked: _MarkedTargets,
    metadata_location: str | None = None,
    execution_arn: str | None = None,
) -> WorkItem:
    """The work item of one table; without a metadata location, a source that was dropped."""
    return WorkItem(
        run_id=request.run_id,
        source_database=key[0],
        source_table=key[1],
        source_metadata_location=metadata_location or "",
        target_database=target.database,
        target_table=target.table,
        target_location=target.location,
        request=request,
        execution_arn=execution_arn,
        source_dropped=metadata_location is None,
        # a rename changed since: the earlier target is left as it is, and reported
        earlier_targets=sorted(t.name for t in marked.of(key) if t.name != target.name),
    )
