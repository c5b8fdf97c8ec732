"""Views and the other entries of a migrated database, through the whole workflow on embedded AWS
(issue 57): an Athena view joining two tables, a Spark view on that view, a multi-dialect view, a
Parquet table and a resource link in `sales`, migrated to `v2_sales` (database_prefix "v2_")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from icelake.assess.estimate.prices import load_prices
from icelake.assess.gather.estate import assess_request, settings_for
from icelake.assess.pages.assessment_page import render_assessment
from icelake.aws import catalog
from icelake.local.deploy import LocalDeployment
from icelake.local.lake import SOURCE_ACCOUNT, TARGET_ACCOUNT, publish_sample_tables
from icelake.objects import carry, envelope
from icelake.objects.kinds import summary_line
from icelake.objects.sql import references
from icelake.request.selection import parse_request
from tests.e2e.conftest import run_workflow
from tests.lake import Lake
from tests.views import athena_view, spark_view, view_rows

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ANALYST = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/analyst"
TARGET_ANALYST = f"arn:aws:iam::{TARGET_ACCOUNT}:role/analyst"
DEFINER = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/view-definer"
TARGET_DEFINER = f"arn:aws:iam::{TARGET_ACCOUNT}:role/view-definer"
ORDERS_NAMED = (
    "SELECT o.id, o.amount, c.name, 'sales.orders' AS origin\n"
    "FROM sales.orders o JOIN customers c ON o.customer = concat('c', CAST(c.id AS varchar))"
)
TOTALS = "SELECT customer, count(*) AS n, sum(amount) AS total FROM sales.orders GROUP BY customer"
VIEWS = ["orders_named", "big_orders", "order_totals"]  # each after what it reads
CARRIED = {"orders_named", "big_orders", "order_totals", "orders_link"}


def _source_estate(lake: Lake) -> None:
    publish_sample_tables(lake)  # sales.orders, sales.customers (Iceberg)
    glue = lake.source.client("glue")
    columns = [("id", "bigint"), ("amount", "double"), ("name", "varchar"), ("origin", "varchar")]
    for entry in (
        athena_view("orders_named", ORDERS_NAMED, "sales", columns),
        spark_view("big_orders", "SELECT id, name, amount FROM sales.orders_named WHERE amount > 300"),
        {
            "Name": "order_totals",
            "TableType": "VIRTUAL_VIEW",
            "ViewDefinition": {
                "IsProtected": True,
                "Definer": DEFINER,
                "SubObjects": [f"arn:aws:glue:us-east-1:{SOURCE_ACCOUNT}:table/sales/orders"],
                "Representations": [
                    {"Dialect": "SPARK", "DialectVersion": "3.5", "ViewOriginalText": TOTALS},
                    {"Dialect": "ATHENA", "DialectVersion": "3", "ViewOriginalText": TOTALS},
                ],
            },
        },
        {
            "Name": "raw_events",
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"classification": "parquet"},
            "StorageDescriptor": {
                "Location": "s3://source-lake/raw/events",
                "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                "SerdeInfo": {
                    "SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
                },
            },
        },
        {
            "Name": "orders_link",
            "TargetTable": {"CatalogId": SOURCE_ACCOUNT, "DatabaseName": "sales", "Name": "orders"},
        },
    ):
        glue.create_table(DatabaseName="sales", TableInput=entry)
    lake.source.client("lakeformation").grant_permissions(
        Principal={"DataLakePrincipalIdentifier": ANALYST},
        Resource={"Table": {"DatabaseName": "sales", "Name": "orders_named"}},
        Permissions=["SELECT"],
    )
    source_lf = lake.source.client("lakeformation")
    source_lf.create_lf_tag(TagKey="domain", TagValues=["sales", "crm"])
    # every carried entry tagged: moto 5.2.5 cannot answer the tags of an entry never tagged
    for name in ("orders", "customers", "orders_named", "big_orders", "order_totals", "orders_link"):
        source_lf.add_lf_tags_to_resource(
            Resource={"Table": {"DatabaseName": "sales", "Name": name}},
            LFTags=[{"TagKey": "domain", "TagValues": ["sales" if name == "orders_named" else "crm"]}],
        )


def _request(lake: Lake, run_id: str, *, tags: bool = False) -> dict[str, Any]:
    body = lake.request(run_id)
    body["target"] |= {
        "database_prefix": "v2_",
        "lake_formation": {
            "copy_permissions": True,
            "copy_tags": tags,
            "principal_map": {ANALYST: TARGET_ANALYST, DEFINER: TARGET_DEFINER},
        },
    }
    return body


def _objects(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["name"].split(".")[1]: o for o in report["objects"]}


def _views(lake: Lake) -> dict[str, dict[str, Any]]:
    glue = lake.target.client("glue")
    return {t["Name"]: t for t in catalog.list_tables(glue, "v2_sales")}


def _assess(lake: Lake) -> tuple[dict[str, Any], str]:
    """The estate's assessment as `icelake assess --request` makes it (its JSON, and the CLI's
    line on the other entries)."""
    request = parse_request(_request(lake, "assess"))
    settings = settings_for(request, load_prices("us-east-1", None))
    assessment = assess_request(request, lake.deps, settings)
    line = summary_line(assessment.objects, "assessment.html", planned=True)
    return assessment.model_dump(mode="json"), line


def _fail_on_big_orders(original: Any) -> Any:
    def create(glue: Any, database: str, table_input: dict[str, Any]) -> None:
        if table_input["Name"] == "big_orders":
            raise ClientError(
                {"Error": {"Code": "InternalServiceException", "Message": "injected"}}, "CreateTable"
            )
        original(glue, database, table_input)

    return create


def test_views_links_and_other_tables_of_a_renamed_database(
    world: tuple[Lake, LocalDeployment], spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, deployment = world
    _source_estate(lake)
    target_glue = lake.target.client("glue")
    catalog.ensure_database(target_glue, "v2_sales")
    foreign = athena_view("legacy_view", "SELECT 1 AS one", "v2_sales", [("one", "bigint")])
    target_glue.create_table(DatabaseName="v2_sales", TableInput=foreign)  # not icelake's

    # When the estate is assessed: every entry is named with its kind, nothing is written
    assessment, stderr = _assess(lake)
    kinds = {
        "athena_view": 1,
        "iceberg_table": 2,
        "multi_dialect_view": 1,
        "parquet_table": 1,
        "resource_link": 1,
        "spark_view": 1,
    }
    assert assessment["objects_by_kind"] == kinds
    planned = {o["name"]: (o["kind"], o["action"], o["target"]) for o in assessment["objects"]}
    assert planned["sales.raw_events"] == ("parquet_table", "not_moved", "")
    assert planned["sales.big_orders"] == ("spark_view", "carried", "v2_sales.big_orders")
    assert "3 views to carry, 1 resource link to carry, 1 Parquet table not moved" in stderr
    page = render_assessment(assessment).replace("<wbr>", "")  # the cells' break hints
    assert 'id="objects"' in page and "sales.raw_events" in page and "Parquet table" in page

    # When carrying the views fails part way (the run's tables are migrated)
    monkeypatch.setattr(carry, "create_entry", _fail_on_big_orders(carry.create_entry))
    failed = run_workflow(deployment, _request(lake, "views-failed", tags=True))
    monkeypatch.undo()

    # Then what the run created is removed, and only that: the foreign view stays as it was
    assert failed["status"] == "partial"
    statuses = {n: o["status"] for n, o in _objects(failed).items() if n in CARRIED}
    assert statuses == {
        "orders_named": "rolled_back",
        "order_totals": "rolled_back",
        "orders_link": "rolled_back",
        "big_orders": "not_created",
    }
    left = _views(lake)
    assert set(left) == {"orders", "customers", "legacy_view"}
    assert left["legacy_view"]["ViewOriginalText"] == foreign["ViewOriginalText"]

    # When the migration runs again
    report = run_workflow(deployment, _request(lake, "views-1", tags=True))

    # Then every view and the link exist under v2_sales, naming v2_sales tables only
    assert report["status"] == "succeeded", report["objects"]
    assert report["objects_by_kind"] == kinds
    objects = _objects(report)
    assert {n: o["status"] for n, o in objects.items() if n in CARRIED} == dict.fromkeys(CARRIED, "created")
    assert objects["raw_events"]["status"] == "skipped" and "Iceberg" in objects["raw_events"]["message"]
    target = _views(lake)
    assert "raw_events" not in target  # named, not moved
    source = {t["Name"]: t for t in catalog.list_tables(lake.source.client("glue"), "sales")}
    _assert_renamed(source, target)
    html = lake.deps.artifacts.io.read(report["report_html_uri"]).decode().replace("<wbr>", "")
    assert "Views and other objects" in html and "v2_sales.big_orders" in html
    link = target["orders_link"]["TargetTable"]
    assert (link["CatalogId"], link["DatabaseName"], link["Name"]) == (TARGET_ACCOUNT, "v2_sales", "orders")
    grants = lake.target.client("lakeformation").list_permissions(
        Resource={"Table": {"DatabaseName": "v2_sales", "Name": "orders_named"}}
    )["PrincipalResourcePermissions"]
    assert [(g["Principal"]["DataLakePrincipalIdentifier"], g["Permissions"]) for g in grants] == [
        (TARGET_ANALYST, ["SELECT"])
    ]
    tags = lake.target.client("lakeformation").get_resource_lf_tags(
        Resource={"Table": {"DatabaseName": "v2_sales", "Name": "orders_named"}}, ShowAssignedLFTags=True
    )["LFTagsOnTable"]
    assert [(t["TagKey"], t["TagValues"]) for t in tags] == [("domain", ["sales"])]

    # And Spark reads the same rows through the target views as through the source views
    source_rows = view_rows(spark, lake.source, "sales", VIEWS, tmp_path)
    assert all(source_rows.values()) and len(source_rows["big_orders"]) < len(source_rows["orders_named"])
    assert view_rows(spark, lake.target, "v2_sales", VIEWS, tmp_path) == source_rows

    # When it runs once more, nothing changes
    versions = {n: t["VersionId"] for n, t in _views(lake).items()}
    again = run_workflow(deployment, _request(lake, "views-2", tags=True))
    assert again["status"] == "succeeded", (again["tables"], again.get("objects"))
    assert {n: o["status"] for n, o in _objects(again).items() if n in CARRIED} == dict.fromkeys(
        CARRIED, "unchanged"
    )
    assert {n: t["VersionId"] for n, t in _views(lake).items()} == versions


def _assert_renamed(source: dict[str, Any], target: dict[str, Any]) -> None:
    """The target views read v2_sales only; Athena's envelope has the same columns, catalog and
    runAsInvoker, its schema the target's; literals and the owner mark as they should be."""
    was, now = (envelope.decode(t["orders_named"]["ViewOriginalText"]) for t in (source, target))
    assert now["schema"] == "v2_sales"
    assert {k: v for k, v in now.items() if k not in ("originalSql", "schema")} == {
        k: v for k, v in was.items() if k not in ("originalSql", "schema")
    }
    assert "'sales.orders' AS origin" in now["originalSql"]
    assert {r.database for r in references(now["originalSql"], "trino")} == {"v2_sales"}
    assert {r.database for r in references(target["big_orders"]["ViewOriginalText"], "spark")} == {"v2_sales"}
    definition = target["order_totals"]["ViewDefinition"]
    assert definition["Definer"] == TARGET_DEFINER
    assert definition["SubObjects"] == [f"arn:aws:glue:us-east-1:{TARGET_ACCOUNT}:table/v2_sales/orders"]
    for rep in definition["Representations"]:
        dialect = "spark" if rep["Dialect"] == "SPARK" else "trino"
        assert {r.database for r in references(rep["ViewOriginalText"], dialect)} == {"v2_sales"}
    for name in CARRIED:
        assert target[name]["Parameters"][catalog.OWNER_PARAMETER] == f"{SOURCE_ACCOUNT}:sales.{name}"


