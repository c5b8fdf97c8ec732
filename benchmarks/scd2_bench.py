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
   Both run once, unmeasured, on a 20,000-row table first, so neither pays the fresh JVM's warm-up;
   then steps 1-4 run 3 times (`--repeats`), each on tables of its own, and the run of median ratio
   is the figure (`ratio`; `ratios` lists every run's, `runs` every run's figures).
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

from benchmarks.results_md import with_row

BENCH_DIR = Path(__file__).resolve().parent
CATALOG = "bench"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
CITIES = ("London", "Leeds", "York", "Bath")


def batch_frame(spark: Any, rows: int, run: int, changed_every: int | None, generation: int = 0) -> Any:
    """The dimension as served by the API at `run`: about 30 realistic columns (strings, decimals,
    timestamps, a date, booleans, a nested struct), 250+ bytes a row as JSON. Keys with
    id % changed_every == 0 changed (half flip `email` between NULL and a value, half change
    `tier`); `generation` renames every customer (a batch of generation g > 0 changes every key)."""
    from pyspark.sql import functions as F

    df = spark.range(1, rows + 1)
    i = F.col("id")
    base_email = F.when(i % 10 == 0, F.lit(None)).otherwise(F.format_string("customer.%d@example.com", i))
    every = changed_every or rows + 1  # no key changes in the base batch
    changed = F.lit(changed_every is not None) & (i % every == 0)
    flip = changed & (i % (2 * every) == 0)
    email = F.when(flip & base_email.isNull(), F.format_string("new%d@example.com", i)).when(
        flip, F.lit(None)
    )
    day = F.lit(1_767_225_600) + (i % 1000) * 86_400  # 2026-01-01 + id % 1000 days
    suffix = f" g{generation}" if generation else ""
    return df.select(
        i.alias("id"),
        F.format_string("Customer %d" + suffix, i).alias("name"),
        F.when(flip, email).otherwise(base_email).alias("email"),
        F.format_string("+44 20 7946 %04d", i % 10000).alias("phone"),
        F.format_string("%d Acacia Avenue", i % 997).alias("street"),
        F.element_at(
            F.array(*[F.lit(c) for c in ("London", "Leeds", "York", "Bath")]), (i % 4 + 1).cast("int")
        ).alias("city"),
        F.format_string("SW%d %dAA", i % 20, i % 9).alias("postcode"),
        F.lit("GB").alias("country"),
        F.when(changed & ~flip, F.lit(f"tier-{run}")).otherwise(F.lit("basic")).alias("tier"),
        F.when(i % 7 == 0, F.lit("dormant")).otherwise(F.lit("active")).alias("status"),
        F.format_string("segment-%d", i % 12).alias("segment"),
        F.lit("GBP").alias("currency"),
        (i % 100_000 / 100).cast("decimal(14,2)").alias("balance"),
        (i % 50 * 1000).cast("decimal(14,2)").alias("credit_limit"),
        (i % 1_000_003 / 10_000).cast("decimal(16,4)").alias("lifetime_value"),
        (i % 30 / 1000).cast("decimal(5,4)").alias("discount_rate"),
        F.timestamp_seconds(day).alias("created_at"),
        F.timestamp_seconds(day + 3600 * (i % 24)).alias("last_login_at"),
        F.timestamp_seconds(day + 7200).alias("last_order_at"),
        F.date_from_unix_date((i % 20_000).cast("int")).alias("birth_date"),
        (i % 321).alias("orders"),
        (i % 7).cast("int").alias("returns"),
        (i % 1000 / 7.0).alias("score"),
        (i % 7 != 0).alias("is_active"),
        (i % 3 == 0).alias("marketing_opt_in"),
        F.format_string("Prefers email contact; account %d opened online, verified by phone.", i).alias(
            "notes"
        ),
        F.struct(
            F.format_string("Flat %d", i % 40).alias("line1"),
            F.lit("Greater London").alias("region"),
            (F.lit(51.5) + i % 100 / 1000.0).alias("lat"),
            (F.lit(-0.12) - i % 100 / 1000.0).alias("lon"),
        ).alias("address"),
        F.format_string("ext-%016x", i * 2654435761).alias("external_ref"),
        F.when(changed, F.lit(run)).otherwise(F.lit(0)).cast("bigint").alias("updated_at"),
        F.lit(f"bench/run-{run}/page-000001.json").alias("_source_file"),
        i.alias("__icelake_pos"),
    )


DATA_COLUMNS = [
    "id", "name", "email", "phone", "street", "city", "postcode", "country", "tier", "status", "segment",
    "currency", "balance", "credit_limit", "lifetime_value", "discount_rate", "created_at", "last_login_at",
    "last_order_at", "birth_date", "orders", "returns", "score", "is_active", "marketing_opt_in", "notes",
    "address", "external_ref", "updated_at",
]  # fmt: skip


