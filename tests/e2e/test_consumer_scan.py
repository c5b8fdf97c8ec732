"""`icelake assess --request` finds what reads the selected tables (issue 58), on the embedded AWS:
with the database renamed to v2_sales, a Glue job whose script names sales.orders on a known line
and whose argument holds the table's S3 path, an Athena named query and a prepared statement, a
state machine, a Lambda with the location in an environment variable, a DAG file under a code
prefix, and a job whose script the source role may not read. One assessment: rewire.json lists
each with its place and its target reference, the unreadable script as unread with the permission
it lacks; nothing in the source changed; assessment.html shows "Rewire at cutover" and filters it
in a real browser. A second, with --no-consumers, writes no rewire.json."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright
from typer.testing import CliRunner

from icelake.cli import app
from icelake.local.embedded import moto_patches
from icelake.local.moto_server import embedded_aws
from tests.browser import ARTIFACTS, chromium
from tests.lake import SOURCE_ACCOUNT, SOURCE_BUCKET, Lake, add_source_table, bucket_state, build_lake

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ORDERS = f"s3://{SOURCE_BUCKET}/lake/sales/orders"
TARGET_ORDERS = "s3://target-lake/warehouse/v2_sales/orders"
SCRIPT = """import sys
from awsglue.utils import getResolvedOptions
orders = spark.table("sales.orders")  # line 3
others = spark.table("sales.orders_archive")
"""
DAG = f"""from airflow import DAG

with DAG("orders") as dag:
    load = S3ToRedshiftOperator(s3_key="{ORDERS}/data/", table="orders")
    check = AthenaOperator(query="SELECT count(*) FROM `sales`.`orders`")
"""


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[Lake]:
    """The sample lake on an embedded AWS with icelake's additions (Athena's bulk reads)."""
    with moto_patches(REPO), embedded_aws():
        yield build_lake(tmp_path / "local")


def _consumers(lake: Lake) -> None:
    """The source account's consumers: each kind the scan reads, and one it may not."""
    s3, glue, athena = (lake.source.client(s) for s in ("s3", "glue", "athena"))
    s3.put_object(Bucket=SOURCE_BUCKET, Key="scripts/orders_etl.py", Body=SCRIPT.encode())
    s3.put_object(Bucket=SOURCE_BUCKET, Key="private/secret_etl.py", Body=b"spark.table('sales.orders')")
    s3.put_object(Bucket=SOURCE_BUCKET, Key="dags/orders_dag.py", Body=DAG.encode())
    s3.put_object(Bucket=SOURCE_BUCKET, Key="dags/plugins.zip", Body=b"PK\x03\x04\x00\x00binary")
    s3.put_bucket_policy(
        Bucket=SOURCE_BUCKET,
        Policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Deny",
                        "Principal": "*",
                        "Action": "s3:GetObject",
                        "Resource": f"arn:aws:s3:::{SOURCE_BUCKET}/private/*",
                    }
                ],
            }
        ),
    )
    role = f"arn:aws:iam::{SOURCE_ACCOUNT}:role/etl"
    lake.source.client("iam").create_role(RoleName="etl", AssumeRolePolicyDocument="{}")
    glue.create_job(
        Name="orders-etl",
        Role=role,
        Command={"Name": "glueetl", "ScriptLocation": f"s3://{SOURCE_BUCKET}/scripts/orders_etl.py"},
        DefaultArguments={"--table": "sales.orders", "--input": ORDERS, "--mode": "append"},
    )
    glue.create_job(
        Name="secret-etl",
        Role=role,
        Command={"Name": "glueetl", "ScriptLocation": f"s3://{SOURCE_BUCKET}/private/secret_etl.py"},
    )
    glue.create_job(Name="other-etl", Role=role, Command={"Name": "glueetl", "ScriptLocation": "s3://x/y.py"})
    athena.create_named_query(
        Name="daily-orders",
        Database="sales",
        QueryString="SELECT day, count(*)\nFROM SALES.ORDERS\nGROUP BY 1",
    )
    athena.create_work_group(Name="finance", Configuration={})
    athena.create_prepared_statement(
        StatementName="order_by_id",
        WorkGroup="finance",
        QueryStatement='SELECT * FROM "sales"."orders" WHERE id = ?',
    )
    definition = {
        "StartAt": "Count",
        "States": {
            "Count": {
                "Type": "Task",
                "Resource": "arn:aws:states:::athena:startQueryExecution.sync",
                "Parameters": {"QueryString": "SELECT count(*) FROM sales.orders"},
                "End": True,
            }
        },
    }
    lake.source.client("stepfunctions").create_state_machine(
        name="nightly-orders", definition=json.dumps(definition), roleArn=role
    )
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("handler.py", "def handler(event, context):\n    return 1\n")
    lake.source.client("lambda").create_function(
        FunctionName="orders-api",
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": code.getvalue()},
        Environment={"Variables": {"ORDERS_PATH": f"{ORDERS}/", "LOG_LEVEL": "INFO"}},
    )


def _by_place(rewire: dict[str, Any]) -> dict[tuple[str, str, str], tuple[str, str | None]]:
    """(kind, consumer, where) -> (as written, becomes)."""
    return {
        (r["consumer"]["kind"], r["consumer"]["name"], r["where"]): (r["written"], r["becomes"])
        for r in rewire["references"]
    }


