"""The workflow's steps, called as the Lambdas call them, against moto's S3/Glue/DynamoDB/STS/KMS."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from icelake.aws import catalog
from icelake.aws.fileio import io_for
from icelake.aws.ledger import Ledger
from icelake.errors import InvalidRequestError, TargetNotOursError, ValidationFailedError
from icelake.migrate.journal import read_journal
from icelake.migrate.models import RowsValidation
from icelake.workflow import steps
from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput, ReportInput, RollbackInput
from icelake.workflow.models import PlanResult
from tests.lake import (
    SOURCE_BUCKET,
    TARGET_BUCKET,
    Lake,
    add_source_table,
    bucket_state,
    catalog_state,
    commit,
    s3_props,
)
from tests.verify import assert_same_table


def _run_table(lake: Lake, item: dict[str, Any]) -> dict[str, Any]:
    planned = steps.plan(PlanInput.model_validate({"item": item}), lake.deps).model_dump(mode="json")
    state = {"plan": planned}
    if planned["engine"] == "lambda":
        steps.copy(PlannedInput.model_validate(state), lake.deps)
        steps.register(PlannedInput.model_validate(state), lake.deps)
    return steps.validate(PlannedInput.model_validate(state), lake.deps).model_dump(mode="json")


def _worklist(lake: Lake, result: Any) -> list[dict[str, Any]]:
    body = (
        boto3.client("s3").get_object(Bucket=result.worklist_bucket, Key=result.worklist_key)["Body"].read()
    )
    return list(json.loads(body))


@pytest.mark.slow
def test_full_then_incremental_run(lake: Lake) -> None:
    # Given two Iceberg tables in the source account's catalog
    add_source_table(lake, "orders", [[1, 2], [3]])
    add_source_table(lake, "customers", [[10]])
    source_before = bucket_state(lake.source, SOURCE_BUCKET)

    # When the steps run for a full migration
    inv = steps.inventory(
        InventoryInput.model_validate({"request": lake.request("run-1"), "execution_name": "x"}), lake.deps
    )
    items = _worklist(lake, inv)
    outcomes = [_run_table(lake, i) for i in items]
    report = steps.report(ReportInput.model_validate({"run_id": inv.run_id, "outcomes": outcomes}), lake.deps)

    # Then both tables are registered in the target catalog and read like their sources
    assert inv.tables == 2 and report.status == "succeeded"
    assert {o["status"] for o in outcomes} == {"migrated"}
    target_catalog = catalog_state(lake.target)
    assert set(target_catalog) == {"sales.orders", "sales.customers"}
    for item, outcome in zip(items, outcomes, strict=True):
        assert (
            target_catalog[f"sales.{item['source_table']}"]["metadata_location"]
            == outcome["target_metadata_location"]
        )
        assert assert_same_table(
            item["source_metadata_location"],
            outcome["target_metadata_location"],
            source_props=s3_props(),
            target_props=s3_props(),
        )
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before

    # When the source gets a new commit and an incremental run follows
    commit(lake, "orders", [4])
    inv2 = steps.inventory(
        InventoryInput.model_validate(lake.request("run-2", mode="incremental")), lake.deps
    )
    outcomes2 = {o["table"]: o for o in (_run_table(lake, i) for i in _worklist(lake, inv2))}

    # Then only the new data file is copied, and the unchanged table is reported in sync
    assert outcomes2["sales.orders"]["status"] == "migrated"
    assert outcomes2["sales.orders"]["files_copied"] == 1
    assert outcomes2["sales.customers"]["status"] == "in_sync"
    runs = Ledger(boto3.client("dynamodb"), lake.env.ledger_table).run_tables("run-2")
    assert {r["sk"]: r["state"] for r in runs}["TABLE#sales.orders"] == "VALIDATED"


def test_malformed_request_is_refused_before_anything_happens(lake: Lake) -> None:
    bad = lake.request("run-x")
    bad["target"]["bucket"] = "Not_A_Bucket"
    bad["source"]["account_id"] = "12"
    with pytest.raises(InvalidRequestError) as info:
        steps.inventory(InventoryInput.model_validate({"request": bad, "execution_name": "x"}), lake.deps)
    assert "target.bucket" in str(info.value) and "source.account_id" in str(info.value)
    with pytest.raises(InvalidRequestError, match="does not exist"):
        steps.inventory(
            InventoryInput.model_validate(lake.request("run-y", selection={"tables": ["sales.nope"]})),
            lake.deps,
        )


def test_target_table_that_is_not_ours_is_refused(lake: Lake) -> None:
    add_source_table(lake, "orders", [[1]])
    glue = lake.target.client("glue")
    catalog.ensure_database(glue, "sales")
    glue.create_table(
        DatabaseName="sales", TableInput={"Name": "orders", "Parameters": {"table_type": "ICEBERG"}}
    )
    inv = steps.inventory(InventoryInput.model_validate(lake.request("run-1")), lake.deps)
    with pytest.raises(TargetNotOursError, match="icelake did not create it"):
        steps.plan(PlanInput.model_validate({"item": _worklist(lake, inv)[0]}), lake.deps)


@pytest.mark.slow
def test_failure_after_copy_is_rolled_back_to_exactly_the_previous_state(lake: Lake) -> None:
    # Given a table migrated once (so the target has a previous version)
    add_source_table(lake, "orders", [[1, 2]])
    first = steps.inventory(InventoryInput.model_validate(lake.request("run-1")), lake.deps)
    _run_table(lake, _worklist(lake, first)[0])
    target_before = bucket_state(lake.target, TARGET_BUCKET)
    catalog_before = catalog_state(lake.target)

    # When a new source commit is copied and registered, and then a later step fails
    commit(lake, "orders", [3])
    source_before = bucket_state(lake.source, SOURCE_BUCKET)
    second = steps.inventory(InventoryInput.model_validate(lake.request("run-2")), lake.deps)
    item = _worklist(lake, second)[0]
    planned = steps.plan(PlanInput.model_validate({"item": item}), lake.deps)
    state = {"plan": planned.model_dump(mode="json")}
    steps.copy(PlannedInput.model_validate(state), lake.deps)
    steps.register(PlannedInput.model_validate(state), lake.deps)
    assert bucket_state(lake.target, TARGET_BUCKET) != target_before
    outcome = steps.rollback(
        RollbackInput.model_validate(
            {"item": item, "plan": state["plan"], "error": {"Error": "Boom", "Cause": "x"}}
        ),
        lake.deps,
    )

    # Then the target bucket and catalog are exactly as before, and the source was never written
    assert outcome.status == "rolled_back"
    assert bucket_state(lake.target, TARGET_BUCKET) == target_before
    assert catalog_state(lake.target) == catalog_before
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before


def test_rollback_of_a_first_migration_removes_the_table(lake: Lake) -> None:
    add_source_table(lake, "orders", [[1]])
    item = _worklist(lake, steps.inventory(InventoryInput.model_validate(lake.request("run-1")), lake.deps))[
        0
    ]
    planned = steps.plan(PlanInput.model_validate({"item": item}), lake.deps)
    state = {"plan": planned.model_dump(mode="json")}
    steps.copy(PlannedInput.model_validate(state), lake.deps)
    steps.register(PlannedInput.model_validate(state), lake.deps)
    steps.rollback(
        RollbackInput.model_validate({"item": item, "plan": state["plan"], "error": {"Cause": "x"}}),
        lake.deps,
    )
    assert bucket_state(lake.target, TARGET_BUCKET) == {}
    assert catalog_state(lake.target) == {}
    assert PlanResult.model_validate(state["plan"]).target_table_existed is False


def _copied_with(lake: Lake, rows: RowsValidation) -> PlannedInput:
    """A table planned, copied and registered, whose copy result carries `rows` as the Glue job
    writes it (MigrationResult.rows_validation)."""
    add_source_table(lake, "orders", [[1, 2], [3]])
    inv = steps.inventory(InventoryInput.model_validate(lake.request("run-1")), lake.deps)
    planned = steps.plan(PlanInput.model_validate({"item": _worklist(lake, inv)[0]}), lake.deps)
    given = PlannedInput.model_validate({"plan": planned.model_dump(mode="json")})
    copied = steps.copy(given, lake.deps)
    steps.register(given, lake.deps)
    uri = planned.copy_result_uri
    with_rows = copied.model_copy(update={"rows_validation": rows}).model_dump_json().encode()
    io_for(uri, lake.deps.orchestrator).write(uri, with_rows)
    return given


@pytest.mark.slow
def test_validate_takes_the_rows_the_glue_job_compared(lake: Lake) -> None:
    given = _copied_with(lake, RowsValidation(snapshots_compared=2, files_read=4, rows=5, seconds=1.5))
    outcome = steps.validate(given, lake.deps)
    assert outcome.status == "migrated"
    assert outcome.validation == "rows (in the Glue job: 2 snapshots, 5 rows, 4 scan tasks read, 1.5 s)"
    assert outcome.engines == {"plan": "lambda", "copy": "lambda", "validate": "glue"}


@pytest.mark.slow
def test_rows_the_glue_job_found_different_fail_validation(lake: Lake) -> None:
    problem = "snapshot 7: same row count (3) but different rows"
    given = _copied_with(lake, RowsValidation(snapshots_compared=2, problems=[problem]))
    with pytest.raises(ValidationFailedError, match=r"not the same table.*different rows"):
        steps.validate(given, lake.deps)


def test_a_rows_check_that_could_not_run_fails_validation_saying_so(lake: Lake) -> None:
    given = _copied_with(lake, RowsValidation(error="MemoryError: "))
    with pytest.raises(ValidationFailedError, match="the Glue job could not compare the rows: MemoryError"):
        steps.validate(given, lake.deps)


def test_rows_the_glue_job_could_not_read_are_sampled_instead(lake: Lake) -> None:
    why = "s3://b/t/data/x.puffin is not a Parquet position-delete file"
    outcome = steps.validate(_copied_with(lake, RowsValidation(skipped=why)), lake.deps)
    assert outcome.status == "migrated"
    assert outcome.validation == f"sample; rows not compared in the Glue job: {why}"
    assert outcome.engines["validate"] == "lambda"


def test_a_glue_sized_table_is_planned_by_the_glue_job_not_the_lambda(lake: Lake) -> None:
    # Given a table whose snapshot summaries put it over the Glue threshold, and whose manifest
    # lists are gone (so a Plan that read past metadata.json would fail)
    add_source_table(lake, "orders", [[1, 2], [3]])
    s3 = lake.source.client("s3")
    listed = s3.list_objects_v2(Bucket=SOURCE_BUCKET)["Contents"]
    manifest_lists = [o["Key"] for o in listed if o["Key"].rsplit("/", 1)[-1].startswith("snap-")]
    assert manifest_lists
    for key in manifest_lists:
        s3.delete_object(Bucket=SOURCE_BUCKET, Key=key)
    request = lake.request("run-1", options={"glue_threshold_bytes": 0, "validation": "metadata"})
    inv = steps.inventory(InventoryInput.model_validate(request), lake.deps)
    item = _worklist(lake, inv)[0]

    planned = steps.plan(PlanInput.model_validate({"item": item}), lake.deps)

    # Then Plan read the metadata.json alone: the Glue job plans and copies, the figures are the
    # summaries' upper bounds, and the journal holds nothing yet (nothing of this run is written)
    assert (planned.planned_in, planned.engine) == ("glue", "glue")
    assert planned.files_planned == planned.files_to_copy == 2 and planned.bytes_planned > 0
    assert planned.target_metadata_location.startswith(f"s3://{TARGET_BUCKET}/warehouse/")
    assert read_journal(lake.deps.artifacts.io, planned.journal_uri) == []
    # and a failure before the job journaled anything rolls back nothing but the lock
    target_before = bucket_state(lake.target, TARGET_BUCKET)
    outcome = steps.rollback(
        RollbackInput.model_validate(
            {"item": item, "plan": planned.model_dump(mode="json"), "error": {"Cause": "job failed"}}
        ),
        lake.deps,
    )
    assert outcome.status == "rolled_back" and bucket_state(lake.target, TARGET_BUCKET) == target_before
