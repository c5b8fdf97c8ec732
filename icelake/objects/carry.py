"""A run's views and resource links carried onto the target after its tables (the Report step),
in dependency order, each only when what it reads is there. Every create and update is journaled
as it happens; if carrying fails, what this run created is deleted and what it updated is put
back, so a failure leaves only what was there before (and never touches an entry icelake did not
create)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from icelake.aws import catalog
from icelake.aws import lake_formation as lf
from icelake.errors import IcelakeError
from icelake.objects.model import CatalogObject
from icelake.objects.plan import SHA_PARAMETER, Carry, Key, ObjectPlan
from icelake.objects.survey import (
    check_reads,
    from_json,
    missing_reads,
    not_on_target_message,
    target_entries,
)
from icelake.request.deps import Deps, Sessions
from icelake.request.models import MigrationRequest


def plan_key(run_id: str) -> str:
    """Where the Inventory keeps a run's plan of views and other entries (artifacts bucket)."""
    return f"runs/{run_id}/objects.json"


def carry_run(run_id: str, deps: Deps) -> list[CatalogObject]:
    """Carry the run's planned views and links (none when the Inventory planned none)."""
    key = plan_key(run_id)
    if deps.artifacts.io.stat(deps.artifacts.uri(key)) is None:
        return []
    plan, request = from_json(deps.artifacts.read_json(key))
    return carry(plan, request, deps.sessions(request))


@dataclass
class _Journal:
    """What this run did to the target, in order: (target, the entry before it, or None)."""

    done: list[tuple[Key, dict[str, Any] | None]] = field(default_factory=list)
    carried: list[Key] = field(default_factory=list)  # source keys, as done
    databases: set[str] = field(default_factory=set)  # target databases known to exist


def carry(plan: ObjectPlan, request: MigrationRequest, sessions: Sessions) -> list[CatalogObject]:
    """Create or update each planned view and link in order; a failure rolls back what this run
    did. Returns every entry's object, with its status."""
    glue = sessions.target.client("glue")
    wanted = {db for c in plan.carries for db, _ in c.needs} | {c.target[0] for c in plan.carries}
    entries = target_entries(glue, wanted)  # read once: no GetTable a view
    available = set(entries)
    if request.options.dry_run:  # writes nothing: names what a run could not create, as assess does
        migrated = {o.target for o in plan.objects.values() if o.action == "migrated" and o.target}
        check_reads(plan, available | {(t.split(".")[0], t.split(".", 1)[1]) for t in migrated})
        return list(plan.objects.values())
    journal = _Journal(databases={db for db, _ in available})
    migrated = {o.target for o in plan.objects.values() if o.action == "migrated" and o.target}
    current: Carry | None = None
    try:
        for current in plan.carries:
            if plan.objects[current.source].status != "planned":
                continue
            missing = missing_reads(current, available)
            if missing:
                message = not_on_target_message(missing, migrated)
                plan.named(current.source, status="not_created", message=message)
                continue
            status = _put(glue, current, journal, plan, entries.get(current.target))
            if status == "not_ours":
                continue
            journal.carried.append(current.source)
            available.add(current.target)
            warnings = _access(current, request, sessions)
            plan.named(current.source, status=status, message="; ".join(warnings))
    except (ClientError, IcelakeError) as exc:
        _roll_back(glue, plan, journal, current, exc)
    return list(plan.objects.values())


def _put(
    glue: Any, carry: Carry, journal: _Journal, plan: ObjectPlan, existing: dict[str, Any] | None
) -> str:
    """created, updated, unchanged, or not_ours (named: a target entry icelake did not create).
    `existing`: the target's entry as listed when carrying began."""
    database, name = carry.target
    if database not in journal.databases:
        catalog.ensure_database(glue, database)
        journal.databases.add(database)
    owner = carry.table_input["Parameters"][catalog.OWNER_PARAMETER]
    if existing is None:
        create_entry(glue, database, carry.table_input)
        journal.done.append((carry.target, None))
        return "created"
    try:
        catalog.check_target_is_ours(existing, owner, f"{database}.{name}")
    except IcelakeError as exc:
        message = str(exc).replace("target table", "target entry").replace("this table", "this view")
        plan.named(carry.source, status="not_created", message=message)
        return "not_ours"
    if existing.get("Parameters", {}).get(SHA_PARAMETER) == carry.digest:
        return "unchanged"
    kwargs = {"VersionId": existing["VersionId"]} if existing.get("VersionId") else {}
    glue.update_table(DatabaseName=database, TableInput=carry.table_input, **kwargs)
    journal.done.append((carry.target, as_input(existing)))
    return "updated"


