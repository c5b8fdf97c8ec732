"""Benchmark: icelake's SCD2 MERGE against a naive full rewrite, on a 1,000,000-row dimension.

    .venv/bin/python -m benchmarks.scd2_bench             # 1,000,000 rows, 1% changed; recorded
    .venv/bin/python -m benchmarks.scd2_bench --quick     # 20,000 rows, nothing recorded

1. Builds the SCD2 table from a base batch of N rows (icelake's `merge_batch`: table from code, one
   commit), then clones it (CREATE TABLE ... AS SELECT) so both contenders start from the same rows.
2. The next batch is the whole dimension again with 1% of the keys changed (half of them flip
   `email` between NULL and a value, half change `tier`).
3. Times icelake's merge (`icelake.ingest.scd2.merge_batch`: NULL-safe change detection, one Iceberg
   MERGE INTO that closes changed versions and inserts new ones, merge-on-read).
4. Times the naive way on the clone: recompute the whole SCD2 table (closed history, unchanged
   current rows, closed versions of changed keys, their new versions) and INSERT OVERWRITE it.
5. Checks both tables hold the same history, and records the figures in benchmarks/results/ and
   benchmarks/SCD2_RESULTS.md. Same SparkSession (local[2]), same run, same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
CATALOG = "bench"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
DDL = "id BIGINT, name STRING, email STRING, tier STRING, updated_at BIGINT"


def batch_frame(spark: Any, rows: int, run: int, changed_every: int | None, generation: int = 0) -> Any:
    """The dimension as served by the API at `run`; keys with id % changed_every == 0 changed.
    `generation` renames every customer (a batch of generation g > 0 changes every key once)."""
    from pyspark.sql import functions as F

    df = spark.range(1, rows + 1)
    base_email = F.when(F.col("id") % 10 == 0, F.lit(None)).otherwise(
        F.format_string("c%d@example.com", "id")
    )
    every = changed_every or rows + 1  # no key changes in the base batch
    changed = F.lit(changed_every is not None) & (F.col("id") % every == 0)
    flip = changed & (F.col("id") % (2 * every) == 0)
    email = F.when(flip & base_email.isNull(), F.format_string("new%d@example.com", "id")).when(
        flip, F.lit(None)
    )
    return df.select(
        F.col("id"),
        F.format_string("customer %d" + (f" g{generation}" if generation else ""), "id").alias("name"),
        F.when(flip, email).otherwise(base_email).alias("email"),
        F.when(changed & ~flip, F.lit(f"tier-{run}")).otherwise(F.lit("basic")).alias("tier"),
        F.when(changed, F.lit(run)).otherwise(F.lit(0)).cast("bigint").alias("updated_at"),
        F.lit(f"bench/run-{run}/page-000001.json").alias("_source_file"),
        F.col("id").alias("__icelake_pos"),
    )


def naive_rewrite(spark: Any, table: str, batch: Any, as_of: datetime, ingested_at: datetime) -> None:
    """Recompute the whole SCD2 table from the old table and the batch; INSERT OVERWRITE it."""
    from icelake.ingest.scd2 import ts_literal

    batch.createOrReplaceTempView("naive_batch")
    t, i = ts_literal(as_of), ts_literal(ingested_at)
    spark.sql(f"""
INSERT OVERWRITE {table}
WITH latest AS (
  SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY id ORDER BY updated_at DESC NULLS LAST,
                 __icelake_pos DESC) AS rn FROM naive_batch) WHERE rn = 1
), cur AS (SELECT * FROM {table} WHERE _is_current),
joined AS (
  SELECT c.*, l.id AS l_id, l.name AS l_name, l.email AS l_email, l.tier AS l_tier,
         l.updated_at AS l_updated_at, l._source_file AS l_file,
         (c.id IS NOT NULL AND l.id IS NOT NULL AND NOT (c.name <=> l.name AND c.email <=> l.email
          AND c.tier <=> l.tier AND c.updated_at <=> l.updated_at)) AS changed
  FROM cur c FULL OUTER JOIN latest l ON c.id = l.id
)
SELECT id, name, email, tier, updated_at, _ingested_at, _source_file, _is_current, _valid_from, _valid_to,
       _is_deleted FROM {table} WHERE NOT _is_current
