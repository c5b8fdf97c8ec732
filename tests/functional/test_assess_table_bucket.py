"""An assessment of a migration into an S3 Tables table bucket (issue 61), on the embedded AWS's
S3 Tables: each table named as Athena reaches it, what it keeps after cutover (the source's
retention), its first compaction priced, the bucket's unreferenced-file removal, a table icelake
did not create and a table bucket that is not there blocked, Lake Formation's grants said not to
be carried; the copy estimated as a GET and a PUT per object through the engine, and the storage
at S3 Tables' prices. The assessment writes nothing, on either side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.assess.cli import write_assessment
from icelake.assess.estimate.prices import load_prices
from icelake.assess.gather.estate import assess_request, settings_for
from icelake.assess.schema import TableAssessment
from icelake.aws import s3tables
from icelake.request.models import MigrationRequest
from tests.browser import assert_readable, cells_broken_mid_token, load
from tests.lake import SOURCE_ACCOUNT, SOURCE_BUCKET, TARGET_ACCOUNT, Lake, add_source_table, bucket_state

pytestmark = pytest.mark.slow

BUCKET = f"arn:aws:s3tables:us-east-1:{TARGET_ACCOUNT}:bucket/lake"
EXAMPLE = Path(__file__).resolve().parents[1] / "events" / "migrate_request_s3tables.json"
WEEK_MS = 7 * 24 * 3_600_000


def _request(table_bucket_arn: str = BUCKET, **target: Any) -> MigrationRequest:
    body = json.loads(EXAMPLE.read_text())
    body["target"] |= {"table_bucket_arn": table_bucket_arn, **target}
    body["options"].pop("s3tables_maintenance")  # the source's retention decides
    return MigrationRequest.model_validate({**body, "run_id": "assess-1", "mode": "assess"})


def _retention(lake: Lake, name: str, properties: dict[str, str]) -> None:
    """Set table properties on a table of `add_source_table`, published to the source."""
    root = lake.local_root / "sales" / name
    cat = SqlCatalog(name, uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    with cat.load_table(f"sales.{name}").transaction() as tx:
        tx.set_properties(properties)
    lake.publish("sales", name, cat.load_table(f"sales.{name}").metadata_location)


def _tables(lake: Lake) -> list[tuple[str, str]]:
    client = lake.target.client("s3tables")
    out = []
    for bucket in client.list_table_buckets()["tableBuckets"]:
        out += [
            (t["namespace"][0], t["name"]) for t in client.list_tables(tableBucketARN=bucket["arn"])["tables"]
        ]
    return sorted(out)


def _by_name(tables: list[TableAssessment]) -> dict[str, TableAssessment]:
    return {t.table.split(".")[-1]: t for t in tables}


def test_an_assessment_into_a_table_bucket_says_what_each_table_becomes(lake: Lake) -> None:
    # Given three source tables, one keeping a week of snapshots (at least 3), and a table bucket
    # holding a table icelake made for one of them earlier and a table someone else made
    for name, batches in (("orders", [[1, 2], [3]]), ("customers", [[4]]), ("returns", [[5], [6], [7]])):
        add_source_table(lake, name, batches)
    _retention(
        lake,
        "orders",
        {"history.expire.max-snapshot-age-ms": str(WEEK_MS), "history.expire.min-snapshots-to-keep": "3"},
    )
    client = lake.target.client("s3tables")
    client.create_table_bucket(name="lake")
    ours = s3tables.create(
        client, s3tables.TableRef(BUCKET, "migrated_sales", "returns"), f"{SOURCE_ACCOUNT}:sales.returns"
    )
    client.create_table(tableBucketARN=BUCKET, namespace="migrated_sales", name="customers", format="ICEBERG")
    before = (bucket_state(lake.source, SOURCE_BUCKET), _tables(lake))
    request = _request(lake_formation={"copy_permissions": True})
    prices = load_prices("us-east-1")

    # When the request is assessed
    assessed = assess_request(request, lake.deps, settings_for(request, prices))

    # Then nothing was written: the source's objects and the table bucket's tables are as they were
    assert (bucket_state(lake.source, SOURCE_BUCKET), _tables(lake)) == before
    tables = _by_name(assessed.tables)
    orders, customers, returns = tables["orders"], tables["customers"], tables["returns"]

    # ... each table is named as an analyst types it in Athena, and is where Plan will put it
    assert orders.s3tables is not None and returns.s3tables is not None
    assert orders.s3tables.athena_name == "s3tablescatalog/lake.migrated_sales.orders"
    assert (orders.s3tables.exists, orders.target_location) == (
        False,
        "s3tables://lake/migrated_sales/orders",
    )
    assert (returns.s3tables.exists, returns.target_location) == (True, ours.warehouse_location)

    # ... it keeps what the source keeps: a week of snapshots, at least 3, never the 120-hour default;
    # and a source that expires nothing keeps every snapshot
    snapshots = orders.s3tables.maintenance_at_cutover["icebergSnapshotManagement"]
    assert snapshots == {
        "status": "enabled",
        "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 3, "maxSnapshotAgeHours": 168}},
    }
    assert "168 hours, and at least 3" in orders.s3tables.keeps and "history.expire" in orders.s3tables.keeps
    assert returns.s3tables.keeps.startswith("every snapshot (snapshot management off")
    assert orders.s3tables.compaction == "on at cutover: 512 MB files, strategy auto"
    # ... its first compaction priced: its few small files, at $0.002 per 1,000 objects and $0.005 a GB
    assert (
        orders.s3tables.first_compaction_usd is not None and 0 < orders.s3tables.first_compaction_usd < 0.001
    )
    assert "data files" in orders.s3tables.first_compaction

    # ... the bucket's unreferenced-file removal, which takes what a rolled back run leaves
    bucket = orders.s3tables.table_bucket
    assert bucket is not None
    assert (bucket.removal_enabled, bucket.unreferenced_days, bucket.noncurrent_days) == (True, 3, 10)
    assert "marked after 3 days and deleted 10 days later" in bucket.said

    # ... a table icelake did not create blocks; Lake Formation's grants are said not to be carried
    assert [b.kind for b in customers.blockers] == ["target_not_ours"]
    assert "migrated_sales.customers" in customers.blockers[0].message
    assert not orders.blockers and not returns.blockers
    not_carried = [w for w in orders.warnings if w.kind == "lake_formation_not_carried"]
    assert len(not_carried) == 1 and "s3tablescatalog/lake.migrated_sales.orders" in not_carried[0].message
    assert assessed.warnings_by_kind["lake_formation_not_carried"].count == 3

    # ... the copy is a GET and a PUT per object through the engine, never a CopyObject; the new
    # table's keys are asked with a HEAD each, as Plan will once it has created the table
    assert orders.estimate is not None
    copy = orders.estimate.requests_by_phase["copy"]
    assert copy["copy"] == 0 and copy["put"] >= orders.files_to_copy > 0
    assert copy["get"] >= orders.files_to_copy
    assert orders.estimate.requests_by_phase["plan"]["head"] >= orders.files_to_copy
    assert orders.estimate.requests["list"] <= 1  # Validate's source side only: table storage takes none
    # ... and the target copy is stored at S3 Tables' rate with the monitoring fee per object
    stored = orders.estimate.cost_usd["storage_month"]
    tables_prices = prices.tables_prices()
    objects = orders.data_files + orders.metadata_files + orders.delete_files.position
    gib = (orders.data_bytes + orders.metadata_bytes) / 1024**3
    by_hand = (
        gib * tables_prices.storage_gb_month.usd
        + objects / 1000 * tables_prices.monitoring_per_1000_objects_month.usd
    )
    assert stored == pytest.approx(by_hand, rel=0.05)
    assert stored > gib * prices.prices.s3_storage_gb_month.usd  # more than S3 Standard's


def test_the_page_shows_each_tables_athena_name_what_it_keeps_and_the_buckets_removal(
    lake: Lake, tmp_path: Path
) -> None:
    # Given an assessment of two tables into the table bucket, one of them already icelake's
    for name in ("orders", "returns"):
        add_source_table(lake, name, [[1, 2], [3]])
    client = lake.target.client("s3tables")
    client.create_table_bucket(name="lake")
    s3tables.create(
        client, s3tables.TableRef(BUCKET, "migrated_sales", "returns"), f"{SOURCE_ACCOUNT}:sales.returns"
    )
    request = _request()
    assessed = assess_request(request, lake.deps, settings_for(request, load_prices("us-east-1")))

    # When assessment.html is written and opened in headless Chromium at 1280 px
    _, page = write_assessment(assessed, tmp_path / "out")
    seen = load(page, ["#cost-chart"], "table", "assessment-s3tables")

    # Then it loads alone, with no error, and says for each table how Athena reaches it, whether
    # Plan creates it, what it keeps, and the bucket's unreferenced-file removal
    assert_readable(seen, page, ["sales.orders", "sales.returns"], ["#cost-chart"])
    for said in (
        "In the table bucket (2 table(s))",
        "s3tablescatalog/lake.migrated_sales.orders",
        "s3tablescatalog/lake.migrated_sales.returns",
        "created by Plan",
        "exists (icelake's)",
        "every snapshot (snapshot management off",
        "on at cutover: 512 MB files, strategy auto",
        "marked after 3 days and deleted 10 days later",
        "at S3 Tables' rate, with its monitoring fee per object",
        f"{SOURCE_ACCOUNT} \u2192 {BUCKET}",  # the subtitle names the table bucket
    ):
        assert said in seen.text, said
    assert cells_broken_mid_token(page, "assessment-s3tables-cells") == []


def test_a_table_bucket_that_is_not_in_the_target_region_blocks(lake: Lake) -> None:
    # Given a request naming a table bucket of us-west-2, where the account has none
    add_source_table(lake, "orders", [[1]])
    lake.target.client("s3tables").create_table_bucket(name="lake")  # in us-east-1
    request = _request(f"arn:aws:s3tables:us-west-2:{TARGET_ACCOUNT}:bucket/lake")

    assessed = assess_request(request, lake.deps, settings_for(request, load_prices("us-west-2")))

    (table,) = assessed.tables
    assert [b.kind for b in table.blockers] == ["table_bucket_missing"]
    assert "does not exist in us-west-2, the target region" in table.blockers[0].message
    assert assessed.blockers_by_kind["table_bucket_missing"].count == 1
