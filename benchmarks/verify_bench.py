"""Verify at the metadata tier of a large table on the S3 model, in both engines, against the
assessment's estimate.

    .venv/bin/python -m benchmarks.verify_bench                  # make bench-verify (100,000 files)
    .venv/bin/python -m benchmarks.verify_bench --files 5000 --no-record   # a quick look

A synthetic table of `--files` data files (`benchmarks.synthetic_table`: a fast append of 1,000
files a snapshot) is published to the S3 model's source bucket (`benchmarks/s3_model.py`, its own
process; limits and latency off while it is seeded) and migrated to its target bucket by
`migrate_table` with a copy record, as the Copy step keeps one. Then, with the model's limits and
latency on and its counts reset, the target's files are checked against the record
(`icelake.migrate.check.proved.proved_files`, what the Verify step and the Glue job run):
- the Lambda engine: the chunks on 16 threads of this process (the Verify Lambda's);
- the Glue engine: the chunks and the manifests' reads on Spark tasks (`SparkRunner`, local[2]).

Requests: the model's own counts (HEAD, GET, LIST on the target bucket) must equal
`proof_requests` for the files the check proved by a HEAD and by the listing (asserted): LISTs
are the listing's pages, `listing_pages(files)` (about files / 1,000), and the HEADs and GETs the
metadata's constant: the metadata.json, its logged versions, each manifest list and manifest.

Time: `measured_s` is the check's wall time; `estimated_s` is the assessment's
(`verify_estimate.verify_seconds` on `VerifyWork.of_plan` of the table's plan, as the assessment
calls it), with the S3 model's parameters as a ThroughputModel measured in the run against the
model (`benchmarks.throughput_probe`: latencies, list_key_s and its client's part
list_key_client_s; manifest_entry_s on one of the table's
manifests), no Lambda start (a local run has none). The Glue engine's start is its two Spark
jobs (the manifests' reads, the files' chunks), each measured in the run as an empty job on the
warmed session: a real job's start (glue_startup_s, 30 to 120 s) holds them and its workers'
imports. Goal: within 20 %, both engines. `cpu_passes` is the Lambda engine's process CPU over
the files' entries at manifest_entry_s (the estimate holds the decode and the driver's work at
DECODE_PASSES + DRIVER_PASSES of them, the listing's keys at list_key_client_s each); `phases_s` times
the spread phases (the manifests' reads, the files' chunks).

The last line is one JSON object; without --no-record it is kept in benchmarks/results/ and a
row per engine goes to benchmarks/RESULTS.md ("Verify at scale").
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.copy_bench import REGION, TARGET_BUCKET, _client, build_and_publish
from benchmarks.results_md import record_row, run_facts
from benchmarks.s3_model import ModelProcess, start_model
from benchmarks.s3_throttle import ModelConfig

BENCH_DIR = Path(__file__).resolve().parent
GOAL = 0.20  # the estimate within 20 % of the measured time
TARGET = f"s3://{TARGET_BUCKET}/lake/db/t"
console = Console(stderr=True)


def migrate_with_record(source: str) -> tuple[str, Any]:
    """The table copied to the target as the Copy step does, its record kept (limits off)."""
    from icelake.aws.fileio import S3FileIO
    from icelake.migrate import migrate_table
    from icelake.migrate.check.record import Proof, Record, RecordBuilder
    from icelake.migrate.settings import EngineSettings

    proofs = RecordBuilder()
    settings = EngineSettings(workers=32, lock_target=False, record=proofs)
    result = migrate_table(
        source, TARGET, src_io=S3FileIO(_client()), dst_io=S3FileIO(_client()), settings=settings
    )
    table = proofs.table()
    columns = [table.column(name).to_pylist() for name in table.schema.names]
    return result.target_metadata_location, Record(Proof(*row) for row in zip(*columns, strict=True))


def assessed_work(source: str) -> Any:
    """What the assessment's estimate reads of the table: its plan, to an empty target."""
    from icelake.assess.estimate.verify_estimate import VerifyWork
    from icelake.aws.fileio import S3FileIO
    from icelake.migrate.plan.build import build_plan
    from icelake.migrate.settings import EngineSettings

    empty = f"s3://{TARGET_BUCKET}/estimate/db/t"
    plan = build_plan(source, empty, [], S3FileIO(_client()), S3FileIO(_client()), settings=EngineSettings())
    return VerifyWork.of_plan(plan)


def spark_job_s(spark: Any) -> float:
    """A Spark job's own cost on the local session, once its Python workers have imported the
    check and opened the target's FileIO (a Glue job's workers do so in its start): an empty job
    over as many tasks as the runner makes, the median of three, after one that warms the workers
    (a manifest read of a key that is not there, in each task)."""
    from icelake.migrate.check.proof_chunks import judged
    from icelake.migrate.check.proved import manifest_files
    from icelake.migrate.copy.distributed import SparkRunner, executor_spec

    runner = SparkRunner(spark.sparkContext)
    items = list(range(runner.slices))
    warm = partial(manifest_files, executor_spec(TARGET).open)
    runner.map("warm", warm, [f"{TARGET}/warm-{i}.avro" for i in items])
    times = []
    for _ in range(3):
        started = time.monotonic()
        runner.map("empty", partial(judged, [], {}), items)
        times.append(time.monotonic() - started)
    return sorted(times)[1]


