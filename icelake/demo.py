"""`make demo`: write a sample table with Spark, migrate it with `icelake migrate path`, validate it.

Until the Step Functions workflow runs locally, this is the end-to-end tour: a table with
merge-on-read deletes, an update, schema and partition evolution and a tag is migrated to a
second location by the real command, then read snapshot by snapshot by pyiceberg and by Spark.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from icelake.local.spark import local_spark
from icelake.migrate.validate import validate_tables

console = Console()
DEMO_DIR = Path(os.environ.get("ICELAKE_DEMO_DIR", ".demo")).resolve()


def write_sample_table(spark: object) -> str:
    sql = spark.sql  # type: ignore[attr-defined]
    sql(
        "CREATE TABLE demo.sales.orders (id bigint, customer string, amount decimal(10,2), region string) "
        "USING iceberg PARTITIONED BY (region) TBLPROPERTIES ('format-version'='2',"
        "'write.delete.mode'='merge-on-read','write.update.mode'='merge-on-read')"
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
    row = sql(
        "SELECT file FROM demo.sales.orders.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
    ).collect()
    return str(row[0][0])


def main() -> int:
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    console.rule("[bold]icelake demo")
    console.print(
        "1. Spark (Iceberg 1.10 Java writer) writes a sample table with deletes, an update, a tag, evolution"
    )
    spark = local_spark({"demo": str(DEMO_DIR / "source-warehouse")}, app_name="icelake-demo")
    source_meta = write_sample_table(spark)
    target = DEMO_DIR / "target-warehouse" / "sales" / "orders"

    cmd = [
        os.path.join(os.path.dirname(sys.executable), "icelake"),
        "migrate",
        "path",
        "--metadata",
        source_meta,
        "--target-location",
        str(target),
        "--json",
    ]
    console.print(f"2. Migrating with: [cyan]icelake {' '.join(cmd[1:])}[/cyan]")
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        console.print(f"[red]migration failed:[/red] {run.stderr.strip()}")
        return 1
    result = json.loads(run.stdout)
    again = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)

    console.print(
        "3. Validating every snapshot with pyiceberg and Spark (engines that did not write the target)"
    )
    report = validate_tables(source_meta, result["target_metadata_location"])
    spark_ok = True
    table = Table(title="Snapshot by snapshot", show_lines=False)
    for col in ("snapshot", "seq", "source rows", "target rows", "pyiceberg", "spark"):
        table.add_column(col)
    for check in report.snapshots:

        def spark_rows(meta: str, sid: int = check.snapshot_id) -> list[tuple[object, ...]]:
            df = spark.read.format("iceberg").option("snapshot-id", sid).load(meta)
            return sorted((tuple(r) for r in df.collect()), key=repr)

        same = spark_rows(source_meta) == spark_rows(result["target_metadata_location"])
        spark_ok &= same
        table.add_row(
            str(check.snapshot_id),
            str(check.sequence_number),
            str(check.source_rows),
            str(check.target_rows),
            "[green]same[/green]" if check.rows_equal else "[red]DIFFERENT[/red]",
            "[green]same[/green]" if same else "[red]DIFFERENT[/red]",
        )
    console.print(table)
    summary = Table(title="Migration", show_header=False)
    summary.add_row("source metadata", source_meta)
    summary.add_row("target metadata", result["target_metadata_location"])
    summary.add_row("files copied / rewritten", f"{result['files_copied']} / {result['files_rewritten']}")
    summary.add_row("bytes copied", str(result["bytes_copied"]))
    summary.add_row("second run copied / rewritten", f"{again['files_copied']} / {again['files_rewritten']}")
    summary.add_row("time", f"{result['elapsed_seconds']:.2f} s")
    ok = report.ok and spark_ok and (again["files_copied"], again["files_rewritten"]) == (0, 0)
    summary.add_row("validation", "[green]PASSED[/green]" if ok else f"[red]FAILED[/red] {report.problems}")
    console.print(summary)
    spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
