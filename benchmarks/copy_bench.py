"""Copy at S3's limits: both engines against a model of S3's request rates and latency.

    .venv/bin/python -m benchmarks.copy_bench                      # make bench-copy (50,000 files)
    .venv/bin/python -m benchmarks.copy_bench --files 5000 --writes-per-s 400   # a quick look

A table of `--files` data files over `--prefixes` partition prefixes, `--hot-share` of them in one
(built through the Iceberg Java API, `benchmarks.synthetic_table`), is published to the model's
source bucket (`benchmarks/s3_model.py`, its own process; limits and latency off while it is
seeded), then migrated to the model's target bucket twice, each run with the model's limits and
latency on and its counts reset:
- the Lambda engine: `migrate_table` as the copy step calls it (one process, its threads);
- the Glue engine: `run_migration` with `SparkRunner` on local Spark, as the Glue job runs it.
Both use icelake's own clients (`icelake.aws.clients`: retries, per-prefix pacing).

Per engine, `measured_s` is the copy phase (first copy started to last copy done) and `ideal_s`
the model's lower bound for it: the larger of the copy's requests x the model's mean latency /
the engine's concurrency (Lambda threads; local Spark cores x threads per task), and the hottest
prefix's admitted requests, less its bucket's initial burst, / its limit (writes: COPY per target
prefix; reads: HEAD per source prefix). `efficiency` = ideal_s / measured_s.

`estimated_s` is the estimator's (`icelake.assess.estimate.model.copy_seconds`, as the assessment and
the Plan step's engine choice ask it) for the same copy, with the model of S3's own parameters as a
`ThroughputModel` (`s3_throughput`: its mean latency for every request kind, its per-prefix limits
and bandwidth, the engine's concurrency; no Lambda or Glue start, which local runs do not have)
and the table's plan (its copies' requests, `migration_requests`, and their busiest prefix's
share); `estimated_range_s` is the model's low and high (`ThroughputModel.bounds`: the model's
latency p10 and p90 over its median), and `estimate_ratio` = measured_s / estimated_s. Goal: within
20 % for both engines.

Costs come from `icelake.assess.estimate.prices` (us-east-1): the engine's S3 requests as the model counted
them, plus compute for measured_s (the copy Lambda's deployed memory; for Glue, the deployed job's
price a second times the share of its executor cores that local Spark's cores are,
`glue_billing`), per million objects; the floor is one CopyObject per object.

The last line is one JSON object (objects, prefixes, hot_prefix_share, model, engines.lambda and
engines.glue, failed_tables, cost_usd_per_million_objects, copy_floor_usd_per_million_objects);
`--record` adds it to benchmarks/results/ and a row to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.s3_model import ModelProcess, start_model
from benchmarks.s3_throttle import ModelConfig
from benchmarks.synthetic_table import build_in_own_process

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
SOURCE_BUCKET, TARGET_BUCKET = "bench-source", "bench-target"
SOURCE = f"s3://{SOURCE_BUCKET}/lake/db/t"
VCPU_PER_DPU = 4  # AWS: a DPU is 4 vCPUs and 16 GB
REGION = "us-east-1"
GOALS = {"efficiency": 0.85, "cost_ratio": 1.15, "estimate": 0.20}
Z_90 = 1.2815515655446004  # the standard normal's 90th percentile
console = Console(stderr=True)


class PhaseClock:
    """A ProgressSink that remembers when the copy phase started and when its last file finished."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.finished: float | None = None

    def start(self, phase: str, total: int) -> None:
        if phase == "copy files":
            self.started = self.finished = time.monotonic()

    def advance(self, phase: str, amount: int = 1) -> None:
        if phase == "copy files":
            self.finished = time.monotonic()

    @property
    def seconds(self) -> float:
        return (self.finished or 0.0) - (self.started or 0.0)


def _client() -> Any:
    from icelake.aws.clients import new_session

    return new_session(region_name=REGION).client("s3")