def calibrated(
    model: ModelProcess, config: ModelConfig, manifest: Path, local_cores: int, job_s: float
) -> Any:
    """The model's S3 as a ThroughputModel, measured now against it (latency on, limits off),
    and the Glue engine's start as its two Spark jobs' cost (the manifests' reads, the files)."""
    from icelake.throughput import ThroughputModel

    from benchmarks.throughput_probe import entry_seconds, probe

    model.configure(reset=True, latency=True)
    s3 = _client()
    s3.create_bucket(Bucket="calibration")
    measured = probe(s3, "calibration", 100, 1)
    return ThroughputModel(
        name="benchmarks/s3_model.py, probed in the run",
        measured=f"benchmarks.throughput_probe against the S3 model {json.dumps(config.summary())}",
        latency_s=measured["latency_s"],
        list_key_s=measured["list_key_s"],
        list_key_client_s=measured["list_key_client_s"],
        manifest_entry_s=entry_seconds(str(manifest), manifest.read_bytes()),
        lambda_parallel=16,
        glue_workers=max(2, local_cores),
        glue_threads_per_worker=8,
        glue_startup_s=round(2 * job_s, 3),
        lambda_start_s=0.0,
        prefix_write_per_s=config.per_prefix_writes_per_s or 1e9,
        prefix_read_per_s=config.per_prefix_reads_per_s or 1e9,
    )


