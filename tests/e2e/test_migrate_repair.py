"""Damage found at every tier by the copy record's checksums, and repaired from the source, through
the real state machine on the embedded AWS (modes verify and repair; one migration, then verify
and repair runs on it).

The damage: a data file and a position-delete file of sales.orders overwritten with bytes of the
same length (sizes alone cannot tell), a manifest and an older snapshot's manifest list of
sales.customers deleted. sales.orders is written by Iceberg's Java writer (Spark, merge-on-read)
so that it has a delete file; both tables are moved to the source bucket by `Lake.publish`."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pytest
from pyiceberg.table import StaticTable

from icelake.aws.fileio import S3FileIO
from icelake.local.deploy import LocalDeployment
from icelake.local.embedded import run_execution
from icelake.migrate.check.record import Record
from icelake.migrate.check.verify import verify_synced
from icelake.workflow.client import read_report
from tests.e2e.conftest import run_workflow
from tests.lake import (
    SOURCE_BUCKET,
    TARGET_BUCKET,
    Lake,
    add_source_table,
    bucket_state,
    catalog_state,
    s3_props,
)

pytestmark = pytest.mark.slow


def _spark_orders(spark: Any, lake: Lake) -> str:
    """sales.orders with a position-delete file (Iceberg Java, merge-on-read), published."""
    spark.sql("DROP TABLE IF EXISTS src.repair59.orders")
    spark.sql(
        "CREATE TABLE src.repair59.orders (id BIGINT, v STRING) USING iceberg TBLPROPERTIES "
        "('format-version'='2','write.delete.mode'='merge-on-read')"
    )
    spark.sql("INSERT INTO src.repair59.orders VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql("INSERT INTO src.repair59.orders VALUES (4, 'd'), (5, 'e')")
    spark.sql("DELETE FROM src.repair59.orders WHERE id = 2")
    meta = spark.sql(
        "SELECT file FROM src.repair59.orders.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
    ).collect()[0][0]
    return lake.publish("sales", "orders", meta)


def _run(
    deployment: LocalDeployment, lake: Lake, run_id: str, mode: str, tier: str, **options: Any
) -> dict[str, Any]:
    """A verify or repair run's outcomes by table, and its report.html under "html"."""
    request = lake.request(run_id, mode=mode, options={"concurrency": 2, "validation": tier, **options})
    result = run_execution(deployment.state_machine_arn, request, timeout=300, name=run_id)
    assert result.status == "SUCCEEDED", result.failure()
    html_uri = result.output["report_html_uri"]
    html = S3FileIO(boto3.client("s3")).read(html_uri).decode()
    return {"html": html} | {t["table"]: t for t in read_report(result.output["report_uri"])["tables"]}


def _files(meta: str) -> dict[str, Any]:
    """The target's files by kind, from its metadata (pyiceberg's reading, not icelake's), and
    which snapshots read each data file."""
    table = StaticTable.from_metadata(meta, properties=s3_props())
    current = table.current_snapshot()
    assert current is not None
    tasks = list(table.scan().plan_files())
    live = {
        s.snapshot_id: {t.file.file_path for t in table.scan(snapshot_id=s.snapshot_id).plan_files()}
        for s in table.metadata.snapshots
    }
    return {
        "data": sorted(t.file.file_path for t in tasks),
        "deletes": sorted({d.file_path for t in tasks for d in t.delete_files}),
        "manifests": [m.manifest_path for m in current.manifests(table.io)],
        "lists": [s.manifest_list for s in table.metadata.snapshots],
        "live": live,
    }


def _overwrite_same_length(lake: Lake, uri: str) -> None:
    s3 = lake.target.client("s3")
    key = uri.split("/", 3)[3]
    size = s3.head_object(Bucket=TARGET_BUCKET, Key=key)["ContentLength"]
    s3.put_object(Bucket=TARGET_BUCKET, Key=key, Body=b"\x00" * size)


def _delete(lake: Lake, uri: str) -> None:
    lake.target.client("s3").delete_object(Bucket=TARGET_BUCKET, Key=uri.split("/", 3)[3])


