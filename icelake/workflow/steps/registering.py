"""Register: point the target's Glue table at the rewritten metadata (creating it, or moving it
only from the pointer Plan saw) with the source table's Glue metadata carried (description, owner,
parameters, column comments), and give the target the Lake Formation access the request asks for:
the source's grants to mapped principals and its LF-tags, and `lake_formation_principals`."""

from __future__ import annotations

from typing import Any

from icelake.aws import catalog, data_filters
from icelake.aws import lake_formation as lf
from icelake.migrate import metadata_json as mj
from icelake.request.deps import Deps, Sessions
from icelake.request.models import WorkItem
from icelake.request.target import owner_of
from icelake.workflow import table_bucket
from icelake.workflow.inputs import PlannedInput, RegisterResult
from icelake.workflow.models import PlanResult
from icelake.workflow.steps.carrying import carry_register


def register(given: PlannedInput, deps: Deps) -> RegisterResult:
    planned = given.plan
    item = planned.item
    if item.request.mode == "carry_over":  # a promoted table: its pointer moves, nothing else
        carry_register(planned, deps)
        return RegisterResult(table=item.target_name, metadata_location=planned.target_metadata_location)
    access = register_and_carry(planned, deps.sessions(item.request))
    record_access(deps, item, "REGISTERED", access)
    return RegisterResult(table=item.target_name, metadata_location=planned.target_metadata_location)


def register_and_carry(planned: PlanResult, sessions: Sessions) -> lf.Carried:
    """Point the target table at the planned metadata with the source's Glue metadata, and carry
    its Lake Formation access. A table already in sync is registered again only when its carried
    metadata changed, and gets only the grants and tags it lacks."""
    item = planned.item
    if table_bucket.is_table_bucket(item):  # the pointer moves; a table bucket keeps no Glue metadata
        table_bucket.register(
            item,
            sessions,
            planned.target_metadata_location,
            planned.previous_target_metadata,
            planned.target_version,
        )
        return lf.Carried(warnings=[*table_bucket.not_carried(item), *planned.mapped_outside])
    source_table = catalog.get_table(sessions.source.client("glue"), item.source_database, item.source_table)
    catalog.register_table(
        sessions.target.client("glue"),
        item.target_database,
        item.target_table,
        item.target_location,
        planned.target_metadata_location,
        planned.previous_target_metadata,
        owner_of(item),
        catalog.carried_metadata(source_table),
    )
    return carry_access(item, sessions, source_table, planned.target_metadata_location)


def record_access(deps: Deps, item: WorkItem, state: str, access: lf.Carried) -> None:
    """What the run granted and tagged, and its warnings (Validate puts them in the outcome)."""
    deps.ledger.record_table(
        item.run_id,
        item.name,
        state,
        lf_grants=access.grants,
        lf_tags_created=access.tags,
        register_warnings=access.warnings or None,
    )


def carry_access(
    item: WorkItem,
    sessions: Sessions,
    source_table: dict[str, Any] | None,
    target_metadata: str | None = None,
) -> lf.Carried:
    """The target table's Lake Formation access as the request asks: what was granted and tagged,
    and the warnings (unmapped principals) the outcome must show. `target_metadata`: the target's
    metadata, whose schema the source's data cells filters are checked against."""
    spec = item.request.target
    source = lf.TableRef(item.source_database, item.source_table)
    target = lf.TableRef(item.target_database, item.target_table)
    carried = lf.Carried()
    if not (
        spec.lake_formation_principals
        or spec.lake_formation.copy_permissions
        or spec.lake_formation.copy_tags
    ):
        return carried
    target_lf = sessions.target.client("lakeformation")
    if spec.lake_formation.copy_permissions or spec.lake_formation.copy_tags:
        source_lf = sessions.source.client("lakeformation")
    filtered: set[str] = set()
    if spec.lake_formation.copy_permissions:
        filtered = _carry_permissions(item, sessions, (source_lf, target_lf), target_metadata, carried)
    if spec.lake_formation.copy_tags:
        columns = [c["Name"] for c in (source_table or {}).get("StorageDescriptor", {}).get("Columns", [])]
        carried.tags += lf.carry_tags(source_lf, target_lf, source, target, columns).tags
    readers = [p for p in spec.lake_formation_principals if p not in filtered]
    carried.warnings += [
        f"{p} is in lake_formation_principals but held the source table only through data cells "
        "filters: it was granted the filters on the target, not the unfiltered table"
        for p in spec.lake_formation_principals
        if p in filtered
    ]
    carried.grants += lf.grant_principals(target_lf, target, readers)
    return carried


def _carry_permissions(
    item: WorkItem, sessions: Sessions, lfs: tuple[Any, Any], target_metadata: str | None, carried: lf.Carried
) -> set[str]:
    """The source's grants and data cells filters (with their grants) to the mapped principals;
    every filter checked against the target's columns before anything is granted. Returns the
    target principals that hold the table only through filters."""
    spec = item.request.target
    source_lf, target_lf = lfs
    source = lf.TableRef(item.source_database, item.source_table)
    target = lf.TableRef(item.target_database, item.target_table)
    filters = data_filters.source_filters(source_lf, source)
    if filters:
        data_filters.check_filters(filters, target, _target_columns(sessions, target_metadata))
    grants = lf.carry_grants(source_lf, target_lf, source, target, spec.lake_formation.principal_map)
    moved = data_filters.carry_filters(
        source_lf, target_lf, filters, (target, spec.account_id), spec.lake_formation.principal_map
    )
    carried.grants += grants.grants + moved.grants
    carried.warnings += grants.warnings + moved.warnings
    return data_filters.filtered_only(
        source_lf, filters, lf.table_grants(source_lf, source), spec.lake_formation.principal_map
    )


def _target_columns(sessions: Sessions, target_metadata: str | None) -> list[str]:
    """The target's columns, from its Iceberg schema (every schema it keeps: a filter may name a
    column of any; the current one is what readers see)."""
    if not target_metadata:
        return []
    meta, _gz = mj.parse_metadata(target_metadata, sessions.target_io().read(target_metadata))
    current = meta.get("current-schema-id")
    schemas = [s for s in meta.get("schemas", []) if s.get("schema-id") == current] or meta.get("schemas", [])
    return [f["name"] for s in schemas[:1] for f in s.get("fields", [])] or [
        f["name"] for f in meta.get("schema", {}).get("fields", [])
    ]