def naive_rewrite(spark: Any, table: str, batch: Any, as_of: datetime, ingested_at: datetime) -> None:
    """Recompute the whole SCD2 table from the old table and the batch; INSERT OVERWRITE it."""
    from icelake.ingest.scd2 import ts_literal

    batch.createOrReplaceTempView("naive_batch")
    t, i = ts_literal(as_of), ts_literal(ingested_at)
    data = [c for c in DATA_COLUMNS if c != "id"]
    l_cols = ", ".join(f"l.{c} AS l_{c}" for c in DATA_COLUMNS)
    same = " AND ".join(f"c.{c} <=> l.{c}" for c in data)
    cols = ", ".join(DATA_COLUMNS)
    spark.sql(f"""
INSERT OVERWRITE {table}
WITH latest AS (
  SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY id ORDER BY updated_at DESC NULLS LAST,
                 __icelake_pos DESC) AS rn FROM naive_batch) WHERE rn = 1
), cur AS (SELECT * FROM {table} WHERE _is_current),
joined AS (
  SELECT c.*, {l_cols}, l._source_file AS l_file,
         (c.id IS NOT NULL AND l.id IS NOT NULL AND NOT ({same})) AS changed
  FROM cur c FULL OUTER JOIN latest l ON c.id = l.id
)
SELECT {cols}, _ingested_at, _source_file, _is_current, _valid_from, _valid_to, _is_deleted
FROM {table} WHERE NOT _is_current
UNION ALL
SELECT {cols}, _ingested_at, _source_file, NOT changed AS _is_current, _valid_from,
       CASE WHEN changed THEN {t} END AS _valid_to, _is_deleted
FROM joined WHERE id IS NOT NULL
UNION ALL
SELECT {", ".join(f"l_{c}" for c in DATA_COLUMNS)}, {i}, l_file, true, {t}, CAST(NULL AS TIMESTAMP), false
FROM joined WHERE l_id IS NOT NULL AND (id IS NULL OR changed)
""")