def build_and_publish(
    work: Path, files: int, prefixes: int, hot_share: float, model: ModelProcess, snapshots: int | None = None
) -> str:
    """The table (`snapshots` fast appends, default one per 5,000 files), built in its own JVM and
    process, then seeded into the model's source bucket."""
    from icelake.aws.fileio import LocalFileIO, S3FileIO
    from icelake.migrate import migrate_table
    from icelake.migrate.settings import EngineSettings

    built = build_in_own_process(
        work / "warehouse",
        files,
        snapshots or max(1, files // 5000),
        64,  # bytes: the model keeps sizes only, but the table is seeded through PutObject
        f"--skewed-prefixes={prefixes}",
        f"--hot-share={hot_share}",
    )
    console.print(f"built {built['data_files']:,} files in {built['snapshots']} snapshots; publishing ...")
    model.configure(per_prefix_writes_per_s=0, per_prefix_reads_per_s=0, latency=False)
    s3 = _client()
    for bucket in (SOURCE_BUCKET, TARGET_BUCKET):
        s3.create_bucket(Bucket=bucket)
    started = time.monotonic()
    published = migrate_table(
        built["current_metadata"],
        SOURCE,
        src_io=LocalFileIO(),
        dst_io=S3FileIO(s3),
        settings=EngineSettings(workers=32),
    )
    console.print(f"  published in {time.monotonic() - started:.1f} s")
    return published.target_metadata_location


def run_lambda(source: str, target: str) -> tuple[Any, PhaseClock, int]:
    """The copy step's call (icelake/workflow/steps/copying.py): one process, its default threads."""
    from icelake.aws.fileio import S3FileIO
    from icelake.migrate import migrate_table
    from icelake.migrate.settings import EngineSettings

    clock = PhaseClock()
    settings = EngineSettings(processes=1, lock_target=False, progress=clock)  # the copy step's
    result = migrate_table(
        source, target, src_io=S3FileIO(_client()), dst_io=S3FileIO(_client()), settings=settings
    )
    return result, clock, settings.workers


def run_glue(source: str, target: str, spark: Any) -> tuple[Any, PhaseClock, int]:
    """The Glue job's call (glue_jobs/migrate_table.py) on local Spark."""
    from icelake.migrate.copy.distributed import SparkRunner, executor_spec, size_copies
    from icelake.migrate.copy.engine import run_migration
    from icelake.migrate.settings import EngineSettings

    clock = PhaseClock()
    runner = SparkRunner(spark.sparkContext, clock)

    def sized(plan: Any) -> None:  # as the Glue job's on_planned does
        size_copies(runner, plan)

    result = run_migration(  # one pool of worker processes, a process per CPU, as the Glue job's driver
        source,
        target,
        [],
        src=executor_spec(source),
        dst=executor_spec(target),
        runner=runner,
        settings=EngineSettings(lock_target=False, processes=os.cpu_count() or 1),
        on_planned=sized,
    )
    return result, clock, int(spark.sparkContext.defaultParallelism) * runner.copy_threads


def engine_figures(
    result: Any, clock: PhaseClock, concurrency: int, stats: dict[str, Any], config: ModelConfig, prices: Any
) -> dict[str, Any]:
    from icelake.migrate.copy.objects import REQUESTS_PER_COPY

    copies = int(result.files_copied)
    needed = copies * sum(REQUESTS_PER_COPY.values())
    by_latency = needed * config.latency_mean_ms / 1000 / concurrency
    # The hottest prefix: the requests it admitted (SlowDowns take no token), less the burst its
    # bucket holds at the start, at its rate (writes: COPY per target prefix; reads: HEAD per
    # source prefix).
    admitted = _admitted(stats, "COPY", TARGET_BUCKET), _admitted(stats, "HEAD", SOURCE_BUCKET)
    hottest = max(
        _bound(max(admitted[0].values(), default=0), config.per_prefix_writes_per_s, config.burst_s),
        _bound(max(admitted[1].values(), default=0), config.per_prefix_reads_per_s, config.burst_s),
    )
    ideal = max(by_latency, hottest)
    measured = clock.seconds
    kinds = stats["requests_by_kind"]
    slowdowns = sum(stats["slowdowns_by_kind"].values())
    priced = {
        "copy": kinds.get("COPY", 0) + kinds.get("UPLOAD_PART_COPY", 0),
        "put": kinds.get("PUT", 0) + kinds.get("MULTIPART", 0),
        "list": kinds.get("LIST", 0),
        "head": kinds.get("HEAD", 0),
        "get": kinds.get("GET", 0),
        "delete": kinds.get("DELETE", 0),
    }
    return {
        "concurrency": concurrency,
        "ideal_s": round(ideal, 1),
        "ideal_by_latency_s": round(by_latency, 1),
        "ideal_by_hot_prefix_s": round(hottest, 1),
        "measured_s": round(measured, 1),
        "run_s": result.elapsed_seconds,
        "efficiency": round(ideal / measured, 3) if measured else 0.0,
        "files_copied": copies,
        "files_verified": int(result.files_verified),
        "slowdowns": slowdowns,
        # every SlowDown was answered to a request that was then sent again (nothing else failed)
        "retries": slowdowns,
        "requests": kinds,
        "_priced_requests": priced,
    }


def planned_copy(source: str, target: str) -> dict[str, Any]:
    """What the estimator needs of the table's copy, from the plan a run makes (read only): the
    copy's requests after its plan, its bytes and its busiest prefix's share of the copies."""
    from icelake.aws.fileio import S3FileIO
    from icelake.migrate.copy.engine import migration_requests
    from icelake.migrate.plan.build import build_plan
    from icelake.migrate.settings import EngineSettings

    plan = build_plan(source, target, [], S3FileIO(_client()), S3FileIO(_client()), settings=EngineSettings())
    return {
        "requests": migration_requests(plan),
        "bytes": sum(task.info.size for task in plan.copies),
        "busiest": plan.copies.prefix_spread()[1],
    }


def s3_throughput(config: ModelConfig, engine: str, concurrency: int, local_cores: int) -> Any:
    """The model of S3's parameters as the estimator's ThroughputModel, for `engine` at the
    concurrency it runs (Glue: local cores x threads per task)."""
    from icelake.aws.request_count import REQUEST_KINDS
    from icelake.throughput import ThroughputModel

    mean_s = config.latency_mean_ms / 1000
    spread = (math.exp(-Z_90 * config.sigma), math.exp(Z_90 * config.sigma))
    mean_over_median = config.latency_mean_ms / config.latency_median_ms
    return ThroughputModel(
        name="benchmarks/s3_model.py",
        measured=f"the model's parameters: {json.dumps(config.summary())}",
        latency_s=dict.fromkeys(REQUEST_KINDS, mean_s),
        copy_mib_per_s=config.bandwidth_mib_s,
        lambda_parallel=concurrency if engine == "lambda" else 16,
        glue_workers=max(2, local_cores),
        glue_threads_per_worker=max(1, concurrency // max(1, local_cores)),
        glue_startup_s=0.0,
        lambda_start_s=0.0,
        prefix_write_per_s=config.per_prefix_writes_per_s,
        prefix_read_per_s=config.per_prefix_reads_per_s,
        latency_spread=(spread[0] / mean_over_median, spread[1] / mean_over_median),
        lambda_start_range_s=(0.0, 0.0),
        glue_startup_range_s=(0.0, 0.0),
    )


def estimated(planned: dict[str, Any], model: Any, engine: str) -> dict[str, Any]:
    """The estimator's copy seconds for `engine`, and its range."""
    from icelake.assess.estimate.model import copy_seconds

    def at(m: Any) -> float:
        glue = engine == "glue"
        return copy_seconds(planned["requests"], planned["bytes"], m, glue=glue, busiest=planned["busiest"])

    low, high = model.bounds()
    return {"estimated_s": round(at(model), 1), "estimated_range_s": [round(at(low), 1), round(at(high), 1)]}


def glue_billing(local_cores: int, prices: Any) -> dict[str, Any]:
    """What a second of the local Spark run stands for in the deployed Glue job (cdk/config.py's
    glue_workers x glue_worker_type): the job's price a second times the share of its executor
    cores the local cores are (its driver's price spread over them). Local Spark is 2 cores; a
    real job is (workers - 1) executors of 4 vCPUs a DPU, sending copies side by side at about
    the rate per core the local run measured (the model's limits are 58x below S3's, so a real
    job is not prefix-bound where the model's run is CPU- or prefix-bound)."""
    from cdk.config import Settings

    workers = int(Settings.model_fields["glue_workers"].default)
    worker_type = str(Settings.model_fields["glue_worker_type"].default)
    dpu = prices.billing.glue_dpu_per_worker.value[worker_type]
    executor_cores = (workers - 1) * dpu * VCPU_PER_DPU
    job_usd_per_s = prices.glue_usd(workers, worker_type, 3600) / 3600
    share = local_cores / executor_cores
    return {
        "workers": workers,
        "worker_type": worker_type,
        "executor_cores": executor_cores,
        "local_cores": local_cores,
        "share": round(share, 4),
        "usd_per_s": job_usd_per_s * share,
    }


def _admitted(stats: dict[str, Any], kind: str, bucket: str) -> dict[str, int]:
    """Requests of `kind` the model admitted, by prefix of `bucket`."""
    refused = stats["slowdowns"].get(kind, {})
    return {
        prefix: n - refused.get(prefix, 0)
        for prefix, n in stats["requests"].get(kind, {}).items()
        if prefix.startswith(bucket + "/")
    }


def _bound(requests: int, per_s: float, burst_s: float) -> float:
    """Seconds a token bucket of `per_s` (holding `burst_s` of it, full at the start) takes to admit."""
    return max(0.0, requests - max(1.0, per_s * burst_s)) / per_s


def cost_per_million(engine: str, fig: dict[str, Any], prices: Any, local_cores: int) -> float:
    from icelake.constants import STEP_LIMITS

    requests = prices.s3_requests_usd(fig.pop("_priced_requests"))
    per_million = 1e6 / fig["files_copied"]
    if engine == "lambda":
        compute = prices.lambda_usd(STEP_LIMITS["copy"][0], fig["measured_s"], 1)
    else:
        billing = glue_billing(local_cores, prices)
        compute = billing["usd_per_s"] * fig["measured_s"]
        # For comparison: the whole smallest job (2 G.1X workers, 8 vCPUs) billed for the 2 local cores.
        smallest = prices.glue_usd(2, "G.1X", 3600) / 3600 * fig["measured_s"]
        fig["cost_if_smallest_job_usd_per_million_objects"] = round((requests + smallest) * per_million, 4)
        fig["glue_billing"] = {k: (round(v, 8) if isinstance(v, float) else v) for k, v in billing.items()}
    fig["request_usd"], fig["compute_usd"] = round(requests, 6), round(compute, 6)
    return float((requests + compute) * per_million)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from icelake.assess.estimate.prices import load_prices

    prices = load_prices(REGION)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    model_args = ["--seed", str(args.seed), "--writes-per-s", str(args.writes_per_s)]
    model_args += ["--reads-per-s", str(args.reads_per_s)]
    with start_model(*model_args) as model:
        config = model.use(REGION)
        source = build_and_publish(work, args.files, args.prefixes, args.hot_share, model)
        counts = {p: n for p, n in model.stats()["requests"].get("PUT", {}).items() if "/data/" in p}
        out: dict[str, Any] = {
            "objects": sum(counts.values()),
            "prefixes": len(counts),
            "hot_prefix_share": round(max(counts.values()) / sum(counts.values()), 3),
            "model": config.summary(),
            "engines": {},
            "failed_tables": 0,
        }
        planned = planned_copy(source, f"s3://{TARGET_BUCKET}/estimate/db/t")
        out["estimate_inputs"] = {"requests": planned["requests"], "busiest": round(planned["busiest"], 4)}
        spark = None
        for engine in args.engines:
            model.restart(config)
            target = f"s3://{TARGET_BUCKET}/{engine}/db/t"
            console.print(f"{engine}: migrating {out['objects']:,} files ...")
            try:
                if engine == "lambda":
                    result, clock, concurrency = run_lambda(source, target)
                else:
                    if spark is None:
                        from icelake.local.spark import local_spark

                        spark = local_spark({}, app_name="icelake-copy-bench")
                    result, clock, concurrency = run_glue(source, target, spark)
            except Exception as exc:  # a failed table is a result of this bench, reported as such
                console.print(f"  [red]{engine} failed: {type(exc).__name__}: {exc}[/red]")
                out["failed_tables"] += 1
                continue
            fig = engine_figures(result, clock, concurrency, model.stats(), config, prices)
            local_cores = int(spark.sparkContext.defaultParallelism) if engine == "glue" and spark else 1
            fig["cost_usd_per_million_objects"] = round(cost_per_million(engine, fig, prices, local_cores), 4)
            fig |= estimated(planned, s3_throughput(config, engine, concurrency, local_cores), engine)
            est = fig["estimated_s"]
            fig["estimate_ratio"] = round(fig["measured_s"] / est, 3) if est else None
            out["engines"][engine] = fig
            console.print(
                f"  copy {fig['measured_s']} s (ideal {fig['ideal_s']} s at concurrency {concurrency}: "
                f"efficiency {fig['efficiency']}), {fig['slowdowns']} slowdowns, "
                f"${fig['cost_usd_per_million_objects']} per million objects"
            )
            console.print(
                f"  estimated_s {fig['estimated_s']} (range {fig['estimated_range_s']}) measured_s "
                f"{fig['measured_s']}: ratio {fig['estimate_ratio']}"
            )
        if spark is not None:
            spark.stop()
    floor = prices.s3_requests_usd({"copy": 1_000_000})
    out["copy_floor_usd_per_million_objects"] = round(floor, 4)
    out["cost_usd_per_million_objects"] = {
        e: f["cost_usd_per_million_objects"] for e, f in out["engines"].items()
    }
    out["prices"] = {"region": REGION, "as_of": str(prices.as_of)}
    out["goals"] = {
        e: {
            "efficiency": f["efficiency"] >= GOALS["efficiency"],
            "cost": f["cost_usd_per_million_objects"] <= GOALS["cost_ratio"] * floor,
            "estimate": f["estimate_ratio"] is not None and abs(f["estimate_ratio"] - 1) <= GOALS["estimate"],
        }
        for e, f in out["engines"].items()
    }
    return out


def record(res: dict[str, Any]) -> Path:
    """benchmarks/results/copy-<files>-<date>-<commit>.json and a row of RESULTS.md's copy table."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    day = datetime.now(UTC).date().isoformat()
    path = BENCH_DIR / "results" / f"copy-{res['objects']}-{day}-{commit}.json"
    path.write_text(json.dumps(res, indent=2) + "\n")
    rows = []
    for engine, f in res["engines"].items():
        rows.append(
            f"| {day} | {commit} | {engine} | {res['objects']:,} | {res['prefixes']} | "
            f"{res['hot_prefix_share']} | {res['model']['per_prefix_writes_per_s']:g}/"
            f"{res['model']['per_prefix_reads_per_s']:g} | {f['concurrency']} | {f['ideal_s']} | "
            f"{f['measured_s']} | {f['efficiency']} | {f['slowdowns']} | "
            f"{f['cost_usd_per_million_objects']} / {res['copy_floor_usd_per_million_objects']} | "
            f"{res['failed_tables']} | {res.get('load', '')} |"
        )
    results = BENCH_DIR / "RESULTS.md"
    text = results.read_text()
    marker = "<!-- copy-bench rows -->"
    if marker in text:
        text = text.replace(marker, marker + "\n" + "\n".join(rows), 1)
        results.write_text(text)
    return path


def main(argv: list[str] | None = None) -> None:
    d = ModelConfig()
    ap = argparse.ArgumentParser(prog="python -m benchmarks.copy_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--prefixes", type=int, default=8)
    ap.add_argument("--hot-share", type=float, default=0.3)
    ap.add_argument("--writes-per-s", type=float, default=d.per_prefix_writes_per_s)
    ap.add_argument("--reads-per-s", type=float, default=d.per_prefix_reads_per_s)
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--engines", default="lambda,glue", type=lambda s: s.split(","))
    ap.add_argument("--work", default=str(BENCH_DIR / ".work" / "copy"))
    ap.add_argument("--record", action="store_true", help="write results/ and a row of RESULTS.md")
    args = ap.parse_args(argv)
    started = time.monotonic()
    res = run(args)
    res["bench_s"] = round(time.monotonic() - started, 1)
    res["load"] = round(os.getloadavg()[0], 1)
    if args.record:
        console.print(f"recorded in {record(res)}")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
