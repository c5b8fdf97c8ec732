"""The Inventory's selection: the tables a request selects in the source catalog, each pinned
at its current metadata under its target name, and the selected tables icelake migrated before
whose source has gone. The Inventory step writes them as the run's worklist; `icelake assess
--request` and the Assess step assess the same tables."""

from __future__ import annotations

import fnmatch
from collections import Counter
from typing import Any

from pydantic import ValidationError

from icelake.aws import catalog
from icelake.errors import InvalidRequestError
from icelake.request.deps import Deps
from icelake.request.models import MigrationRequest, WorkItem
from icelake.request.names import Naming, TargetName, check_targets
from icelake.uris import canonical


def parse_request(raw: object) -> MigrationRequest:
    """The request, every field checked (icelake/request/models.py), or one line naming each field
    that is wrong and what a valid one looks like."""
    try:
        return MigrationRequest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors()[:5])
        more = len(exc.errors()) - 5
        if more > 0:
            problems += f"; and {more} more"
        raise InvalidRequestError(f"malformed migration request: {problems}") from None


def _problem(error: Any) -> str:
    where = ".".join(map(str, error["loc"])) or "request"
    if error["type"] == "extra_forbidden":
        return (
            f"{where}: not a field of a migration request (check its spelling; README 'Migrate many tables')"
        )
    if error["type"] == "missing":
        return f"{where}: missing (see tests/events/migrate_request.json for a whole request)"
    message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return f"{where}: {' '.join(message.split())}"


def work_items(request: MigrationRequest, deps: Deps, execution_arn: str | None = None) -> list[WorkItem]:
    """The request's tables, each pinned at its current metadata (commits after this moment wait
    for the next run) under its target name, and the selected tables icelake migrated before whose
    source is gone; names that collide are refused. `icelake assess` selects with this too."""
    naming = request.target.naming
    marked = _MarkedTargets(request, deps)
    chosen, dropped, others = _selected(request, deps, marked)
    targets = _targets(naming, chosen)
    targets |= {key: _found_target(naming, key, marked.of(key)) for key in dropped}
    check_targets(naming, targets, renamed_elsewhere=others)
    _not_onto_sources(request, chosen, targets)
    items = [_item(request, key, targets[key], marked) for key in sorted(dropped)]
    for key, table in sorted(chosen.items()):
        location = catalog.metadata_location(table)
        if not location:
            raise InvalidRequestError(f"{key[0]}.{key[1]} has no metadata_location parameter")
        items.append(_item(request, key, targets[key], marked, location, execution_arn))
    return items


Table = dict[str, Any]
Key = tuple[str, str]  # (source database, source table)


def _targets(naming: Naming, chosen: dict[Key, Table]) -> dict[Key, TargetName]:
    """Each chosen table's target name and location; every name the target refuses is refused
    at once, in one line (the first few, and a count), before anything is written."""
    targets: dict[Key, TargetName] = {}
    problems: list[str] = []
    for key, table in sorted(chosen.items()):
        try:
            targets[key] = naming.target_of(*key, _location(table))
        except InvalidRequestError as exc:
            problems.append(str(exc))
    if problems:
        raise InvalidRequestError(_first_few(problems))
    return targets


def _first_few(problems: list[str]) -> str:
    more = f"; and {len(problems) - 5:,} more" if len(problems) > 5 else ""
    return "; ".join(problems[:5]) + more


def _location(table: Table) -> str | None:
    return table.get("StorageDescriptor", {}).get("Location") or None


def _not_onto_sources(
    request: MigrationRequest, chosen: dict[Key, Table], targets: dict[Key, TargetName]
) -> None:
    """Refuse, before anything runs, a target that is a selected source table (one catalog, one
    name) or whose location overlaps a source table's: a copy there would write what it reads."""
    one_catalog = request.target.kind == "glue" and (request.source.account_id, request.source.region) == (
        request.target.account_id,
        request.target.region,
    )
    # every source location and each of its parents -> the source table it is or holds
    around: dict[str, Key] = {}
    for key, table in sorted(chosen.items()):
        location = _location(table)
        for path in _self_and_parents(canonical(location)) if location else ():
            around.setdefault(path, key)
    sources = {canonical(loc): key for key, table in chosen.items() if (loc := _location(table))}
    for key, target in sorted(targets.items()):
        if one_catalog and (target.database, target.table) in chosen:
            raise InvalidRequestError(
                f"target {target.name} is the source table itself: set target.names, target.renames or "
                "another account"
            )
        where = canonical(target.location)
        other = around.get(where) or next(
            (sources[p] for p in _self_and_parents(where) if p in sources), None
        )
        if other is not None:
            raise InvalidRequestError(
                f"target {target.name} of {key[0]}.{key[1]} at {target.location} overlaps the location "
                f"of source table {other[0]}.{other[1]}: set target.bucket, target.prefix or "
                "target.prefix_maps so that no target lies in or around a source table"
            )


def _self_and_parents(uri: str) -> list[str]:
    """s3://b/a/c -> [s3://b/a/c, s3://b/a, s3://b]."""
    scheme, _, rest = uri.rstrip("/").partition("://")
    parts = rest.split("/")
    return [f"{scheme}://{'/'.join(parts[:n])}" for n in range(len(parts), 0, -1)]