def as_input(entry: dict[str, Any]) -> dict[str, Any]:
    """A GetTable answer as the TableInput that puts it back (a multi-dialect view's
    representations without what only Glue sets)."""
    table_input = {k: entry[k] for k in catalog.VIEW_INPUT_FIELDS if k in entry}
    definition = table_input.get("ViewDefinition")
    if definition:
        representations = [
            {k: v for k, v in r.items() if k != "IsStale"} for r in definition.get("Representations", [])
        ]
        table_input["ViewDefinition"] = {
            k: v for k, v in definition.items() if k not in ("ViewVersionId", "ViewVersionToken")
        } | {"Representations": representations}
    return table_input


def create_entry(glue: Any, database: str, table_input: dict[str, Any]) -> None:
    """One view or link created on the target (a seam the tests fail on purpose)."""
    glue.create_table(DatabaseName=database, TableInput=table_input)


def _access(carry: Carry, request: MigrationRequest, sessions: Sessions) -> list[str]:
    """The view's Lake Formation access, carried as a table's is (icelake/aws/lake_formation.py):
    the source's grants to the mapped principals, its LF-tags, and `lake_formation_principals`."""
    spec = request.target
    copy = spec.lake_formation
    if not (copy.copy_permissions or copy.copy_tags or spec.lake_formation_principals):
        return []
    target_lf = sessions.target.client("lakeformation")
    source, target = lf.TableRef(*carry.source), lf.TableRef(*carry.target)
    warnings: list[str] = []
    if spec.lake_formation.copy_permissions:
        source_lf = sessions.source.client("lakeformation")
        carried = lf.carry_grants(source_lf, target_lf, source, target, spec.lake_formation.principal_map)
        warnings += carried.warnings
    if copy.copy_tags:
        columns = [c["Name"] for c in carry.table_input.get("StorageDescriptor", {}).get("Columns", [])]
        lf.carry_tags(sessions.source.client("lakeformation"), target_lf, source, target, columns)
    lf.grant_principals(target_lf, target, spec.lake_formation_principals)
    return warnings


def _roll_back(glue: Any, plan: ObjectPlan, journal: _Journal, failed: Carry | None, exc: Exception) -> None:
    """Undo what this run did, newest first: a created entry deleted while it still carries this
    run's mark, an updated one put back. Every entry this run touched is then rolled_back, and the
    rest not_created, all naming the failure."""
    where = f"{failed.source[0]}.{failed.source[1]}" if failed else "the first view"
    error = " ".join(str(exc).split())[:500]
    marks = {c.target: c.table_input["Parameters"][catalog.OWNER_PARAMETER] for c in plan.carries}
    for target, previous in reversed(journal.done):
        found = catalog.get_table(glue, *target)
        if found is None or found.get("Parameters", {}).get(catalog.OWNER_PARAMETER) != marks[target]:
            continue  # gone, or no longer the entry this run made: not icelake's to touch
        if previous is None:
            glue.delete_table(DatabaseName=target[0], Name=target[1])
        else:
            glue.update_table(DatabaseName=target[0], TableInput=previous)
    for carry in plan.carries:
        status = plan.objects[carry.source].status
        if carry.source in journal.carried:
            message = f"rolled back: carrying {where} failed ({error}); what this run created was removed"
            plan.named(carry.source, status="rolled_back", message=message)
        elif status == "planned":
            message = f"not created: carrying {where} failed ({error}); run again"
            plan.named(carry.source, status="not_created", message=message)
