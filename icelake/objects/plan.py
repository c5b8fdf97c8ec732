"""The plan of a selection's other catalog entries, a pure function of what the source catalog
holds and the request's naming: each entry classified; each view's SQL renamed to the target
names (sqlglot, dialect trino for Athena, spark for Spark, each representation's own for a
multi-dialect view) and its Glue entry as the target gets it; each resource link pointed at its
target's new name; and the order that puts every view after what it reads."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from icelake.aws.catalog import OWNER_PARAMETER
from icelake.errors import IcelakeError, NotCarried, UnreadableSql
from icelake.objects import envelope, kinds
from icelake.objects import sql as view_sql
from icelake.objects.model import CatalogObject, ObjectStatus

Key = tuple[str, str]  # (database, name)
SHA_PARAMETER = "icelake.view_sha256"  # the carried definition's digest: a re-run compares it
# The Glue fields a view's TableInput carries (the pointer-free rest of GetTable's answer).
_VIEW_FIELDS = ("Description", "Owner", "Retention", "StorageDescriptor", "PartitionKeys", "TableType")
_SPARK_NAMESPACE = "view.catalogAndNamespace.part.1"  # a Spark view's current database when made


@dataclass(frozen=True)
class Context:
    """What naming and marking a carried entry needs from the request."""

    source_account: str
    target_account: str
    target_region: str
    target_of: Callable[[str, str], Key]  # the request's naming: source (db, name) -> target's
    principal_map: Mapping[str, str] = field(default_factory=dict)  # a multi-dialect view's Definer

    def owner(self, key: Key) -> str:
        return f"{self.source_account}:{key[0]}.{key[1]}"


@dataclass(frozen=True)
class Carry:
    """A view or resource link to create on the target: its TableInput (owner mark and digest
    included), and the target names it reads, which must exist when it is created."""

    source: Key
    target: Key
    kind: str
    table_input: dict[str, Any]
    needs: tuple[Key, ...]
    reads: tuple[str, ...]

    @property
    def digest(self) -> str:
        return str(self.table_input.get("Parameters", {}).get(SHA_PARAMETER, ""))


@dataclass
class ObjectPlan:
    objects: dict[Key, CatalogObject]  # every entry, by source key
    carries: list[Carry]  # in dependency order

    def named(self, key: Key, **update: Any) -> None:
        self.objects[key] = self.objects[key].model_copy(update=update)


def plan_objects(entries: Mapping[Key, dict[str, Any]], migrated: set[Key], context: Context) -> ObjectPlan:
    """`entries`: every catalog entry of the selection by (database, name); `migrated`: the Iceberg
    tables the run moves. Views and links that cannot be carried are named, with why."""
    objects = {}
    for key, table in sorted(entries.items()):
        kind = kinds.kind_of(table)
        action = kinds.action_of(kind)
        message = kinds.what_to_do(kind) if action == "not_moved" else ""
        status: ObjectStatus = "skipped" if action != "carried" else "planned"
        objects[key] = CatalogObject(
            name=f"{key[0]}.{key[1]}", kind=kind, action=action, message=message, status=status
        )
    plan = ObjectPlan(objects, [])
    carried = {k for k, o in objects.items() if o.action == "carried"}
    names = {k: context.target_of(*k) for k in sorted(migrated)}
    for key in sorted(carried):
        try:
            names[key] = context.target_of(*key)
        except IcelakeError as exc:  # a name the target cannot hold
            plan.named(key, status="not_created", message=str(exc))
    carried = {k for k in carried if k in names}
    for key in sorted(migrated & set(objects)):
        plan.named(key, target=_name(names[key]))
    carries = {}
    for key in sorted(carried):
        try:
            carry = _carry(key, entries[key], objects[key].kind, names, context)
        except UnreadableSql as exc:
            plan.named(key, status="not_created", target=_name(names[key]), message=_unreadable(exc))
            continue
        except NotCarried as exc:
            plan.named(key, status="not_created", target=_name(names[key]), message=str(exc))
            continue
        plan.named(key, target=_name(carry.target), reads=list(carry.reads))
        carries[key] = carry
    plan.carries = _ordered(carries, plan)
    return plan


def _name(key: Key) -> str:
    return f"{key[0]}.{key[1]}"


def _unreadable(exc: Exception) -> str:
    return (
        f"its SQL could not be read ({exc}), so it was not rewritten or created: create it on the "
        "target by hand with the target's table names"
    )


def _carry(key: Key, table: dict[str, Any], kind: str, names: dict[Key, Key], context: Context) -> Carry:
    target = names[key]
    if kind == kinds.RESOURCE_LINK:
        return _link(key, table, target, names, context)
    table_input: dict[str, Any] = {"Name": target[1], **{k: table[k] for k in _VIEW_FIELDS if k in table}}
    table_input["TableType"] = "VIRTUAL_VIEW"
    renamed = _Renamer(key[0], names)
    if kind == kinds.MULTI_DIALECT_VIEW:
        table_input["ViewDefinition"] = _definition(table["ViewDefinition"], renamed, context)
    else:
        dialect = "trino" if kind == kinds.ATHENA_VIEW else "spark"
        table_input |= _texts(table, dialect, renamed, target[0])
    parameters = dict(table.get("Parameters", {}))
    if parameters.get(_SPARK_NAMESPACE) == key[0]:
        parameters[_SPARK_NAMESPACE] = target[0]
    parameters.pop(SHA_PARAMETER, None)
    parameters[OWNER_PARAMETER] = context.owner(key)
    digest = json.dumps([table_input, parameters], sort_keys=True, default=str)
    parameters[SHA_PARAMETER] = hashlib.sha256(digest.encode()).hexdigest()
    table_input["Parameters"] = parameters
    needs = tuple(sorted(renamed.needs))
    return Carry(key, target, kind, table_input, needs, tuple(sorted(_name(r) for r in renamed.reads)))


class _Renamer:
    """Renames a view's SQL and keeps what it read: source keys, and the target names needed."""

    def __init__(self, database: str, names: dict[Key, Key]) -> None:
        self.database = database
        self.names = names
        self.reads: set[Key] = set()
        self.needs: set[Key] = set()

    def __call__(self, text: str, dialect: str) -> str:
        found = view_sql.references(text, dialect)
        for ref in found:
            source = (ref.database or self.database, ref.table)
            self.reads.add(source)
            self.needs.add(self.names.get(source, source))  # not in the migration: as written
        return view_sql.rename(text, dialect, self.names, self.database, found)