class _MarkedTargets:
    """The target tables icelake registered for this source account, by the source table their
    owner mark names: read once per source database, from every target database its tables can go
    to under the request's names (templates and renames)."""

    def __init__(self, request: MigrationRequest, deps: Deps) -> None:
        self.request = request
        self.glue = deps.sessions(request).target.client("glue")
        self.deps = deps  # its ledger lists an S3 Tables target's tables (read only then)
        self.by_database: dict[str, dict[str, list[TargetName]]] = {}

    def in_database(self, database: str) -> dict[str, list[TargetName]]:
        """Source table name -> where icelake put it, for the source tables of `database`."""
        if self.request.target.kind == "s3tables" and database not in self.by_database:
            self.by_database[database] = self._in_table_bucket(database)
        if database not in self.by_database:
            mark = f"{self.request.source.account_id}:{database}."
            found: dict[str, list[TargetName]] = {}
            for target_db in sorted(self.request.target.naming.databases_of(database)):
                if not catalog.database_exists(self.glue, target_db):
                    continue
                for table in catalog.list_tables(self.glue, target_db):
                    owner = str(table.get("Parameters", {}).get(catalog.OWNER_PARAMETER) or "")
                    if owner.startswith(mark) and catalog.is_iceberg(table):  # views: icelake/objects/
                        location = _location(table) or ""
                        found.setdefault(owner[len(mark) :], []).append(
                            TargetName(target_db, table["Name"], location)
                        )
            self.by_database[database] = found
        return self.by_database[database]

    def of(self, key: Key) -> list[TargetName]:
        return self.in_database(key[0]).get(key[1], [])

    def _in_table_bucket(self, database: str) -> dict[str, list[TargetName]]:
        """The same from an S3 Tables target: the tables icelake created in each namespace, as
        the ledger lists them (one query a namespace; their locations wait for Plan)."""
        mark = f"{self.request.source.account_id}:{database}."
        naming = self.request.target.naming
        found: dict[str, list[TargetName]] = {}
        for namespace in sorted(naming.databases_of(database)):
            for row in self.deps.ledger.owned_in(f"{self.request.target.table_bucket_arn}/{namespace}"):
                owner, name = str(row.get("owner") or ""), str(row["sk"])
                if owner.startswith(mark):
                    target = TargetName(namespace, name, naming.location_of(namespace, name))
                    found.setdefault(owner[len(mark) :], []).append(target)
        return found


def _found_target(naming: Naming, key: Key, found: list[TargetName]) -> TargetName:
    """Where a dropped source table's target is: at its name under the request's names, if icelake
    registered it there, else where icelake registered it."""
    wanted = naming.target_of(*key)
    return next((t for t in found if t.name == wanted.name), found[0])


def _selected(
    request: MigrationRequest, deps: Deps, marked: _MarkedTargets
) -> tuple[dict[Key, Table], set[Key], set[Key]]:
    """(the source's Iceberg tables the selection names, keyed by (database, name); the selected
    tables icelake migrated before whose source is gone; the selection's other entries, views and
    the like, which icelake/objects/ carries or names). Names that match nothing are refused."""
    glue = deps.sessions(request).source.client("glue")
    chosen: dict[Key, Table] = {}
    others: set[Key] = set()
    for database in request.selection.databases:
        if not catalog.database_exists(glue, database):
            raise InvalidRequestError(
                f"database {database} does not exist in account {request.source.account_id}"
            )
        for table in catalog.list_tables(glue, database):
            if catalog.is_iceberg(table) and _matches(request, table["Name"]):
                chosen[(database, table["Name"])] = table
            elif _matches(request, table["Name"]):
                others.add((database, table["Name"]))
    named, dropped = _named_tables(request, glue, marked)
    others |= {_key(ident) for ident in request.selection.tables} - set(named) - dropped
    chosen |= named
    for database in request.selection.databases:
        names = {n for d, n in chosen if d == database}
        before = marked.in_database(database)
        dropped |= {(database, n) for n in before if n not in names and _matches(request, n)}
    return chosen, dropped, others


def _key(ident: str) -> Key:
    database, name = ident.split(".")
    return (database, name)


def _named_tables(
    request: MigrationRequest, glue: Any, marked: _MarkedTargets
) -> tuple[dict[Key, Table], set[Key]]:
    """The tables the selection names one by one: found, or gone from a source icelake migrated
    before; any other name is refused, the problems in one line (the first few, and a count)."""
    found_tables: dict[Key, Table] = {}
    dropped: set[Key] = set()
    problems = []
    lookup = _NamedLookup(glue, request.selection.tables)
    for ident in request.selection.tables:
        database, name = ident.split(".")
        found = lookup.get(database, name)
        if found is None and marked.of((database, name)):
            dropped.add((database, name))
        elif found is None:
            problems.append(f"{ident} does not exist in account {request.source.account_id}")
        elif not catalog.is_iceberg(found):
            continue  # a view, a link or a table of another format: classified (icelake/objects/)
        else:
            found_tables[(database, name)] = found
    if problems:
        raise InvalidRequestError(_first_few(problems))
    return found_tables, dropped


class _NamedLookup:
    """The source tables a selection names: asked one by one (GetTable), or, for a database the
    selection names many tables of, listed once (GetTables pages of 100)."""

    MANY = 50

    def __init__(self, glue: Any, idents: list[str]) -> None:
        self.glue = glue
        self.counts = Counter(ident.split(".")[0] for ident in idents)
        self.listed: dict[str, dict[str, Table]] = {}

    def get(self, database: str, name: str) -> Table | None:
        if self.counts[database] <= self.MANY:
            return catalog.get_table(self.glue, database, name)
        if database not in self.listed:
            exists = catalog.database_exists(self.glue, database)
            tables = catalog.list_tables(self.glue, database) if exists else []
            self.listed[database] = {t["Name"]: t for t in tables}
        return self.listed[database].get(name)


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