UNION ALL
SELECT id, name, email, tier, updated_at, _ingested_at, _source_file,
       NOT changed AS _is_current, _valid_from, CASE WHEN changed THEN {t} END AS _valid_to, _is_deleted
FROM joined WHERE id IS NOT NULL
UNION ALL
SELECT l_id, l_name, l_email, l_tier, l_updated_at, {i}, l_file, true, {t}, CAST(NULL AS TIMESTAMP), false
FROM joined WHERE l_id IS NOT NULL AND (id IS NULL OR changed)
""")


def fingerprint(spark: Any, table: str) -> dict[str, Any]:
    row = spark.sql(
        f"SELECT count(1) AS n, count_if(_is_current) AS cur, "
        f"sum(hash(id, name, email, tier, updated_at, _is_current, _valid_from, _valid_to)) AS h "
        f"FROM {table}"
    ).collect()[0]
    return {"rows": int(row["n"]), "current": int(row["cur"]), "hash": int(row["h"])}


def last_commit_writes(spark: Any, table: str) -> dict[str, int]:
    """What the table's newest commit wrote, from its Iceberg snapshot summary."""
    summary = spark.sql(
        f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()[0]["summary"]
    keys = {
        "bytes": "added-files-size",
        "data_files": "added-data-files",
        "delete_files": "added-delete-files",
        "rows": "added-records",
        "position_deletes": "added-position-deletes",
    }
    return {name: int(summary.get(key) or 0) for name, key in keys.items()}


def run(rows: int, change_pct: float, history: int, workdir: Path) -> dict[str, Any]:
    from icelake.ingest.models import Scd2Spec
    from icelake.ingest.scd2 import merge_batch
    from icelake.local.spark import local_spark
    from pyspark import __version__ as spark_version

    spark = local_spark({CATALOG: str(workdir / "warehouse")}, app_name="scd2-bench", driver_memory="3g")
    spec = Scd2Spec(table=f"{CATALOG}.dim.customers", keys=("id",), order_by="updated_at", schema_ddl=DDL)
    naive_table = f"{CATALOG}.dim.customers_naive"
    changed_every = round(100 / change_pct)
    started = time.perf_counter()
    merge_batch(
        spark, spec, batch_frame(spark, rows, 0, None), batch_id="bench/base", as_of=T0, full_load=False
    )
    for generation in range(1, history + 1):  # every key gets a new version per history batch
        merge_batch(
            spark,
            spec,
            batch_frame(spark, rows, generation, None, generation),
            batch_id=f"bench/history-{generation}",
            as_of=T0 + timedelta(days=generation),
            full_load=False,
        )
    spark.sql(f"CREATE TABLE {naive_table} USING iceberg AS SELECT * FROM {spec.table}")
    setup_s = time.perf_counter() - started

    run_no = history + 1
    batch = batch_frame(spark, rows, run_no, changed_every, history).cache()
    batch.count()  # the batch is read before either contender's clock starts
    as_of, ingested_at = T0 + timedelta(days=run_no), datetime.now(UTC)
    started = time.perf_counter()
    result = merge_batch(
        spark,
        spec,
        batch,
        batch_id=f"bench/run-{run_no}",
        as_of=as_of,
        full_load=False,
        ingested_at=ingested_at,
    )
    merge_s = time.perf_counter() - started
    started = time.perf_counter()
    naive_rewrite(spark, naive_table, batch, as_of, ingested_at)
    naive_s = time.perf_counter() - started

    merged, naive = fingerprint(spark, spec.table), fingerprint(spark, naive_table)
    if merged != naive:
        raise SystemExit(f"the two tables differ: merge {merged}, naive {naive}")
    tables = (("merge", spec.table), ("naive", naive_table))
    files = {name: spark.sql(f"SELECT count(1) AS n FROM {t}.files").collect()[0]["n"] for name, t in tables}
    written = {name: last_commit_writes(spark, t) for name, t in tables}
    return {
        "benchmark": "scd2_merge_vs_full_rewrite",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "rows": rows,
        "changed_pct": change_pct,
        "history_batches": history,
        "changed_keys": result.closed,
        "inserted_versions": result.inserted,
        "merge_seconds": round(merge_s, 2),
        "naive_rewrite_seconds": round(naive_s, 2),
        "speedup": round(naive_s / merge_s, 2),
        "setup_seconds": round(setup_s, 2),
        "table_after": merged,
        "live_files_after": files,
        "written_by_the_measured_commit": written,
        "environment": {
            "spark": spark_version,
            "master": "local[2]",
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "machine": platform.machine(),
        },
    }


HEADER = """# SCD2 merge benchmark

`benchmarks/scd2_bench.py`: icelake's SCD2 merge (`merge_batch`: NULL-safe change detection and one
Iceberg MERGE INTO, merge-on-read) against a naive full rewrite (recompute the whole SCD2 table and
INSERT OVERWRITE), in the same run on the same local[2] SparkSession, from identical tables.
The incoming batch is the whole dimension with the given share of keys changed; both results are
checked to hold the same history. Times exclude building the batch. JSON files in `results/`
(`scd2_<date>.json`) hold every figure. The machine is shared (2 cores), so figures are indicative.

| date | rows | changed | merge (s) | naive rewrite (s) | speedup | rows after | live files merge / naive \
| bytes written merge / naive |
|---|---:|---:|---:|---:|---:|---:|---|---|
"""


def history_note(res: dict[str, Any]) -> str:
    history = res.get("history_batches", 0)
    return f" + {history * res['rows']:,} history" if history else ""


def mib(res: dict[str, Any], contender: str) -> str:
    written = res.get("written_by_the_measured_commit", {}).get(contender)
    return "n/a" if written is None else f"{written['bytes'] / 2**20:.2f} MiB"


def record(res: dict[str, Any]) -> Path:
    results = BENCH_DIR / "results"
    results.mkdir(parents=True, exist_ok=True)
    day = res["date"][:10]
    out, n = results / f"scd2_{day}.json", 2
    while out.exists():
        out, n = results / f"scd2_{day}_{n}.json", n + 1
    out.write_text(json.dumps(res, indent=2) + "\n")
    md = BENCH_DIR / "SCD2_RESULTS.md"
    if not md.exists():
        md.write_text(HEADER)
    row = (
        f"| {day} | {res['rows']:,}{history_note(res)} | "
        f"{res['changed_keys']:,} ({res['changed_pct']}%) | "
        f"{res['merge_seconds']} | {res['naive_rewrite_seconds']} | {res['speedup']}x | "
        f"{res['table_after']['rows']:,} | {res['live_files_after']['merge']} / "
        f"{res['live_files_after']['naive']} | {mib(res, 'merge')} / {mib(res, 'naive')} |"
    )
    lines = md.read_text().splitlines()
    last_row = max(i for i, line in enumerate(lines) if line.startswith("|"))  # the results table
    lines.insert(last_row + 1, row)
    md.write_text("\n".join(lines) + "\n")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--changed-pct", type=float, default=1.0)
    ap.add_argument(
        "--history", type=int, default=0, help="earlier batches that each give every key a new version"
    )
    ap.add_argument("--quick", action="store_true", help="20,000 rows, nothing recorded")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args(argv)
    rows = 20_000 if args.quick else args.rows
    workdir = Path(tempfile.mkdtemp(prefix="icelake-scd2-bench-"))
    try:
        res = run(rows, args.changed_pct, args.history, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(res, indent=2))
    if not (args.quick or args.no_record):
        print(f"recorded {record(res)}")


if __name__ == "__main__":
    main()
