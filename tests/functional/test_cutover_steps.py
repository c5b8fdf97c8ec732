"""A cutover whose source keeps moving, step by step as the state machine drives it: each sync
that saw the source move asks for another (`sync_again`), the next Plan catches up with the
source's new pointer, and after `cutover_attempts` syncs the table ends failed, unpromoted, with
a good copy of an earlier version on the target."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from icelake.aws import catalog
from icelake.workflow import steps
from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput
from tests.lake import SOURCE_BUCKET, Lake, add_source_table, bucket_state, catalog_state, commit


def _sync(
    lake: Lake, item: dict[str, Any], during: Callable[[], object] = lambda: None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Plan, copy when needed, register and validate: one pass of the Map's iteration; `during`
    runs between Plan and Validate, as a writer committing to the source meanwhile would."""
    planned = steps.plan(PlanInput.model_validate({"item": item}), lake.deps).model_dump(mode="json")
    state = {"plan": planned}
    if planned["engine"] == "lambda":
        steps.copy(PlannedInput.model_validate(state), lake.deps)
        steps.register(PlannedInput.model_validate(state), lake.deps)
    during()
    return planned, steps.validate(PlannedInput.model_validate(state), lake.deps).model_dump(mode="json")


def _item(lake: Lake, run_id: str, **options: Any) -> dict[str, Any]:
    request = lake.request(run_id, mode="cutover")
    request["options"] = {**request["options"], **options}
    inventory = steps.inventory(
        InventoryInput.model_validate({"request": request, "execution_name": run_id}), lake.deps
    )
    body = boto3.client("s3").get_object(Bucket=inventory.worklist_bucket, Key=inventory.worklist_key)["Body"]
    (item,) = json.loads(body.read())
    return dict(item)


@pytest.mark.slow
def test_a_source_that_moves_during_every_sync_is_never_promoted(lake: Lake) -> None:
    add_source_table(lake, "orders", [[1], [2]])
    item = _item(lake, "cutover-1", cutover_attempts=3)
    for attempt in range(1, 4):
        # a writer that was not stopped commits while each sync runs
        planned, outcome = _sync(lake, item, during=lambda n=attempt: commit(lake, "orders", [100 + n]))
        if attempt > 1:  # each sync caught up with the source's pointer, not inventory's
            assert planned["item"]["source_metadata_location"] != item["source_metadata_location"]
        if attempt < 3:
            assert outcome["sync_again"] and outcome["status"] == "migrated", outcome
        else:
            assert not outcome["sync_again"] and outcome["status"] == "failed", outcome
            assert "moved during each of 3 syncs" in outcome["error"]["message"]
            assert (
                outcome["error"]["step"] == "Validate"
                and "stop the source's writers" in outcome["error"]["hint"]
            )
    target = catalog_state(lake.target)["sales.orders"]
    assert catalog.PROMOTED_PARAMETER not in target  # not promoted


@pytest.mark.slow
def test_a_quiet_source_is_promoted_and_mark_source_points_at_the_target(lake: Lake) -> None:
    add_source_table(lake, "orders", [[1], [2]])
    item = _item(lake, "cutover-2", mark_source=True)
    source_before = bucket_state(lake.source, SOURCE_BUCKET)
    _planned, outcome = _sync(lake, item)
    assert outcome["status"] == "promoted" and not outcome["sync_again"], outcome
    assert outcome["source_snapshot_id"] == outcome["target_snapshot_id"] is not None
    marked = catalog_state(lake.source)["sales.orders"][catalog.PROMOTED_TO_PARAMETER]
    assert marked == f"222222222222:{item['target_location']}"
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before  # only the Glue parameter
    # a second cutover is refused politely: promoted, nothing planned
    again_planned, again = _sync(lake, _item(lake, "cutover-3"))
    assert again["status"] == "promoted" and again_planned["engine"] == "none"