def _damage(lake: Lake, orders: dict[str, Any], customers: dict[str, Any]) -> None:
    _overwrite_same_length(lake, orders["data"][0])
    _overwrite_same_length(lake, orders["deletes"][0])
    _delete(lake, customers["manifests"][0])
    _delete(lake, customers["lists"][0])


def _the_glue_job_says_the_same(
    deployment: LocalDeployment, lake: Lake, mode: str, in_lambda: dict[str, Any]
) -> None:
    """A run of `mode` at the tier of `in_lambda` (a run whose Verify step checked the files
    itself), with the threshold giving every table's files to the Glue job: the same outcomes."""
    tier = "rows" if mode == "verify" else "metadata"
    on_glue = _run(deployment, lake, f"{mode}-glue", mode, tier, verify_glue_threshold_files=0)
    for table in ("sales.orders", "sales.customers"):
        assert in_lambda[table]["engines"] == {"verify": "lambda"}, in_lambda[table]
        assert on_glue[table]["engines"] == {"verify": "glue"}, json.dumps(on_glue[table], default=str)
        assert "verify_glue_threshold_files 0" in on_glue[table]["engine_rule"], on_glue[table]
        assert _said(on_glue[table]) == _said(in_lambda[table]), (on_glue[table], in_lambda[table])
        if mode == "verify":  # a repair checks again only the files written, where it can
            assert on_glue[table]["validation"] == in_lambda[table]["validation"]


def _said(outcome: dict[str, Any]) -> tuple[Any, ...]:
    """What an outcome says of the table, whichever engine checked its files."""
    error = outcome.get("error") or {}
    return (
        outcome["status"],
        sorted(outcome["damaged_files"]),
        sorted(outcome["repaired_files"]),
        error.get("message"),
    )


