"""The workflow's mode "assess": Inventory, an Assess step per table, then Report writes
runs/<run_id>/assessment.json and assessment.html, by the code `icelake assess` runs; no target is
touched. A full migration of the same tables then sends the requests it estimated."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from icelake.constants import PRICED_REGIONS
from icelake.errors import InvalidRequestError
from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution
from icelake.request.selection import parse_request
from icelake.workflow.client import read_report
from tests.e2e.conftest import run_workflow
from tests.lake import TARGET_BUCKET, Lake, add_source_table, bucket_state, catalog_state

pytestmark = pytest.mark.slow
PRICE_TABLES = Path(__file__).resolve().parents[2] / "icelake" / "assess" / "estimate" / "price_tables"


def test_an_assessment_run_writes_both_files_and_touches_no_target(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    # Given two source tables and an empty target
    lake, deployment = world
    add_source_table(lake, "orders", [[1, 2], [3], [4]])
    add_source_table(lake, "customers", [[1]])
    target_before = (bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target))

    # When the workflow runs the request in mode assess
    request = lake.request("assess-1", mode="assess")
    result = run_execution(deployment.state_machine_arn, request, timeout=300, name="assess-1")

    # Then it wrote the run's assessment, both files, and nothing on the target
    assert result.status == "SUCCEEDED", result.failure()
    summary = dict(result.output)
    assert summary["status"] == "succeeded" and summary["counts"] == {"assessed": 2}
    assert summary["report_uri"].endswith("runs/assess-1/assessment.json")
    assessment = read_report(summary["report_uri"])
    tables = {t["table"]: t for t in assessment["tables"]}
    assert set(tables) == {"sales.orders", "sales.customers"}
    assert tables["sales.orders"]["data_files"] == 3 and tables["sales.orders"]["snapshots"] == 3
    assert all(t["estimate"] and not t["blockers"] for t in tables.values())
    bucket, _, key = summary["report_html_uri"].removeprefix("s3://").partition("/")
    page = boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read().decode()
    assert page.startswith("<!DOCTYPE html>") and "sales.orders" in page
    # ... and what reads the tables, scanned with the source role (none in this lake)
    rewire = read_report(summary["report_uri"].replace("assessment.json", "rewire.json"))
    assert rewire["tables"] == 2 and rewire["references"] == [] and rewire["unread"] == []
    assert "Rewire at cutover" in page
    assert (bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)) == target_before

    # ... and a migration of the same tables sends what the assessment estimated
    report = run_workflow(deployment, lake.request("full-1"))
    for outcome in report["tables"]:
        estimated = tables[outcome["table"]]["estimate"]["requests"]
        counted = outcome["requests"]
        assert abs(sum(estimated.values()) - sum(counted.values())) <= 0.2 * sum(counted.values())
        assert estimated["copy"] == counted["copy"] == outcome["files_copied"]
        # ... phase by phase, as the benchmarks pair them (benchmarks/estimate_pairs.py)
        by_phase = outcome["requests_by_phase"]
        assert set(by_phase) == {"plan", "copy", "validate"}
        assert {k: sum(p.get(k, 0) for p in by_phase.values()) for k in counted} == counted
        assert by_phase["copy"]["copy"] == outcome["files_copied"] and by_phase["plan"]["copy"] == 0


def test_a_glue_copy_sends_what_the_assessment_estimated_phase_by_phase(
    world: tuple[Lake, LocalDeployment],
) -> None:
    # Given a table over the request's file threshold for the Lambda (2), so the Glue job copies it
    lake, deployment = world
    add_source_table(lake, "orders", [[1, 2], [3], [4]])
    options = {"glue_threshold_files": 2, "validation": "metadata"}

    # When it is assessed, then migrated
    request = lake.request("assess-g", mode="assess", options=options)
    result = run_execution(deployment.state_machine_arn, request, timeout=300, name="assess-g")
    assert result.status == "SUCCEEDED", result.failure()
    (assessed,) = read_report(dict(result.output)["report_uri"])["tables"]
    (outcome,) = run_workflow(deployment, lake.request("full-g", options=options))["tables"]

    # Then the Glue job copied it and its requests are counted in the copy phase: the executors'
    # copies and the driver's plan, writes and check of the target's files
    assert assessed["engine"] == outcome["engines"]["copy"] == "glue" and outcome["status"] == "migrated"
    measured = outcome["requests_by_phase"]
    estimated = assessed["estimate"]["requests_by_phase"]
    assert measured["copy"]["copy"] == estimated["copy"]["copy"] == outcome["files_copied"] == 3
    assert measured["copy"]["list"] >= 1  # the file check's listing, in the job
    # ... phase by phase, as the estimate placed them: the file check in the copy, Validate only
    # reading what the job found (and pruning)
    validate_sent, validate_expected = sum(measured["validate"].values()), sum(estimated["validate"].values())
    assert abs(validate_sent - validate_expected) <= 2, (measured["validate"], estimated["validate"])
    # ... and the copy's as estimated but for what the model leaves out (icelake/assess/estimate/expected.py):
    # the job's journal checks each rewritten file again (a HEAD each), and each of its processes
    # asks each bucket's region (GetBucketLocation, a GET: the driver and the 2 local executors')
    for kind in ("copy", "list", "put"):
        assert measured["copy"][kind] == estimated["copy"][kind], (kind, measured["copy"], estimated["copy"])
    assert measured["copy"]["head"] - estimated["copy"]["head"] == outcome["files_rewritten"]
    assert 0 <= measured["copy"]["get"] - estimated["copy"]["get"] <= 2 * 3


def test_a_region_without_shipped_prices_is_assessed_with_options_prices_and_refused_without(
    world: tuple[Lake, LocalDeployment],
) -> None:
    # Given a table whose target is in ap-south-1, where no price table ships, and a price table
    # for it in the shipped format in the artifacts bucket (us-east-1's figures, relabelled: a test's)
    lake, deployment = world
    add_source_table(lake, "orders", [[1, 2], [3]])
    region = "ap-south-1"
    assert region not in PRICED_REGIONS
    table = json.loads((PRICE_TABLES / "us-east-1.json").read_text())
    table |= {"region": region, "note": "a test's: us-east-1's figures under ap-south-1"}
    key = f"prices/{region}.json"
    boto3.client("s3").put_object(Bucket=lake.env.artifacts_bucket, Key=key, Body=json.dumps(table).encode())
    target = {k: v for k, v in lake.request("x")["target"].items() if k != "kms_key_id"}
    request = lake.request("assess-ap", mode="assess", target={**target, "region": region})

    # When the request names no prices: it is refused when it is parsed, naming the option, by the
    # CLI before anything starts and by the workflow's Inventory before any table is read
    with pytest.raises(InvalidRequestError, match=r"options\.prices: no price table ships for ap-south-1"):
        parse_request(request)
    refused = run_execution(deployment.state_machine_arn, request, timeout=300, name="assess-ap-0")
    error, cause = refused.failure()
    assert refused.status == "FAILED" and str(error).startswith("InvalidRequest"), (error, cause)
    assert "options.prices: no price table ships for ap-south-1" in str(cause)

    # When it names options.prices: the assessment is written, priced with that table
    priced = {
        **request,
        "options": {**request["options"], "prices": f"s3://{lake.env.artifacts_bucket}/{key}"},
    }
    result = run_execution(deployment.state_machine_arn, priced, timeout=300, name="assess-ap")
    assert result.status == "SUCCEEDED", result.failure()
    assessment = read_report(dict(result.output)["report_uri"])
    assert assessment["model"]["prices"]["region"] == region
    (orders,) = assessment["tables"]
    assert orders["estimate"]["cost_usd"]["total"] > 0 and not orders["blockers"]