def test_assess_lists_every_consumer_to_rewire_and_what_it_could_not_read(lake: Lake, tmp_path: Path) -> None:
    # Given two selected tables, their database renamed to v2_sales, and consumers of sales.orders
    add_source_table(lake, "orders", [[1, 2], [3]])
    add_source_table(lake, "customers", [[1]])
    _consumers(lake)
    body = lake.request(
        "unused", target={**lake.request("x")["target"], "names": {"database": "v2_{database}"}}
    )
    body.pop("run_id")
    body["consumers"] = {"code_prefixes": [f"s3://{SOURCE_BUCKET}/dags/"]}
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    source_before = bucket_state(lake.source, SOURCE_BUCKET)

    # When the estate is assessed (the scan is on by default)
    out = tmp_path / "assessment"
    result = CliRunner().invoke(app, ["assess", "--request", str(request), "--out", str(out)])

    # Then rewire.json lists each consumer at its place with its target reference
    assert result.exit_code == 0, result.output
    rewire = json.loads((out / "rewire.json").read_text())
    places = _by_place(rewire)
    orders_v2 = "v2_sales.orders"
    assert places[("glue_job", "orders-etl", "argument --table")] == ("sales.orders", orders_v2)
    assert places[("glue_job", "orders-etl", "argument --input")] == (ORDERS, TARGET_ORDERS)
    assert places[("glue_job", "orders-etl", "script line 3")] == ('"sales.orders"'[1:-1], orders_v2)
    assert places[("athena_named_query", "daily-orders", "query line 2")] == ("SALES.ORDERS", orders_v2)
    assert places[("athena_prepared_statement", "order_by_id", "statement line 1")] == (
        '"sales"."orders"',
        '"v2_sales"."orders"',
    )
    assert places[("state_machine", "nightly-orders", "state Count (Parameters.QueryString)")] == (
        "sales.orders",
        orders_v2,
    )
    assert places[("lambda_function", "orders-api", "variable ORDERS_PATH")] == (
        f"{ORDERS}/",
        f"{TARGET_ORDERS}/",
    )
    dag = f"s3://{SOURCE_BUCKET}/dags/orders_dag.py"
    assert places[("code_file", dag, "file line 4")] == (f"{ORDERS}/data/", f"{TARGET_ORDERS}/data/")
    assert places[("code_file", dag, "file line 5")] == ("`sales`.`orders`", "`v2_sales`.`orders`")
    # ... and nothing else: no near miss (sales.orders_archive, --mode), no consumer of other tables
    assert len(places) == len(rewire["references"]) == 9
    named = {r["consumer"]["name"] for r in rewire["references"]}
    assert "other-etl" not in named and all(r["tables"] == ["sales.orders"] for r in rewire["references"])
    job = next(r["consumer"] for r in rewire["references"] if r["consumer"]["name"] == "orders-etl")
    assert job["arn"] == f"arn:aws:glue:us-east-1:{SOURCE_ACCOUNT}:job/orders-etl"
    # ... what it could not read is listed with why: the denied script (and the permission it
    # lacks), the script of a bucket that does not exist, the binary file under the code prefix
    _unread_and_counts_listed(rewire)
    assert rewire["tables"] == 2 and rewire["source_account"] == SOURCE_ACCOUNT
    assert "9 reference(s) in 6 consumer(s) to rewire at cutover, 3 consumer(s) not read" in result.stderr
    # ... the source is as it was: icelake never edits a consumer
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before

    # ... and assessment.html shows the section, which its filter narrows to one kind
    seen = _rewire_in_browser(out / "assessment.html")
    assert seen["errors"] == [] and seen["requests"] == [(out / "assessment.html").resolve().as_uri()]
    assert "Rewire at cutover" in seen["text"] and "Not read (3)" in seen["text"]
    assert len(seen["rows"]) == 9 and seen["jobs"] == ["glue_job"] * 3
    assert "s3:GetObject on arn:aws:s3:::source-lake/private/secret_etl.py" in seen["text"]

    # ... and --no-consumers skips the scan: no rewire.json, and the page says it was not scanned
    skipped = tmp_path / "skipped"
    again = CliRunner().invoke(
        app, ["assess", "--request", str(request), "--out", str(skipped), "--no-consumers"]
    )
    assert again.exit_code == 0, again.output
    assert not (skipped / "rewire.json").exists() and "to rewire at cutover" not in again.stderr
    assert "Consumers not scanned" in (skipped / "assessment.html").read_text()


def _unread_and_counts_listed(rewire: dict[str, Any]) -> None:
    """The denied script (with the permission it lacks), the script of a bucket that does not
    exist and the binary file under the code prefix are unread; the counts by kind agree."""
    unread = {(u["consumer"]["name"], u["error"]): u for u in rewire["unread"]}
    denied = unread[("secret-etl", "AccessDenied")]
    assert denied["permission"] == f"s3:GetObject on arn:aws:s3:::{SOURCE_BUCKET}/private/secret_etl.py"
    assert ("other-etl", "NoSuchBucket") in unread
    assert (f"s3://{SOURCE_BUCKET}/dags/plugins.zip", "NotText") in unread
    assert len(unread) == 3
    counts = rewire["by_kind"]
    assert counts["glue_job"] == {"read": 3, "referencing": 1, "references": 3, "unread": 2}
    assert counts["code_file"] == {"read": 1, "referencing": 1, "references": 2, "unread": 1}


def _rewire_in_browser(page_file: Path) -> dict[str, Any]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seen: dict[str, Any] = {"errors": [], "requests": []}
    shown = "#rewire tbody tr:not([hidden])"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: seen["errors"].append(str(e)))
            page.on("request", lambda r: seen["requests"].append(r.url))
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            seen["text"] = page.inner_text("body")
            seen["rows"] = page.locator(f"{shown} td:first-child").all_inner_texts()
            page.locator("button[data-for='rewire'][data-filter='glue_job']").click()
            seen["jobs"] = page.locator(f"{shown} td:first-child").all_inner_texts()
            page.locator("#rewire-at-cutover").scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "assessment-rewire.png"))
        finally:
            browser.close()
    return seen