def test_damage_is_named_at_every_tier_and_repaired_from_the_source(
    world: tuple[Lake, LocalDeployment], spark: Any
) -> None:
    lake, deployment = world
    orders_source = _spark_orders(spark, lake)
    add_source_table(lake, "customers", [[10, 11], [12], [13]])
    migrated = {t["table"]: t for t in run_workflow(deployment, lake.request("full-1"))["tables"]}
    assert {t["status"] for t in migrated.values()} == {"migrated"}, migrated
    source_before = [bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)]
    s3 = S3FileIO(lake.target.client("s3"))
    orders = _files(migrated["sales.orders"]["target_metadata_location"])
    customers = _files(migrated["sales.customers"]["target_metadata_location"])
    assert orders["deletes"], "sales.orders has a position-delete file"

    # Given: the damage, on the target only
    damaged = {
        "sales.orders": [orders["data"][0], orders["deletes"][0]],
        "sales.customers": [customers["manifests"][0], customers["lists"][0]],
    }
    _damage(lake, orders, customers)
    target_damaged = bucket_state(lake.target, TARGET_BUCKET)

    # Then: every tier names every damaged file, and neither table is verified
    for tier in ("metadata", "sample", "rows"):
        outcomes = _run(deployment, lake, f"verify-{tier}", "verify", tier)
        for table, paths in damaged.items():
            outcome = outcomes[table]
            assert outcome["status"] == "damaged", (tier, outcome)
            assert sorted(outcome["damaged_files"]) == sorted(paths), (tier, outcome)
            assert all(p in outcome["error"]["message"] for p in paths), (tier, outcome)
    message = outcomes["sales.orders"]["error"]["message"]
    assert "recorded" in message  # what differed: the checksum or ETag against the record
    assert "missing at the target" in outcomes["sales.customers"]["error"]["message"]
    _the_glue_job_says_the_same(deployment, lake, "verify", outcomes)

    # Without the record (a target migrated before records were kept), sizes pass and the rows
    # tier's reader names each file it cannot parse with its complaint, not a bare failure.
    unrecorded = verify_synced(
        s3,
        S3FileIO(lake.source.client("s3")),
        (orders_source, migrated["sales.orders"]["target_metadata_location"]),
        (s3_props(), s3_props()),
        "rows",
        [f"s3://{SOURCE_BUCKET}/lake"],
        Record(),
    )
    assert {d.path for d in unrecorded.damaged} == set(damaged["sales.orders"]), unrecorded
    assert all("cannot be read" in p for p in unrecorded.problems), unrecorded.problems
    assert bucket_state(lake.target, TARGET_BUCKET) == target_damaged  # verify wrote nothing

    # A run that holds the tables (a sync going on) keeps the repair off them: busy, nothing written
    locations = [t["target_metadata_location"].rsplit("/metadata/", 1)[0] for t in migrated.values()]
    assert all(lake.deps.ledger.claim_table(loc, "a-sync", None, 3600) is None for loc in locations)
    held = _run(deployment, lake, "repair-0", "repair", "metadata")
    for table in damaged:
        assert held[table]["status"] == "busy" and "a-sync" in held[table]["error"]["message"], held
    assert bucket_state(lake.target, TARGET_BUCKET) == target_damaged
    for location in locations:
        lake.deps.ledger.release_table(location, "a-sync")

    # When repaired, at the metadata tier
    repaired = _run(deployment, lake, "repair-1", "repair", "metadata")
    for table, paths in damaged.items():
        assert repaired[table]["status"] == "verified", repaired[table]
        assert sorted(repaired[table]["repaired_files"]) == sorted(paths)
        assert sorted(repaired[table]["damaged_files"]) == sorted(paths)  # what it found
    # report.html lists each damaged file with its table, repaired
    files_section = repaired["html"].split('id="damaged-files"')[1].split("</table>")[0].replace("<wbr>", "")
    assert all(p in files_section for paths in damaged.values() for p in paths), files_section
    assert files_section.count(">repaired<") == 4 and ">damaged<" not in files_section
    assert catalog_state(lake.target)["sales.orders"]  # still registered

    # The same damage again, repaired with the Glue job checking the files: the same outcome (the
    # data and delete file checked again alone, the customers' manifest and list whole again)
    _damage(lake, orders, customers)
    _the_glue_job_says_the_same(deployment, lake, "repair", repaired)

    # Then the rows tier verifies both, and the source was never touched
    outcomes = _run(deployment, lake, "verify-after", "verify", "rows")
    assert {t: o["status"] for t, o in outcomes.items() if t != "html"} == {
        "sales.orders": "verified",
        "sales.customers": "verified",
    }, outcomes
    assert [bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)] == source_before

    _a_source_changed_since_the_copy_is_not_repaired(deployment, lake, orders, source_before[0])


def _a_source_changed_since_the_copy_is_not_repaired(
    deployment: LocalDeployment, lake: Lake, orders: dict[str, Any], source_keys: dict[str, str]
) -> None:
    # Given: a source object changed since the copy, and its copy on the target lost
    data = orders["data"][-1]
    source_key = next(k for k in source_keys if k.endswith(data.rsplit("/", 1)[1]))
    lake.source.client("s3").put_object(Bucket=SOURCE_BUCKET, Key=source_key, Body=b"changed since the copy")
    _delete(lake, data)
    target_before = [bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)]

    # When repaired, then it is named as not repairable, with the snapshots that need it, and
    # nothing is written to the target
    run = _run(deployment, lake, "repair-2", "repair", "metadata")
    outcome = run["sales.orders"]
    files_section = run["html"].split('id="damaged-files"')[1].split("</table>")[0].replace("<wbr>", "")
    assert data in files_section and ">damaged<" in files_section
    assert outcome["status"] == "damaged" and outcome["repaired_files"] == [], outcome
    message = outcome["error"]["message"]
    assert data in message and "changed since the copy" in message, message
    listed = re.search(rf"{re.escape(data)}.*?snapshots that need it: ([0-9, ]+);", message)
    assert listed, message
    needing = {int(s) for s in listed.group(1).split(", ")}
    assert needing == {s for s, files in orders["live"].items() if data in files}, message
    assert [bucket_state(lake.target, TARGET_BUCKET), catalog_state(lake.target)] == target_before
