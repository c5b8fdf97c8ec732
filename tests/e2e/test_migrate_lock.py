"""One run at a time per table: a table that another running run holds ends `busy` and is left
alone while the rest of the run goes on; a hold of a run that has ended is taken over at once."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution
from icelake.workflow import steps
from icelake.workflow.inputs import InventoryInput, PlanInput, RollbackInput
from tests.e2e.conftest import run_workflow
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, add_source_table, bucket_state, catalog_state

pytestmark = pytest.mark.slow


def _hold(lake: Lake, run_id: str, table: str, execution_arn: str | None) -> dict[str, object]:
    """Another run's Plan for `table`: it now holds the table (its copy would come next)."""
    inventory = steps.inventory(InventoryInput.model_validate(lake.request(run_id)), lake.deps)
    s3 = boto3.client("s3")
    items = json.loads(
        s3.get_object(Bucket=inventory.worklist_bucket, Key=inventory.worklist_key)["Body"].read()
    )
    item = next(i for i in items if i["source_table"] == table)
    planned = steps.plan(
        PlanInput.model_validate({"item": {**item, "execution_arn": execution_arn}}), lake.deps
    )
    assert planned.stopped is None
    return planned.model_dump(mode="json")


def test_a_table_held_by_a_running_run_is_busy(world: tuple[Lake, LocalDeployment]) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1], [2]])
    add_source_table(lake, "customers", [[1]])
    held = _hold(lake, "other-run", "orders", execution_arn=None)  # running, as far as anyone knows
    target_before = bucket_state(lake.target, TARGET_BUCKET)
    source_before, source_catalog = bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)

    report = run_workflow(deployment, lake.request("second-run"))

    outcomes = {t["table"]: t for t in report["tables"]}
    assert outcomes["sales.orders"]["status"] == "busy"
    assert "run other-run has been working on" in outcomes["sales.orders"]["error"]["message"]
    assert outcomes["sales.customers"]["status"] == "migrated"
    assert report["status"] == "partial"
    assert not [k for k in bucket_state(lake.target, TARGET_BUCKET) if "/orders/" in k]
    assert not [k for k in target_before if "/orders/" in k]

    # When the holder ends (here: its copy fails and it rolls back), the table is free again
    steps.rollback(
        RollbackInput.model_validate({"item": held["item"], "plan": held, "error": {"Cause": "stopped"}}),
        lake.deps,
    )
    again = run_workflow(deployment, lake.request("third-run"))
    assert {t["table"]: t["status"] for t in again["tables"]}["sales.orders"] == "migrated"
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    assert catalog_state(lake.source) == source_catalog
    _a_re_run_is_estimated_as_one({t["table"]: t for t in again["tables"]}["sales.customers"])


def _a_re_run_is_estimated_as_one(outcome: dict[str, Any]) -> None:
    """A table run again copies nothing and writes nothing (issue 56): its estimate counts no copy
    and no write, and the requests it counted are those (before: a copy's writes). Its time against
    the estimate's is a benchmark's (`make bench-rerun`: the median of 5 re-runs of the sample lake,
    the model measured in the run), not this test's: one re-run of a second's fixed work, in a worker
    beside another, moved from 0.5 to 1.9 times its estimate here."""
    assert outcome["status"] == "migrated" and outcome["files_copied"] == 0 and outcome["files_skipped"] > 0
    estimate = outcome["estimate"]
    assert estimate["requests_by_phase"]["copy"]["copy"] == estimate["requests_by_phase"]["copy"]["put"] == 0
    assert outcome["requests_by_phase"]["copy"].get("put", 0) == 0
    counted, estimated = sum(outcome["requests"].values()), sum(estimate["requests"].values())
    assert abs(estimated - counted) <= 0.2 * counted, (
        estimate["requests_by_phase"],
        outcome["requests_by_phase"],
    )


def test_the_hold_of_a_run_that_ended_is_taken_over(world: tuple[Lake, LocalDeployment]) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1]])
    dead = run_execution(deployment.state_machine_arn, {"not": "a request"}, timeout=60, name="dead-run")
    assert dead.status == "FAILED"
    listed = boto3.client("stepfunctions").list_executions(stateMachineArn=deployment.state_machine_arn)
    dead_arn = next(e["executionArn"] for e in listed["executions"] if e["name"] == "dead-run")
    _hold(lake, "dead-run", "orders", execution_arn=dead_arn)  # it died holding the table

    report = run_workflow(deployment, lake.request("after-the-dead"))
    assert report["tables"][0]["status"] == "migrated"
