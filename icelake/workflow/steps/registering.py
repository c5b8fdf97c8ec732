"""Register: point the target's Glue table at the rewritten metadata (creating it, or moving it
only from the pointer Plan saw) with the source table's Glue metadata carried (description, owner,
parameters, column comments), and grant the request's Lake Formation principals."""

from __future__ import annotations

from icelake.aws import catalog
from icelake.workflow.inputs import PlannedInput, RegisterResult
from icelake.workflow.steps.deps import Deps
from icelake.workflow.steps.shared import owner_of


def register(given: PlannedInput, deps: Deps) -> RegisterResult:
    planned = given.plan
    item = planned.item
    sessions = deps.sessions(item.request)
    target = sessions.target
    source_table = catalog.get_table(sessions.source.client("glue"), item.source_database, item.source_table)
    catalog.register_table(
        target.client("glue"),
        item.target_database,
        item.target_table,
        item.target_location,
        planned.target_metadata_location,
        planned.previous_target_metadata,
        owner_of(item),
        catalog.carried_metadata(source_table),
    )
    for principal in item.request.target.lake_formation_principals:
        target.client("lakeformation").grant_permissions(
            Principal={"DataLakePrincipalIdentifier": principal},
            Resource={"Table": {"DatabaseName": item.target_database, "Name": item.target_table}},
            Permissions=["SELECT", "DESCRIBE"],
        )
    deps.ledger.record_table(item.run_id, item.name, "REGISTERED")
    return RegisterResult(
        table=f"{item.target_database}.{item.target_table}",
        metadata_location=planned.target_metadata_location,
    )
