"""A request's other catalog entries read from the source catalog and planned (plan.py), the
plan kept as JSON between the Inventory and Report steps, and what a plan's views read checked
against what the target will hold."""

from __future__ import annotations

import fnmatch
from typing import Any

from icelake.aws import catalog
from icelake.objects.model import CatalogObject
from icelake.objects.plan import Carry, Context, Key, ObjectPlan, plan_objects
from icelake.request.deps import Sessions
from icelake.request.models import MigrationRequest


def context_of(request: MigrationRequest, target_region: str) -> Context:
    naming = request.target.naming

    def target_of(database: str, name: str) -> Key:
        named = naming.target_of(database, name)
        return (named.database, named.table)

    return Context(
        source_account=request.source.account_id,
        target_account=request.target.account_id,
        target_region=target_region,
        target_of=target_of,
        principal_map=dict(request.target.lake_formation.principal_map),
    )


def source_entries(request: MigrationRequest, glue: Any) -> dict[Key, dict[str, Any]]:
    """Every entry of the selected databases that the patterns match, and each entry the selection
    names one by one (a name that is not there is the Inventory's to refuse)."""
    selection = request.selection
    entries: dict[Key, dict[str, Any]] = {}
    for database in selection.databases:
        if not catalog.database_exists(glue, database):
            continue  # the Inventory refuses it, naming the account
        for table in catalog.list_tables(glue, database):
            if any(fnmatch.fnmatchcase(table["Name"], p) for p in selection.patterns):
                entries[(database, table["Name"])] = table
    for ident in selection.tables:
        database, name = ident.split(".")
        if (database, name) not in entries:
            found = catalog.get_table(glue, database, name)
            if found is not None:
                entries[(database, name)] = found
    return entries


def survey(request: MigrationRequest, sessions: Sessions, migrated: set[Key]) -> ObjectPlan:
    """The plan of the request's selection; `migrated`: its Iceberg tables the run moves."""
    entries = source_entries(request, sessions.source.client("glue"))
    return plan_objects(entries, migrated, context_of(request, sessions.region("dst") or "us-east-1"))


def target_entries(glue: Any, databases: set[str]) -> dict[Key, dict[str, Any]]:
    """Every entry of these target databases (one listing a database, pages of 100), by key."""
    found: dict[Key, dict[str, Any]] = {}
    for database in sorted(databases):
        if catalog.database_exists(glue, database):
            found |= {(database, t["Name"]): t for t in catalog.list_tables(glue, database)}
    return found


def target_names(glue: Any, databases: set[str]) -> set[Key]:
    """The names of every entry of these target databases."""
    return set(target_entries(glue, databases))


def missing_reads(carry: Carry, available: set[Key]) -> list[str]:
    return [f"{db}.{name}" for db, name in carry.needs if (db, name) not in available]


def not_on_target_message(missing: list[str], failed: set[str] | None = None) -> str:
    """Why a view was not created; `failed`: the target names of this run's tables that did not
    end migrated (a view on one of them waits for it)."""
    ours = [m for m in missing if m in (failed or set())]
    if ours:
        return (
            f"it reads {', '.join(ours)}, which this run did not migrate (see that table's outcome), so "
            "it was not created: it is created by the run that migrates it"
        )
    return (
        f"it reads {', '.join(missing)}, which is neither in this migration nor on the target, so it "
        "was not created: migrate what it reads too (select it), or create it on the target, and run again"
    )


def check_reads(plan: ObjectPlan, available: set[Key]) -> None:
    """Name, in order, each view whose reads will be neither migrated nor on the target (nor a view
    carried before it): what an assessment warns of before the run does it."""
    have = set(available)
    for carry in plan.carries:
        missing = missing_reads(carry, have)
        if missing:
            plan.named(carry.source, status="not_created", message=not_on_target_message(missing))
        elif plan.objects[carry.source].status == "planned":
            have.add(carry.target)


def to_json(plan: ObjectPlan, request: MigrationRequest) -> dict[str, Any]:
    return {
        "request": request.model_dump(mode="json"),
        "objects": [o.model_dump(mode="json") for o in plan.objects.values()],
        "carries": [
            {
                "source": list(c.source),
                "target": list(c.target),
                "kind": c.kind,
                "table_input": c.table_input,
                "needs": [list(n) for n in c.needs],
                "reads": list(c.reads),
            }
            for c in plan.carries
        ],
    }


def from_json(raw: dict[str, Any]) -> tuple[ObjectPlan, MigrationRequest]:
    objects = [CatalogObject.model_validate(o) for o in raw["objects"]]
    carries = [
        Carry(
            source=(c["source"][0], c["source"][1]),
            target=(c["target"][0], c["target"][1]),
            kind=c["kind"],
            table_input=c["table_input"],
            needs=tuple((n[0], n[1]) for n in c["needs"]),
            reads=tuple(c["reads"]),
        )
        for c in raw["carries"]
    ]
    by_key = {(o.name.split(".")[0], o.name.split(".", 1)[1]): o for o in objects}
    return ObjectPlan(by_key, carries), MigrationRequest.model_validate(raw["request"])
