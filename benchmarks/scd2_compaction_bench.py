"""Benchmark: a full read of an SCD2 table after 30 merge-on-read batches, without and with the
maintenance step's compaction (rewrite_data_files with a delete-file threshold, then
rewrite_position_delete_files).

    .venv/bin/python -m benchmarks.scd2_compaction_bench [--rows 100000 --batches 30]

Builds the wide dimension of scd2_bench (about 30 columns), merges `--batches` batches that each
change 1% of the keys (icelake's merge_batch, merge-on-read: each adds data files and position
deletes), times a full read (every column of every row, deletes applied; best of 3), runs
icelake.ingest.scd2.compact, checks the table holds the same rows, and times the read again.
The last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.scd2_bench import CATALOG, DATA_COLUMNS, T0, batch_frame


def files(spark: Any, table: str) -> dict[str, int]:
    rows = spark.sql(f"SELECT content, count(1) AS n FROM {table}.files GROUP BY content").collect()
    found = {int(r["content"]): int(r["n"]) for r in rows}
    return {"data_files": found.get(0, 0), "delete_files": found.get(1, 0) + found.get(2, 0)}


def full_read(spark: Any, table: str, repeats: int = 3) -> tuple[float, int]:
    """Best of `repeats`: read every column of every row (deletes applied) and hash it."""
    best, digest = float("inf"), 0
    cols = ", ".join([*DATA_COLUMNS, "_is_current", "_valid_from", "_valid_to"])
    for _ in range(repeats):
        started = time.perf_counter()
        digest = int(spark.sql(f"SELECT sum(hash({cols})) AS h FROM {table}").collect()[0]["h"])
        best = min(best, time.perf_counter() - started)
    return best, digest


def run(rows: int, batches: int, workdir: Path) -> dict[str, Any]:
    from icelake.ingest.models import MaintenanceConfig, Scd2Spec
    from icelake.ingest.scd2 import BatchInfo, compact, merge_batch
    from icelake.local.spark import local_spark

    spark = local_spark({CATALOG: str(workdir / "warehouse")}, app_name="scd2-compaction", driver_memory="3g")
    spec = Scd2Spec(table=f"{CATALOG}.dim.customers", keys=("id",), order_by="updated_at")
    merge_batch(
        spark, spec, batch_frame(spark, rows, 0, None), BatchInfo(batch_id="b0", as_of=T0, full_load=False)
    )
    started = time.perf_counter()
    for run_no in range(1, batches + 1):
        batch = batch_frame(spark, rows, run_no, 100)  # 1% of the keys change (their tier) each batch
        merge_batch(
            spark,
            spec,
            batch,
            BatchInfo(batch_id=f"b{run_no}", as_of=T0 + timedelta(hours=run_no), full_load=False),
        )
    merges_s = time.perf_counter() - started
    before_files = files(spark, spec.table)
    before_s, before_hash = full_read(spark, spec.table)
    started = time.perf_counter()
    report = compact(spark, spec.table, MaintenanceConfig())
    compact_s = time.perf_counter() - started
    after_files = files(spark, spec.table)
    after_s, after_hash = full_read(spark, spec.table)
    if before_hash != after_hash:
        raise SystemExit("compaction changed the table's rows")
    total = spark.sql(f"SELECT count(1) AS n FROM {spec.table}").collect()[0]["n"]
    return {
        "rows": rows,
        "batches": batches,
        "table_rows": int(total),
        "merges_s": round(merges_s, 1),
        "read_s_without_compaction": round(before_s, 2),
        "read_s_with_compaction": round(after_s, 2),
        "compaction_s": round(compact_s, 1),
        "files_before": before_files,
        "files_after": after_files,
        "compaction": report,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=30)
    args = ap.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="icelake-scd2-compaction-"))
    try:
        res = run(args.rows, args.batches, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
