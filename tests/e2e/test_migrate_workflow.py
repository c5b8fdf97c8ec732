"""The whole workflow on the real ASL file, run by moto's Step Functions interpreter with the
repo's handlers: several tables across two accounts, incremental sync, failures and rollback."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from pyiceberg.table import StaticTable
from typer.testing import CliRunner

from icelake.aws.fileio import io_for
from icelake.cli import app
from icelake.constants import EVENT_SOURCE, GLUE_MIGRATE_JOB
from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution
from icelake.local.lake import SOURCE_ROLE, TARGET_ROLE
from tests.browser import assert_fits_and_hides_traces, load_at_1280
from tests.e2e.conftest import run_workflow
from tests.functional.moto_sts import assumed_roles
from tests.lake import (
    SOURCE_BUCKET,
    TARGET_BUCKET,
    Lake,
    add_source_table,
    bucket_state,
    catalog_state,
    commit,
    delete_ids,
    s3_props,
)
from tests.verify import assert_same_table

pytestmark = pytest.mark.slow


def test_full_migration_then_incremental_sync(world: tuple[Lake, LocalDeployment]) -> None:
    lake, deployment = world
    sources = {n: add_source_table(lake, n, [[1, 2], [3], [4, 5]]) for n in ("orders", "customers", "items")}
    source_before = bucket_state(lake.source, SOURCE_BUCKET)

    # When the state machine migrates the database
    report = run_workflow(deployment, lake.request("full-1"))

    # Then every table is migrated, registered and reads like its source in every snapshot
    assert report["status"] == "succeeded"
    outcomes = {t["table"]: t for t in report["tables"]}
    assert set(outcomes) == {f"sales.{n}" for n in sources}
    target_catalog = catalog_state(lake.target)
    for name, meta in sources.items():
        outcome = outcomes[f"sales.{name}"]
        assert outcome["status"] == "migrated" and outcome["files_copied"] == 3
        assert target_catalog[f"sales.{name}"]["metadata_location"] == outcome["target_metadata_location"]
        assert (
            assert_same_table(
                meta, outcome["target_metadata_location"], source_props=s3_props(), target_props=s3_props()
            )
            == 3
        )
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    outcomes_full_orders = outcomes["sales.orders"]
    assert outcomes_full_orders["sync"] == "full"

    # When one table gets a new commit and an incremental run follows
    new_meta = commit(lake, "orders", [6, 7])
    second = run_workflow(deployment, lake.request("incr-1", mode="incremental"))

    # Then only the new data file is copied; unchanged tables are reported in sync
    outcomes = {t["table"]: t for t in second["tables"]}
    assert outcomes["sales.orders"]["status"] == "migrated" and outcomes["sales.orders"]["files_copied"] == 1
    assert {outcomes["sales.customers"]["status"], outcomes["sales.items"]["status"]} == {"in_sync"}
    assert_same_table(
        new_meta,
        outcomes["sales.orders"]["target_metadata_location"],
        source_props=s3_props(),
        target_props=s3_props(),
    )
    # and the sync was planned and validated from the last one: the new snapshot at the request's
    # tier, the older ones proven untouched, with fewer requests than the full migration sent
    orders = outcomes["sales.orders"]
    assert orders["sync"] == "incremental", orders["sync_reason"]
    assert "incremental: 1 new snapshot(s) at this tier" in orders["validation"]
    assert sum(orders["requests"].values()) < sum(outcomes_full_orders["requests"].values())

    # When the next run asks for the whole table
    commit(lake, "orders", [8])
    third = run_workflow(
        deployment, lake.request("incr-2", mode="incremental", options={"concurrency": 2, "sync": "full"})
    )

    # Then the whole table is planned and validated, and the outcome says why
    orders = {t["table"]: t for t in third["tables"]}["sales.orders"]
    assert (orders["status"], orders["sync"]) == ("migrated", "full")
    assert "options.sync" in orders["sync_reason"]
    assert "incremental" not in orders["validation"]


def test_a_failing_table_is_rolled_back_and_the_others_migrate(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    lake, deployment = world
    add_source_table(lake, "good", [[1], [2]])
    add_source_table(lake, "broken", [[1], [2]])
    add_source_table(lake, "theirs", [[1]])
    # a source file goes missing, and a target table exists that icelake did not create
    s3 = lake.source.client("s3")
    data_key = next(k for k in bucket_state(lake.source, SOURCE_BUCKET) if "/broken/data/" in k)
    s3.delete_object(Bucket=SOURCE_BUCKET, Key=data_key)
    glue = lake.target.client("glue")
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_table(
        DatabaseName="sales",
        TableInput={
            "Name": "theirs",
            "Parameters": {"table_type": "ICEBERG", "metadata_location": "s3://x/y.json"},
        },
    )
    source_before = bucket_state(lake.source, SOURCE_BUCKET)
    catalog_theirs = catalog_state(lake.target)["sales.theirs"]
    queue = _events_queue()  # the run's EventBridge event, as a rule delivers it

    report = run_workflow(deployment, lake.request("mixed-1"))

    outcomes = {t["table"]: t for t in report["tables"]}
    assert report["status"] == "partial"
    assert outcomes["sales.good"]["status"] == "migrated"
    assert (
        outcomes["sales.broken"]["status"] == "rolled_back"
        and data_key.split("/")[-1] in outcomes["sales.broken"]["error"]["message"]
    )
    assert (
        outcomes["sales.theirs"]["status"] == "rolled_back"
        and "icelake did not create it" in outcomes["sales.theirs"]["error"]["message"]
    )
    target = bucket_state(lake.target, TARGET_BUCKET)
    assert target and all("/good/" in k for k in target)  # nothing left behind for the failed tables
    assert catalog_state(lake.target)["sales.theirs"] == catalog_theirs
    assert "sales.broken" not in catalog_state(lake.target)
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    _errors_read_alike_everywhere(report, queue, tmp_path)


def _events_queue() -> str:
    """An SQS queue that an EventBridge rule on icelake's events (the default bus) feeds."""
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="icelake-run-events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events = boto3.client("events")
    events.put_rule(Name="icelake-runs", EventPattern=json.dumps({"source": [EVENT_SOURCE]}))
    events.put_targets(Rule="icelake-runs", Targets=[{"Id": "queue", "Arn": arn}])
    return str(url)