def fingerprint(spark: Any, table: str) -> dict[str, Any]:
    row = spark.sql(
        f"SELECT count(1) AS n, count_if(_is_current) AS cur, "
        f"sum(hash({', '.join(DATA_COLUMNS)}, _is_current, _valid_from, _valid_to)) AS h "
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


def build_tables(spark: Any, name: str, rows: int, history: int) -> tuple[Any, str]:
    """The SCD2 table `name` (base batch, then `history` batches that each give every key a new
    version) and its clone `name`_naive: both contenders start from the same rows."""
    from icelake.ingest.models import Scd2Spec
    from icelake.ingest.scd2 import BatchInfo, merge_batch

    spec = Scd2Spec(table=f"{CATALOG}.dim.{name}", keys=("id",), order_by="updated_at")
    merge_batch(
        spark,
        spec,
        batch_frame(spark, rows, 0, None),
        BatchInfo(batch_id="bench/base", as_of=T0, full_load=False),
    )
    for generation in range(1, history + 1):
        merge_batch(
            spark,
            spec,
            batch_frame(spark, rows, generation, None, generation),
            BatchInfo(
                batch_id=f"bench/history-{generation}", as_of=T0 + timedelta(days=generation), full_load=False
            ),
        )
    naive_table = f"{spec.table}_naive"
    spark.sql(f"CREATE TABLE {naive_table} USING iceberg AS SELECT * FROM {spec.table}")
    return spec, naive_table


def contend(
    spark: Any, spec: Any, naive_table: str, rows: int, changed_every: int, history: int
) -> tuple[Any, Any, float, float]:
    """The next batch (read before either clock starts), merged by icelake and by the naive rewrite.
    Returns (batch, merge result, merge seconds, naive seconds)."""
    from icelake.ingest.scd2 import BatchInfo, merge_batch

    run_no = history + 1
    batch = batch_frame(spark, rows, run_no, changed_every, history).cache()
    batch.count()
    as_of, ingested_at = T0 + timedelta(days=run_no), datetime.now(UTC)
    started = time.perf_counter()
    result = merge_batch(
        spark,
        spec,
        batch,
        BatchInfo(batch_id=f"bench/run-{run_no}", as_of=as_of, full_load=False),
        ingested_at=ingested_at,
    )
    merge_s = time.perf_counter() - started
    started = time.perf_counter()
    naive_rewrite(spark, naive_table, batch, as_of, ingested_at)
    naive_s = time.perf_counter() - started
    return batch, result, merge_s, naive_s


WARM_UP_ROWS = 20_000


REPEATS = 3  # measured runs per case, after one warm-up: one run cannot tell a regression from noise


def measure_once(
    spark: Any, name: str, rows: int, changed_every: int, history: int
) -> tuple[dict[str, Any], Any]:
    """One measured round on tables of its own (each merge changes its table): the figures of the
    round, and the merge's result."""
    started = time.perf_counter()
    spec, naive_table = build_tables(spark, name, rows, history)
    setup_s = time.perf_counter() - started
    batch, result, merge_s, naive_s = contend(spark, spec, naive_table, rows, changed_every, history)
    merged, naive = fingerprint(spark, spec.table), fingerprint(spark, naive_table)
    if merged != naive:
        raise SystemExit(f"the two tables differ: merge {merged}, naive {naive}")
    tables = (("merge", spec.table), ("naive", naive_table))
    files = {name: spark.sql(f"SELECT count(1) AS n FROM {t}.files").collect()[0]["n"] for name, t in tables}
    written = {name: last_commit_writes(spark, t) for name, t in tables}
    row_bytes = batch.selectExpr(f"avg(length(to_json(struct({', '.join(DATA_COLUMNS)})))) AS b").collect()[
        0
    ]["b"]
    batch.unpersist()
    for _, table in tables:  # the next round's tables are its own; these are not read again
        spark.sql(f"DROP TABLE {table} PURGE")
    figures = {
        "merge_seconds": round(merge_s, 2),
        "naive_rewrite_seconds": round(naive_s, 2),
        "ratio": round(merge_s / naive_s, 3),
        "setup_seconds": round(setup_s, 2),
        "row_bytes_json": round(float(row_bytes)),
        "table_after": merged,
        "live_files_after": files,
        "written_by_the_measured_commit": written,
    }
    return figures, result


def run(rows: int, change_pct: float, history: int, workdir: Path, repeats: int = REPEATS) -> dict[str, Any]:
    from icelake.local.spark import local_spark
    from pyspark import __version__ as spark_version

    spark = local_spark({CATALOG: str(workdir / "warehouse")}, app_name="scd2-bench", driver_memory="3g")
    changed_every = round(100 / change_pct)
    # A fresh JVM compiles Spark's generated code on its first queries: whoever ran first paid for
    # it. One unmeasured round of both contenders on a small table warms the JVM for both.
    warm_spec, warm_naive = build_tables(spark, "warm_up", min(rows, WARM_UP_ROWS), history)
    contend(spark, warm_spec, warm_naive, min(rows, WARM_UP_ROWS), changed_every, history)[0].unpersist()
    runs: list[dict[str, Any]] = []
    for i in range(repeats):
        figures, result = measure_once(spark, f"customers_{i + 1}", rows, changed_every, history)
        runs.append(figures)
        print(
            f"run {i + 1}/{repeats}: merge {figures['merge_seconds']} s, rewrite "
            f"{figures['naive_rewrite_seconds']} s, ratio {figures['ratio']}",
            flush=True,
        )
    # The median run by ratio stands for the case; every run is kept.
    median = sorted(runs, key=lambda r: r["ratio"])[len(runs) // 2]
    print(
        f"median of {repeats}: ratio {median['ratio']} (merge {median['merge_seconds']} s, rewrite "
        f"{median['naive_rewrite_seconds']} s); ratios {[r['ratio'] for r in runs]}",
        flush=True,
    )
    return {
        "benchmark": "scd2_merge_vs_full_rewrite",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "rows": rows,
        "changed_pct": change_pct,
        "history_batches": history,
        "changed_keys": result.closed,
        "inserted_versions": result.inserted,
        **median,
        "speedup": round(median["naive_rewrite_seconds"] / median["merge_seconds"], 2),
        "ratios": [r["ratio"] for r in runs],
        "runs": runs,
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
    md.write_text(with_row(md.read_text(), "# SCD2 merge benchmark", row))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--changed-pct", type=float, default=1.0)
    ap.add_argument(
        "--history", type=int, default=0, help="earlier batches that each give every key a new version"
    )
    ap.add_argument("--quick", action="store_true", help="20,000 rows, nothing recorded")
    ap.add_argument("--repeats", type=int, default=REPEATS, help="measured runs (the median is the figure)")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args(argv)
    rows = 20_000 if args.quick else args.rows
    workdir = Path(tempfile.mkdtemp(prefix="icelake-scd2-bench-"))
    try:
        res = run(rows, args.changed_pct, args.history, workdir, args.repeats)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(res, indent=2))
    if not (args.quick or args.no_record):
        print(f"recorded {record(res)}")
    summary = {
        "rows": res["rows"],
        "row_bytes": res["row_bytes_json"],
        "changed": res["changed_keys"],
        "history_batches": res["history_batches"],
        "merge_s": res["merge_seconds"],
        "naive_s": res["naive_rewrite_seconds"],
        "ratio": res["ratio"],  # the median run's
        "ratios": res["ratios"],
        "bytes_written_merge": res["written_by_the_measured_commit"]["merge"]["bytes"],
        "bytes_written_naive": res["written_by_the_measured_commit"]["naive"]["bytes"],
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
