"""Register: point the target's Glue table at the rewritten metadata (creating it, or moving it
only from the pointer Plan saw) with the source table's Glue metadata carried (description, owner,
parameters, column comments), and give the target the Lake Formation access the request asks for:
the source's grants to mapped principals and its LF-tags, and `lake_formation_principals`."""

from __future__ import annotations

from typing import Any

from icelake.aws import catalog
from icelake.aws import lake_formation as lf
from icelake.request.deps import Deps, Sessions
from icelake.request.models import WorkItem
from icelake.request.target import owner_of
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
    return carry_access(item, sessions, source_table)


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


def carry_access(item: WorkItem, sessions: Sessions, source_table: dict[str, Any] | None) -> lf.Carried:
    """The target table's Lake Formation access as the request asks: what was granted and tagged,
    and the warnings (unmapped principals, data filters) the outcome must show."""
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
    if spec.lake_formation.copy_permissions:
        grants = lf.carry_grants(source_lf, target_lf, source, target, spec.lake_formation.principal_map)
        carried.grants += grants.grants
        carried.warnings += grants.warnings + lf.data_filter_warnings(source_lf, source)
    if spec.lake_formation.copy_tags:
        columns = [c["Name"] for c in (source_table or {}).get("StorageDescriptor", {}).get("Columns", [])]
        carried.tags += lf.carry_tags(source_lf, target_lf, source, target, columns).tags
    carried.grants += lf.grant_principals(target_lf, target, spec.lake_formation_principals)
    return carried
