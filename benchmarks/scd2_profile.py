"""Where one SCD2 batch's merge spends its time, phase by phase (issue 47).

    .venv/bin/python -m benchmarks.scd2_profile --rows 200000 --history 5 --rounds 3

Builds the bench's table (benchmarks/scd2_bench.py: a base batch and `--history` batches that each
give every key a new version), warms the JVM on a small table, then merges the bench's next batch
(1% of keys changed) `--rounds` times, rolling the table back to its snapshot before the batch
between rounds, so every round merges the same batch into the same table. Each phase is timed by
wrapping the function `icelake.ingest.scd2.merge` calls for it; Spark is lazy, so a phase's time is
the work its function runs eagerly (a join's cost lands where an action first needs it). Prints
each round and the per-phase median as one JSON line. Not a ratio bench: the shares are the figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.scd2_bench import CATALOG, T0, WARM_UP_ROWS, batch_frame

# (label, name looked up in icelake.ingest.scd2.merge); a name the module lacks is skipped.
PHASES = (
    ("commit log (already merged, order)", "_already_merged"),
    ("empty batch", "_is_empty"),
    ("schema plan", "plan_schema"),
    ("align_to_table", "align_to_table"),
    ("classification join, cache, counts and NULL keys", "count_changes"),
    ("ALTERs (schema as planned)", "apply_schema_plan"),
    ("the table's columns after the ALTERs", "data_columns"),
    ("MERGE (commit)", "with_commit_properties"),
    ("the committed snapshot", "_merged"),
)


def _timed(name: str, fn: Callable[..., Any], spent: dict[str, float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started

    return wrapper


def profile_round(spark: Any, spec: Any, batch: Any, batch_id: str, as_of: datetime) -> dict[str, float]:
    """One batch merged with its phases timed: label -> seconds, plus 'merge in all' and 'other'."""
    from icelake.ingest.scd2 import merge as merge_module
    from icelake.ingest.scd2.merge import BatchInfo, merge_batch

    spent: dict[str, float] = defaultdict(float)
    originals = {attr: getattr(merge_module, attr) for _, attr in PHASES if hasattr(merge_module, attr)}
    labels = {attr: label for label, attr in PHASES}
    for attr, fn in originals.items():
        setattr(merge_module, attr, _timed(labels[attr], fn, spent))
    try:
        started = time.perf_counter()
        merge_batch(spark, spec, batch, BatchInfo(batch_id=batch_id, as_of=as_of, full_load=False))
        total = time.perf_counter() - started
    finally:
        for attr, fn in originals.items():
            setattr(merge_module, attr, fn)
    figures = {label: round(spent[label], 3) for label, attr in PHASES if attr in originals}
    figures["other"] = round(total - sum(spent.values()), 3)
    figures["merge in all"] = round(total, 3)
    return figures


def build_table(spark: Any, name: str, rows: int, history: int) -> Any:
    """The bench's SCD2 table (scd2_bench.build_tables without the naive contender's clone)."""
    from icelake.ingest.models import Scd2Spec
    from icelake.ingest.scd2 import BatchInfo, merge_batch

    spec = Scd2Spec(table=f"{CATALOG}.dim.{name}", keys=("id",), order_by="updated_at")
    for generation in range(history + 1):
        batch = batch_frame(spark, rows, generation, None, generation)
        info = BatchInfo(f"bench/history-{generation}", T0 + timedelta(days=generation), full_load=False)
        merge_batch(spark, spec, batch, info)
    return spec


def run(rows: int, history: int, rounds: int, workdir: Path) -> dict[str, Any]:
    from icelake.local.spark import local_spark

    spark = local_spark({CATALOG: str(workdir / "warehouse")}, app_name="scd2-profile", driver_memory="3g")
    warm_spec = build_table(spark, "warm_up", min(rows, WARM_UP_ROWS), 1)  # compiles the code paths
    warm = batch_frame(spark, min(rows, WARM_UP_ROWS), 2, 100, 1).cache()
    profile_round(spark, warm_spec, warm, "profile/warm-up", T0 + timedelta(days=2))
    warm.unpersist()
    spec = build_table(spark, "customers", rows, history)
    before = spark.sql(f"SELECT snapshot_id FROM {spec.table}.snapshots ORDER BY committed_at DESC LIMIT 1")
    base_snapshot = int(before.collect()[0]["snapshot_id"])
    batch = batch_frame(spark, rows, history + 1, 100, history).cache()  # read before the clock, as the bench
    batch.count()
    results = []
    for i in range(rounds):
        table = spec.table.split(".", 1)[1]
        spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{table}', {base_snapshot})")
        as_of = T0 + timedelta(days=history + 1 + i)
        figures = profile_round(spark, spec, batch, f"profile/run-{i + 1}", as_of)
        results.append(figures)
        print(f"round {i + 1}/{rounds}: {json.dumps(figures)}", flush=True)
    median = {k: round(statistics.median(r[k] for r in results), 3) for k in results[0]}
    return {
        "rows": rows,
        "history_batches": history,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "median_seconds": median,
        "rounds": results,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--history", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="icelake-scd2-profile-"))
    try:
        res = run(args.rows, args.history, args.rounds, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