def test_a_view_reading_outside_the_migration_and_a_foreign_target_view(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    lake, deployment = world
    publish_sample_tables(lake)
    glue = lake.source.client("glue")
    catalog.ensure_database(glue, "other")
    glue.create_table(
        DatabaseName="other", TableInput={"Name": "dim", "Parameters": {"classification": "csv"}}
    )
    glue.create_table(
        DatabaseName="sales",
        TableInput=spark_view("with_outside", "SELECT * FROM sales.orders JOIN other.dim"),
    )
    glue.create_table(DatabaseName="sales", TableInput=spark_view("ids", "SELECT id FROM sales.orders"))
    recent = "SELECT c.name FROM sales.customers c WHERE c.id < 5"
    glue.create_table(DatabaseName="sales", TableInput=spark_view("recent", recent))
    target_glue = lake.target.client("glue")
    catalog.ensure_database(target_glue, "v2_sales")
    theirs = spark_view("ids", "SELECT 42 AS id")
    target_glue.create_table(DatabaseName="v2_sales", TableInput=theirs)
    before = target_glue.get_table(DatabaseName="v2_sales", Name="ids")["Table"]

    # When it is assessed, the view reading other.dim is named before anything runs
    assessment, _stderr = _assess(lake)
    warned = {o["name"]: o for o in assessment["objects"]}["sales.with_outside"]
    assert warned["status"] == "not_created" and "other.dim" in warned["message"]

    # When it is migrated
    request = _request(lake, "outside")
    request["target"]["renames"] = {"sales.customers": "crm.clients", "sales.recent": "v2_sales.recent_names"}
    report = run_workflow(deployment, request)

    # Then that view is named with what it misses, not created, and the run is partial
    assert report["status"] == "partial"
    assert {t["status"] for t in report["tables"]} == {"migrated"}
    objects = _objects(report)
    assert objects["with_outside"]["status"] == "not_created"
    assert "other.dim" in objects["with_outside"]["message"]
    assert "with_outside" not in _views(lake)
    # And a renamed view reads its renamed table, under its own new name
    assert objects["recent"]["status"] == "created" and objects["recent"]["target"] == "v2_sales.recent_names"
    made = target_glue.get_table(DatabaseName="v2_sales", Name="recent_names")["Table"]
    assert made["ViewOriginalText"] == "SELECT c.name FROM crm.clients c WHERE c.id < 5"
    # And the target view icelake did not create is left as it is, with the tables' rule and words
    assert objects["ids"]["status"] == "not_created"
    assert "icelake did not create it" in objects["ids"]["message"]
    after = target_glue.get_table(DatabaseName="v2_sales", Name="ids")["Table"]
    assert (after["VersionId"], after["ViewOriginalText"]) == (
        before["VersionId"],
        theirs["ViewOriginalText"],
    )