def _texts(table: dict[str, Any], dialect: str, renamed: _Renamer, target_db: str) -> dict[str, str]:
    original = str(table.get("ViewOriginalText") or "")
    expanded = str(table.get("ViewExpandedText") or "")
    if dialect == "trino":
        view = envelope.decode(original)
        sql = renamed(view["originalSql"], "trino")
        moved = envelope.encode(envelope.moved(view, sql, target_db))
        return {"ViewOriginalText": moved, "ViewExpandedText": expanded}
    out = {"ViewOriginalText": renamed(original, "spark")}
    if expanded:
        out["ViewExpandedText"] = renamed(expanded, "spark")
    return out


def _definition(definition: dict[str, Any], renamed: _Renamer, context: Context) -> dict[str, Any]:
    """A multi-dialect ViewDefinition as the target's ViewDefinitionInput: every representation
    renamed in its own dialect, SubObjects as the target's ARNs, the Definer mapped."""
    representations = []
    for rep in definition.get("Representations", []):
        dialect = view_sql.DIALECTS.get(str(rep.get("Dialect", "")).upper())
        if dialect is None:
            raise UnreadableSql(f"a representation in dialect {rep.get('Dialect')!r}")
        moved = {k: rep[k] for k in ("Dialect", "DialectVersion", "ValidationConnection") if k in rep}
        for text in ("ViewOriginalText", "ViewExpandedText"):
            if rep.get(text):
                moved[text] = renamed(rep[text], dialect)
        representations.append(moved)
    out: dict[str, Any] = {"Representations": representations}
    if "IsProtected" in definition:
        out["IsProtected"] = definition["IsProtected"]
    definer = definition.get("Definer")
    if definer:
        if definer not in context.principal_map:
            raise NotCarried(
                f"its Definer {definer} has no entry in target.lake_formation.principal_map, so the "
                "target has no role to define it: map it, or create the view on the target by hand"
            )
        out["Definer"] = context.principal_map[definer]
    out["SubObjects"] = [
        f"arn:aws:glue:{context.target_region}:{context.target_account}:table/{db}/{name}"
        for db, name in sorted(renamed.needs)
    ]
    return out


def _link(key: Key, table: dict[str, Any], target: Key, names: dict[Key, Key], context: Context) -> Carry:
    """A resource link to a table or view of this migration, pointed at its new name."""
    to = table["TargetTable"]
    pointed = (str(to.get("DatabaseName", "")), str(to.get("Name", "")))
    catalog_id = str(to.get("CatalogId") or context.source_account)
    moved = names.get(pointed) if catalog_id == context.source_account else None
    reads = (f"{catalog_id}:{_name(pointed)}",)
    if moved is None:
        raise NotCarried(
            f"it points at {reads[0]}, which this migration does not move: select that table too, or "
            "create the link on the target by hand"
        )
    target_table = {"CatalogId": context.target_account, "DatabaseName": moved[0], "Name": moved[1]}
    if to.get("Region"):
        target_table["Region"] = context.target_region
    parameters = {OWNER_PARAMETER: context.owner(key)}
    table_input: dict[str, Any] = {"Name": target[1], "TargetTable": target_table, "Parameters": parameters}
    parameters[SHA_PARAMETER] = hashlib.sha256(json.dumps(table_input, sort_keys=True).encode()).hexdigest()
    return Carry(key, target, kinds.RESOURCE_LINK, table_input, (moved,), reads)


def _ordered(carries: dict[Key, Carry], plan: ObjectPlan) -> list[Carry]:
    """Views after the views and links they read (Kahn's order, by name among equals); a view in a
    cycle is named, not created."""
    by_target = {c.target: c.source for c in carries.values()}
    waiting = {k: {by_target[n] for n in c.needs if n in by_target} - {k} for k, c in carries.items()}
    order: list[Carry] = []
    while waiting:
        ready = sorted(k for k, deps in waiting.items() if not deps)
        if not ready:
            for key in sorted(waiting):
                plan.named(
                    key,
                    status="not_created",
                    message="it reads itself through other views (a cycle): create it on the target by hand",
                )
            break
        for key in ready:
            order.append(carries[key])
            del waiting[key]
        for deps in waiting.values():
            deps.difference_update(ready)
    return order
