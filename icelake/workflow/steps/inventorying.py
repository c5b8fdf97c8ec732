"""Inventory: the tables a request selects in the source catalog, and the icelake targets whose
source has gone (the selection: icelake/request/selection.py), written as the run's worklist for
the Map; and every other entry of the selection classified, its views and resource links planned
for the Report step to carry (icelake/objects/)."""

from __future__ import annotations

from icelake.objects.carry import plan_key
from icelake.objects.survey import survey, to_json
from icelake.request.deps import Deps
from icelake.request.selection import parse_request, work_items
from icelake.workflow.inputs import InventoryInput
from icelake.workflow.models import InventoryResult

CARRIES_VIEWS = frozenset({"full", "incremental"})  # the modes that migrate, and so carry views


def inventory(given: InventoryInput, deps: Deps) -> InventoryResult:
    """The execution name is the run id unless the request names one. Every table's target name
    is decided here, and a request whose names collide is refused before anything runs."""
    request = parse_request({"run_id": given.execution_name, **given.request})
    items = work_items(request, deps, given.execution_arn)
    worklist = f"runs/{request.run_id}/worklist.json"
    deps.artifacts.put_json(worklist, [item.model_dump(mode="json") for item in items])
    if request.mode in CARRIES_VIEWS:
        migrated = {(i.source_database, i.source_table) for i in items if not i.source_dropped}
        objects = survey(request, deps.sessions(request), migrated)
        deps.artifacts.put_json(plan_key(request.run_id), to_json(objects, request))
    return InventoryResult(
        run_id=request.run_id,
        tables=len(items),
        worklist_bucket=deps.env.artifacts_bucket,
        worklist_key=worklist,
        concurrency=request.options.concurrency,
        mode=request.mode,
    )
