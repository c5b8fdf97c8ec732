"""The estimate's Plan phase sends what the workflow's Plan step sends, on the embedded AWS: for a
table the Lambda plans, the whole plan; for a table the Glue job plans (its snapshot summaries put
it over a Glue threshold), the metadata.json read alone, the plan's reads then being the Glue
job's, in the copy phase."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from icelake.assess.estimate.engine_choice import PLANNED_BY_GLUE
from icelake.assess.estimate.prices import load_prices
from icelake.assess.gather.estate import assess_item, settings_for
from icelake.request.models import MigrationRequest, WorkItem
from icelake.workflow import steps
from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput
from icelake.workflow.models import PlanResult
from tests.lake import Lake, add_source_table

pytestmark = pytest.mark.slow


def _item_and_plan(lake: Lake, request: dict[str, Any]) -> tuple[WorkItem, PlanResult]:
    inv = steps.inventory(InventoryInput.model_validate(request), lake.deps)
    body = boto3.client("s3").get_object(Bucket=inv.worklist_bucket, Key=inv.worklist_key)["Body"].read()
    (item,) = json.loads(body)
    return WorkItem.model_validate(item), steps.plan(PlanInput.model_validate({"item": item}), lake.deps)


@pytest.mark.parametrize("threshold", [None, 2], ids=["planned-in-lambda", "planned-by-glue"])
def test_the_plan_phase_is_estimated_at_what_the_plan_step_sends(lake: Lake, threshold: int | None) -> None:
    # Given a table of three data files, and a request whose file threshold (when set) is 2
    add_source_table(lake, "orders", [[1], [2], [3]])
    options: dict[str, Any] = {"validation": "metadata"}
    if threshold is not None:
        options["glue_threshold_files"] = threshold
    request = lake.request("run-1", options=options)

    # When the table is assessed, then planned by the workflow's Plan step
    item, planned = _item_and_plan(lake, request)
    parsed = MigrationRequest.model_validate(request)
    assessed = assess_item(item, lake.deps, settings_for(parsed, load_prices("us-east-1")))

    # Then the estimate's Plan phase holds exactly the requests the step sent
    assert assessed.estimate is not None
    by_phase = assessed.estimate.requests_by_phase
    sent = {kind: n for kind, n in planned.requests.items() if n}
    assert {kind: n for kind, n in by_phase["plan"].items() if n} == sent
    if threshold is None:
        assert planned.engine == assessed.engine == "lambda"
        assert sent.get("list", 0) >= 1  # the whole plan: the source check lists the table
    else:
        # ... which, for a table the Glue job plans, is the metadata.json read; the plan's reads
        # are estimated in the copy phase, where the Glue job sends them
        assert planned.engine == assessed.engine == "glue"
        assert assessed.engine_rule == PLANNED_BY_GLUE
        assert set(sent) == {"get"}  # the metadata.json, nothing listed
        assert by_phase["copy"]["list"] >= 1 and by_phase["copy"]["get"] > sent["get"]


def test_the_run_s_own_estimate_times_the_manifest_entries_and_snapshots_the_assessment_does(
    lake: Lake,
) -> None:
    # Given a table of three commits, which the Lambda plans and copies
    add_source_table(lake, "orders", [[1], [2], [3]])
    request = lake.request("run-1", options={"validation": "metadata"})

    # When it is assessed, then migrated by the workflow's steps
    item, planned = _item_and_plan(lake, request)
    assessed = assess_item(
        item, lake.deps, settings_for(MigrationRequest.model_validate(request), load_prices("us-east-1"))
    )
    state = PlannedInput.model_validate({"plan": planned.model_dump(mode="json")})
    steps.copy(state, lake.deps)
    steps.register(state, lake.deps)
    outcome = steps.validate(state, lake.deps)

    # Then the run's estimate (report.html's) decodes the same manifest entries in each phase as
    # the assessment's: its plan's, its copy's plan and rewrite, Validate's file check and prune
    assert assessed.estimate is not None and outcome.estimate is not None
    entries = assessed.estimate.entries_by_phase
    assert entries == {"plan": 3, "copy": round(3 * 1.5), "validate": 6}, entries
    assert outcome.estimate.entries_by_phase == entries
    # ... and Validate's pyiceberg reads of the three snapshots: the same Validate seconds for
    # the same requests
    assert planned.snapshots == 3
    assert outcome.estimate.requests_by_phase["validate"] == assessed.estimate.requests_by_phase["validate"]
    assert outcome.estimate.duration_by_phase["validate"] == assessed.estimate.duration_by_phase["validate"]