def _errors_read_alike_everywhere(report: dict[str, Any], queue: str, tmp_path: Path) -> None:
    """Each failed table's error is {type, message, step, hint?} in report.json, the run's event,
    the CLI's table and report.html, with no stack trace in any; the page fits 1280 px."""
    outcomes = {t["table"]: t for t in report["tables"]}
    theirs = outcomes["sales.theirs"]["error"]
    assert (theirs["type"], theirs["step"]) == ("TargetNotOursError", "Plan")
    assert "another target name" in theirs["hint"] and theirs["log_group"] == "/aws/lambda/icelake-plan"
    broken = outcomes["sales.broken"]["error"]
    assert broken["step"] in ("Plan", "Copy") and broken["message"]
    assert "stackTrace" not in json.dumps(report) and "Traceback" not in json.dumps(report)
    assert "drop it" not in json.dumps(report)
    # the event
    bodies = [json.loads(m["Body"]) for m in boto3.client("sqs").receive_message(QueueUrl=queue)["Messages"]]
    detail = next(b["detail"] for b in bodies if b["detail"].get("run_id") == "mixed-1")
    by_table = {e["table"]: e for e in detail["errors"]}
    assert set(by_table) == {"sales.theirs", "sales.broken"}
    assert {k: by_table["sales.theirs"][k] for k in ("type", "message", "step")} == {
        k: theirs[k] for k in ("type", "message", "step")
    }
    assert "stackTrace" not in json.dumps(detail)
    # the CLI's table (`icelake migrate status`, as a person runs it)
    shown = CliRunner().invoke(app, ["migrate", "status", "mixed-1"])
    assert shown.exit_code == 1, shown.stderr  # a partial run
    words = shown.stdout.split()
    assert "TargetNotOursError" in words and "sales.theirs" in words and "untouched:" in words, shown.stdout
    assert "errorType" not in shown.stdout and "stackTrace" not in shown.stdout
    # report.html, in a browser at 1280 px
    bucket, _, key = str(report["report_html_uri"]).removeprefix("s3://").partition("/")
    page = tmp_path / "report.html"
    page.write_bytes(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
    seen = load_at_1280(page, "report-failed-tables")
    assert_fits_and_hides_traces(seen)
    assert "icelake did not create it" in seen.text and "What to do:" in seen.text
    assert seen.details >= 1 and "full message" in seen.opened and len(seen.opened) > 200
    assert any("log-group/$252Faws$252Flambda$252Ficelake-plan" in link for link in seen.links), seen.links


def test_malformed_request_fails_at_once(world: tuple[Lake, LocalDeployment]) -> None:
    lake, deployment = world
    request = lake.request("bad-1")
    request["selection"] = {}
    result = run_execution(deployment.state_machine_arn, request, timeout=60, name="bad-1")
    assert result.status == "FAILED"
    error, cause = result.failure()
    assert error == "InvalidRequest" and "selection" in (cause or "")
    assert bucket_state(lake.target, TARGET_BUCKET) == {}
    assert json.dumps(result.output or {}) is not None


def _contents(lake: Lake) -> dict[str, str]:
    import hashlib

    s3 = lake.target.client("s3")
    return {
        k: hashlib.sha256(s3.get_object(Bucket=TARGET_BUCKET, Key=k)["Body"].read()).hexdigest()
        for k in bucket_state(lake.target, TARGET_BUCKET)
    }


def test_a_run_killed_mid_copy_is_resumed_by_running_it_again(
    world: tuple[Lake, LocalDeployment], monkeypatch: pytest.MonkeyPatch
) -> None:
    from icelake.migrate.copy import engine
    from icelake.workflow import steps
    from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput

    lake, deployment = world
    add_source_table(lake, "orders", [[1], [2], [3], [4]])
    # Given a run whose copy step died after two files (no rollback ran: the process was killed,
    # and its execution then ended: failed, aborted or timed out)
    killed = run_execution(deployment.state_machine_arn, {"not": "a request"}, timeout=60, name="killed-1")
    assert killed.status == "FAILED"
    listed = boto3.client("stepfunctions").list_executions(stateMachineArn=deployment.state_machine_arn)
    killed_arn = next(e["executionArn"] for e in listed["executions"] if e["name"] == "killed-1")
    inv = steps.inventory(
        InventoryInput.model_validate({"request": lake.request("killed-1"), "execution_arn": killed_arn}),
        lake.deps,
    )
    item = json.loads(
        lake.source.client("s3").get_object(Bucket=inv.worklist_bucket, Key=inv.worklist_key)["Body"].read()
    )[0]
    planned = steps.plan(PlanInput.model_validate({"item": item}), lake.deps).model_dump(mode="json")
    real_copy, calls = engine.copy_file_proved, []

    def dies_on_third(*args: Any) -> Any:
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")
        return real_copy(*args)  # its verdict too: the engine adds it up as each copy ends

    monkeypatch.setattr(engine, "copy_file_proved", dies_on_third)
    with pytest.raises(KeyboardInterrupt):
        steps.copy(PlannedInput.model_validate({"plan": planned}), lake.deps)
    monkeypatch.undo()
    assert 0 < len(bucket_state(lake.target, TARGET_BUCKET)) < 4

    # When the migration is simply run again
    resumed = run_workflow(deployment, lake.request("resume-1"))
    resumed_contents, resumed_catalog = _contents(lake), catalog_state(lake.target)

    # Then it ends exactly like an uninterrupted run
    assert resumed["tables"][0]["status"] == "migrated"
    for key in bucket_state(lake.target, TARGET_BUCKET):
        lake.target.client("s3").delete_object(Bucket=TARGET_BUCKET, Key=key)
    lake.target.client("glue").delete_table(DatabaseName="sales", Name="orders")
    clean = run_workflow(deployment, lake.request("clean-1"))
    assert clean["tables"][0]["files_copied"] == 4
    assert _contents(lake) == resumed_contents
    assert (
        catalog_state(lake.target)["sales.orders"]["metadata_location"]
        == resumed_catalog["sales.orders"]["metadata_location"]
    )


def test_a_source_commit_during_the_migration_is_picked_up_by_the_next_run(
    world: tuple[Lake, LocalDeployment],
) -> None:
    from icelake.workflow import steps
    from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput

    lake, deployment = world
    pinned = add_source_table(lake, "orders", [[1], [2]])
    # Given a run that pinned the source version at inventory time
    inv = steps.inventory(InventoryInput.model_validate(lake.request("pin-1")), lake.deps)
    item = json.loads(
        lake.source.client("s3").get_object(Bucket=inv.worklist_bucket, Key=inv.worklist_key)["Body"].read()
    )[0]
    # When the source commits while the run is in flight
    newer = commit(lake, "orders", [3])
    state = {"plan": steps.plan(PlanInput.model_validate({"item": item}), lake.deps).model_dump(mode="json")}
    steps.copy(PlannedInput.model_validate(state), lake.deps)
    steps.register(PlannedInput.model_validate(state), lake.deps)
    outcome = steps.validate(PlannedInput.model_validate(state), lake.deps)

    # Then the target is exactly the pinned version, not a mix
    assert item["source_metadata_location"] == pinned
    assert (
        assert_same_table(
            pinned, outcome.target_metadata_location, source_props=s3_props(), target_props=s3_props()
        )
        == 2
    )
    # and the next incremental run brings the new commit
    report = run_workflow(deployment, lake.request("pin-2", mode="incremental"))
    latest = report["tables"][0]
    assert latest["status"] == "migrated" and latest["files_copied"] == 1
    assert (
        assert_same_table(
            newer, latest["target_metadata_location"], source_props=s3_props(), target_props=s3_props()
        )
        == 3
    )


@pytest.mark.spark
@pytest.mark.parametrize("validation", ["rows", "metadata"])
def test_a_glue_sized_table_is_validated_where_its_tier_says(
    world: tuple[Lake, LocalDeployment], spark: Any, validation: str
) -> None:
    # Given a table over the Glue threshold, with a delete (a snapshot whose rows are fewer than its
    # files hold)
    lake, deployment = world
    add_source_table(lake, "events", [[1, 2], [3], [4, 5]])
    meta = delete_ids(lake, "events", [3])
    options = {"glue_threshold_bytes": 0, "concurrency": 1, "validation": validation}

    report = run_workflow(deployment, lake.request(f"glue-{validation}", options=options))

    # Then the Glue job planned (the snapshot summaries put the table over the threshold) and copied,
    # and the rows were compared by the Glue job
    # (validation: rows) or the Lambda checked metadata (validation: metadata)
    (outcome,) = report["tables"]
    assert outcome["status"] == "migrated"
    in_glue = validation == "rows"
    validated_in = "glue" if in_glue else "lambda"
    assert outcome["engines"] == {"plan": "glue", "copy": "glue", "validate": validated_in}
    (job_run,) = boto3.client("glue").get_job_runs(JobName=GLUE_MIGRATE_JOB)["JobRuns"]
    result_uri = job_run["Arguments"]["--result-uri"]
    copied = json.loads(io_for(result_uri).read(result_uri))
    snapshots = len(StaticTable.from_metadata(meta, properties=s3_props()).metadata.snapshots)
    # the Glue job checked the target's files next to the copy (Validate does not read them again)
    checked = copied["files_check"]
    assert checked["problems"] == [] and checked["error"] is None and checked["files"] >= 3
    if in_glue:
        rows = copied["rows_validation"]
        assert rows["snapshots_compared"] == snapshots and rows["problems"] == [] and rows["error"] is None
        assert outcome["validation"].startswith(f"rows (in the Glue job: {snapshots} snapshots")
    else:
        assert copied["rows_validation"] is None and outcome["validation"] == "metadata"
    # and an engine that wrote neither reads every snapshot of the target as it reads the source
    target = outcome["target_metadata_location"]
    assert assert_same_table(meta, target, source_props=s3_props(), target_props=s3_props()) == snapshots


@pytest.mark.spark
def test_large_tables_go_through_the_glue_job(world: tuple[Lake, LocalDeployment], spark: Any) -> None:
    # Given a threshold that sends every table to the Glue Spark job
    lake, deployment = world
    sources = {n: add_source_table(lake, n, [[1, 2], [3]]) for n in ("orders", "customers")}
    # and sessions of 45 minutes
    options = {"glue_threshold_bytes": 0, "concurrency": 2, "session_duration_seconds": 2700}
    request = lake.request("glue-1", options=options)

    started = datetime.now(UTC)
    report = run_workflow(deployment, request)
    ended = datetime.now(UTC)

    # Then the Glue job copied them (its run is in Glue's history) and they read like their sources
    outcomes = {t["table"]: t for t in report["tables"]}
    job_runs = boto3.client("glue").get_job_runs(JobName=GLUE_MIGRATE_JOB)["JobRuns"]
    assert len(job_runs) == 2 and {r["JobRunState"] for r in job_runs} == {"SUCCEEDED"}
    for name, meta in sources.items():
        outcome = outcomes[f"sales.{name}"]
        assert outcome["status"] == "migrated" and outcome["files_copied"] == 2, json.dumps(outcome, indent=1)
        assert_same_table(
            meta, outcome["target_metadata_location"], source_props=s3_props(), target_props=s3_props()
        )
    # and every role it assumed for the run (in the Lambdas, the Glue driver and the executors, which
    # assume the roles themselves) was asked for 45 minutes
    for role, side in ((SOURCE_ROLE, "src"), (TARGET_ROLE, "dst")):
        recorded = assumed_roles(role, f"icelake-{side}-glue-1")
        assert recorded
        for r in recorded:
            expires = r.expiration.replace(tzinfo=UTC)
            assert started + timedelta(seconds=2699) <= expires <= ended + timedelta(seconds=2701)
