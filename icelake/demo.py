"""`make demo`: the migration workflow end to end on embedded AWS, with no AWS account.

moto plays a source account (111111111111) and a target account (222222222222). Spark's Iceberg
writer creates several tables with deletes, updates, evolution and several snapshots; they are
published to the source bucket and Glue catalog. The real state machine (statemachines/
migrate_tables.asl.json) then migrates them with the repo's Lambda handlers and Glue job, a new
source commit follows, and an incremental run brings only what is new. Exit code 1 if anything failed.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from icelake.local.deploy import deploy_migration_workflow
from icelake.local.embedded import start_embedded_aws
from icelake.local.lake import Lake, build_lake
from icelake.local.spark import local_spark
from icelake.workflow.client import RunStatus, follow, start_migration

console = Console()
REPO = Path(__file__).resolve().parents[1]
DEMO_DIR = Path(os.environ.get("ICELAKE_DEMO_DIR", REPO / ".demo")).resolve()
MOR = (
    "'write.delete.mode'='merge-on-read','write.update.mode'='merge-on-read',"
    "'write.merge.mode'='merge-on-read'"
)


def write_source_tables(spark: Any) -> dict[str, str]:
    """Three tables by Spark's Iceberg writer; returns name -> current local metadata file."""
    sql = spark.sql
    sql(
        "CREATE TABLE demo.sales.orders (id bigint, customer string, amount decimal(10,2), region string) "
        f"USING iceberg PARTITIONED BY (region) TBLPROPERTIES ('format-version'='2',{MOR})"
    )
    sql(
        "INSERT INTO demo.sales.orders SELECT id, concat('c', id % 17), CAST(id * 1.25 AS decimal(10,2)), "
        "element_at(array('eu/west', 'us east', 'ap'), CAST(id % 3 + 1 AS INT)) FROM range(0, 300)"
    )
    sql("DELETE FROM demo.sales.orders WHERE id % 10 = 0")
    sql("UPDATE demo.sales.orders SET amount = amount * 2 WHERE customer = 'c3'")
    sql("ALTER TABLE demo.sales.orders CREATE TAG `month-end`")
    sql("ALTER TABLE demo.sales.orders ADD COLUMN channel string")
    sql("INSERT INTO demo.sales.orders SELECT id, 'new', 1.00, 'ap', 'web' FROM range(300, 350)")

    sql(
        "CREATE TABLE demo.sales.customers (id bigint, name string) USING iceberg "
        "TBLPROPERTIES ('format-version'='2')"
    )
    for start in (0, 100, 200):
        rows = f"range({start}, {start + 100})"
        sql(f"INSERT INTO demo.sales.customers SELECT id, concat('name-', id) FROM {rows}")
    sql("ALTER TABLE demo.sales.customers RENAME COLUMN name TO full_name")

    sql(
        "CREATE TABLE demo.sales.events (id bigint, kind string, ts timestamp) USING iceberg "
        f"PARTITIONED BY (days(ts)) TBLPROPERTIES ('format-version'='3',{MOR})"
    )
    sql(
        "INSERT INTO demo.sales.events SELECT id, "
        "element_at(array('view','click','buy'), CAST(id % 3 + 1 AS INT)), "
        "timestamp'2026-11-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 5 AS INT)) "
        "FROM range(0, 500)"
    )
    sql("DELETE FROM demo.sales.events WHERE kind = 'view' AND id % 4 = 0")
    return {name: current_metadata(spark, name) for name in ("orders", "customers", "events")}


def current_metadata(spark: Any, name: str) -> str:
    row = spark.sql(
        f"SELECT file FROM demo.sales.{name}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
    ).collect()
    return str(row[0][0])


def run(lake: Lake, run_id: str, **overrides: Any) -> RunStatus:
    console.print(f"\n[bold]Run {run_id}[/bold] ({overrides.get('mode', 'full')})")
    started = time.monotonic()
    execution_arn, rid = start_migration(lake.request(run_id, **overrides))
    seen: dict[str, str] = {}

    def show(status: RunStatus) -> None:
        for table, state in sorted(status.tables.items()):
            if seen.get(table) != state:
                console.print(f"  {table:<18} {state}")
                seen[table] = state

    status = follow(execution_arn, rid, show, poll_seconds=0.5, timeout_seconds=900)
    report = status.report or {}  # every table's outcome, from the report the run wrote to S3
    outcome = report.get("status", status.execution_status)
    table = Table(title=f"{run_id}: {outcome} in {time.monotonic() - started:.1f} s")
    for col in ("table", "outcome", "copied", "bytes", "rewritten", "skipped", "snapshots"):
        table.add_column(col)
    for t in report.get("tables", []):
        table.add_row(
            t["table"],
            t["status"],
            str(t["files_copied"]),
            f"{t['bytes_copied']:,}",
            str(t["files_rewritten"]),
            str(t["files_skipped"]),
            str(t["snapshots_validated"] or "-"),
        )
    console.print(table)
    if status.error:
        console.print(f"[red]{status.error}[/red]")
    return status


def main() -> int:
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    console.rule("[bold]icelake demo: Iceberg tables from account 111111111111 to 222222222222")
    spark = local_spark({"demo": str(DEMO_DIR / "spark-warehouse")}, app_name="icelake-demo")
    with start_embedded_aws(REPO) as aws:
        console.print(
            f"embedded AWS (moto) on {aws.endpoint}: deploying the workflow from {REPO.name}/statemachines"
        )
        deploy_migration_workflow()
        lake = build_lake(DEMO_DIR / "local", orchestrator_resources=False)
        console.print(
            "Spark (Iceberg 1.10 Java writer) creates 3 tables: deletes, updates, a tag, evolution, v2 and v3"
        )
        for name, meta in write_source_tables(spark).items():
            lake.publish("sales", name, meta)
        full = run(lake, "demo-full")

        console.print("\nA new commit lands on sales.orders in the source account")
        spark.sql(
            "INSERT INTO demo.sales.orders SELECT id, 'late', 2.00, 'eu/west', 'store' FROM range(350, 360)"
        )
        lake.publish("sales", "orders", current_metadata(spark, "orders"))
        incremental = run(lake, "demo-incremental", mode="incremental")
    spark.stop()

    ok = all(
        s.execution_status == "SUCCEEDED" and (s.output or {}).get("status") == "succeeded"
        for s in (full, incremental)
    )
    console.rule(
        "[green]demo passed: every table reads like its source in every snapshot"
        if ok
        else "[red]demo FAILED"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