class PhaseTimes:
    """A ProgressSink: each spread phase's seconds (the manifests' reads, the files' chunks), from
    its start to its last item done."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.seconds: dict[str, float] = {}

    def start(self, phase: str, total: int) -> None:
        self.started[phase] = time.monotonic()

    def advance(self, phase: str, amount: int = 1) -> None:
        self.seconds[phase] = round(time.monotonic() - self.started[phase], 2)


def verify_once(engine: str, metadata: str, record: Any, spark: Any) -> tuple[Any, float, float, PhaseTimes]:
    """The check in `engine`: (its ProofCheck, wall seconds, this process's CPU seconds, the
    spread phases' seconds)."""
    from icelake.aws.fileio import S3FileIO
    from icelake.migrate.check.proved import HEAD_THREADS, proved_files
    from icelake.migrate.copy.engine import ThreadRunner

    io = S3FileIO(_client())
    phases = PhaseTimes()
    started, cpu = time.monotonic(), time.process_time()
    if engine == "lambda":
        check = proved_files(io, metadata, record, runner=ThreadRunner(HEAD_THREADS, phases))
    else:
        from icelake.migrate.copy.distributed import SparkRunner, executor_spec

        runner = SparkRunner(spark.sparkContext, phases)
        check = proved_files(io, metadata, record, runner=runner, open_io=executor_spec(TARGET).open)
    return check, time.monotonic() - started, time.process_time() - cpu, phases


def counted(stats: dict[str, Any]) -> tuple[dict[str, int], int]:
    """The model's requests to the target bucket that it answered (by the estimate's kinds), and
    the SlowDowns it answered instead (each sent again by the client's pacing)."""
    kinds = {"HEAD": "head", "GET": "get", "LIST": "list"}
    out = dict.fromkeys(kinds.values(), 0)
    slowed = 0
    for kind, by_prefix in stats["requests"].items():
        refused = stats["slowdowns"].get(kind, {})
        for prefix, n in by_prefix.items():
            if kind in kinds and prefix.startswith(TARGET_BUCKET + "/"):
                out[kinds[kind]] += n - refused.get(prefix, 0)
                slowed += refused.get(prefix, 0)
    return out, slowed


def run(args: argparse.Namespace) -> dict[str, Any]:
    from icelake.assess.estimate.verify_estimate import VerifyWork, verify_requests, verify_seconds
    from icelake.migrate.check.proof_chunks import listing_pages

    from benchmarks.estimate_pairs import a_data_manifest

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    model_args = ["--seed", str(args.seed), "--reads-per-s", str(args.reads_per_s)]
    with start_model(*model_args) as model:
        config = model.use(REGION)
        source = build_and_publish(work, args.files, 8, 0.3, model, max(1, args.files // 1000))
        assessed = assessed_work(source)
        console.print(f"migrating {args.files:,} files to the target, with the copy record ...")
        metadata, record = migrate_with_record(source)
        metadata_dir = next(p for p in (work / "warehouse").rglob("metadata") if p.is_dir())
        manifest = a_data_manifest(str(metadata_dir))
        from icelake.local.spark import local_spark

        spark = local_spark({}, app_name="icelake-verify-bench") if "glue" in args.engines else None
        cores = int(spark.sparkContext.defaultParallelism) if spark is not None else 1
        job_s = spark_job_s(spark) if spark is not None else 0.0
        throughput = calibrated(model, config, manifest, cores, job_s)
        out: dict[str, Any] = {
            "files": args.files,
            "model": config.summary(),
            "throughput": throughput.model_dump(mode="json"),
            "assessed_work": vars(assessed),
            "engines": {},
        }
        for engine in args.engines:
            model.restart(config)
            console.print(f"{engine}: verifying ...")
            check, wall, cpu, phases = verify_once(engine, metadata, record, spark)
            if check.problems:
                raise SystemExit(f"{engine}: the intact target was found damaged: {check.problems[:3]}")
            sent, slowdowns = counted(model.stats())
            work_done = VerifyWork(
                check.files - check.heads - assessed.lists - assessed.manifests,
                check.files - check.heads,
                check.heads,
                assessed.lists,
                assessed.manifests,
            )
            formula = verify_requests(work_done)
            if sent != formula:  # said, and the bench fails at its end (its other figures kept)
                console.print(
                    f"[red]{engine}: the model answered {sent}, proof_requests says {formula}[/red]"
                )
            estimated = verify_seconds(assessed, throughput, glue=engine == "glue")
            low, high = (verify_seconds(assessed, m, glue=engine == "glue") for m in throughput.bounds())
            fig = {
                "measured_s": round(wall, 2),
                "estimated_s": round(estimated, 2),
                "estimated_range_s": [round(low, 2), round(high, 2)],
                "ratio": round(wall / estimated, 3),
                "requests": sent,
                "requests_as_formula": sent == formula,
                "slowdowns": slowdowns,
                "files_by_listing": check.files - check.heads,
                "files_by_head": check.heads,
                "ranges": check.ranges,
                "list_pages_expected": listing_pages(check.files - check.heads),
                "constant": sent["head"] + sent["get"],
                "process_cpu_s": round(cpu, 2),
                "phases_s": phases.seconds,
            }
            if engine == "lambda":
                fig["cpu_passes"] = round(cpu / (args.files * throughput.manifest_entry_s), 2)
            out["engines"][engine] = fig
            console.print(
                f"  {wall:.1f} s measured, {estimated:.1f} s estimated (ratio {fig['ratio']}); "
                f"requests {sent} = LIST pages {fig['list_pages_expected']} + {fig['constant']}"
            )
        if spark is not None:
            spark.stop()
    out["assessed_requests"] = verify_requests(assessed)
    out["goal"] = {
        e: abs(f["ratio"] - 1) <= GOAL and f["requests_as_formula"] for e, f in out["engines"].items()
    }
    shutil.rmtree(work, ignore_errors=True)
    return out


def record(res: dict[str, Any]) -> None:
    facts = run_facts()
    path = BENCH_DIR / "results" / f"verify-{res['files']}-{facts['date']}-{facts['commit']}.json"
    path.write_text(json.dumps({**res, **facts}, indent=2) + "\n")
    section = (
        "`python -m benchmarks.verify_bench` (its docstring says how): the metadata tier's check "
        "of every file against the copy record on the S3 model, in each engine, against the "
        "assessment's estimate (`icelake/assess/estimate/verify_estimate.py`) with the model's "
        "parameters probed in the run. Requests are the model's counts on the target bucket, "
        "asserted equal to `proof_requests` (the SlowDowns the model answered, sent again by the pacing, "
        "apart): LIST = the listing's pages (about files / 1,000), "
        "HEAD + GET = the metadata's constant (the metadata.json, its logged versions, each "
        "manifest list and manifest, a HEAD and a GET each but the logged versions'). Goal: "
        "the estimate within 20 %.\n\n"
        "| date | commit | engine | files | requests (HEAD/GET/LIST) | constant | SlowDowns sent again | "
        "measured s | estimated s (range) | ratio | load |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    for engine, f in res["engines"].items():
        r = f["requests"]
        low, high = f["estimated_range_s"]
        row = (
            f"| {facts['date']} | {facts['commit']} | {engine} | {res['files']:,} | "
            f"{r['head']}/{r['get']}/{r['list']} | {f['constant']} | {f['slowdowns']} | {f['measured_s']} | "
            f"{f['estimated_s']} ({low}-{high}) | {f['ratio']} | {facts['load_average']} |"
        )
        record_row(BENCH_DIR / "RESULTS.md", "## Verify at scale", section, row)
    console.print(f"recorded {path.relative_to(BENCH_DIR.parent)} and a row per engine in RESULTS.md")


def main(argv: list[str] | None = None) -> None:
    d = ModelConfig()
    ap = argparse.ArgumentParser(prog="python -m benchmarks.verify_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--reads-per-s", type=float, default=d.per_prefix_reads_per_s)
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--engines", default="lambda,glue", type=lambda s: s.split(","))
    ap.add_argument("--work", default=str(BENCH_DIR / ".work" / "verify"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args(argv)
    res = run(args)
    if not args.no_record:
        record(res)
    failed = [e for e, ok in res["goal"].items() if not ok]
    print(json.dumps(res))
    if failed:
        raise SystemExit(
            f"requests off the formula, or the estimate more than {GOAL:.0%} off: {', '.join(failed)}"
        )


if __name__ == "__main__":
    main()
