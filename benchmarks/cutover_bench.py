"""The write freeze of a cutover, measured, and no write stranded after it (issue 43).

    .venv/bin/python -m benchmarks.cutover_bench                  # 100,000 data files (make bench-cutover)
    .venv/bin/python -m benchmarks.cutover_bench --files 2000     # a quicker run

On embedded AWS through the real state machine: a synthetic table (`benchmarks.synthetic_table`,
metadata of `files / 1000` fast appends, every data file present) is published to the source
account and migrated (mode full); it then gets 3 commits (pyiceberg appends), and the writers
stop: `freeze_s` runs from the last source commit published to the end of the cutover run that
promotes the table, and `freeze_by_step` says where it went (Plan, Copy in a Lambda or the Glue job,
Register, Validate with the proof that the source did not move, and the rest: Inventory, Report,
Step Functions). The embedded Glue job starts at once: a real Glue job run adds its start-up (tens
of seconds), which `freeze_s` does not hold. Then a late writer appends to the old table: the next
run must end it `stranded`; a carry-over must bring the row (`carried_rows`); a second carry-over
must carry nothing; and the run after that must end it `promoted`.

The last line printed is one JSON object: files, freeze_s, freeze_by_step, stranded_detected,
carried_rows, recarried_rows, after. Recorded in benchmarks/results/cutover-<files>-<date>-<commit>.json
and benchmarks/RESULTS.md.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import estimate_pairs as pairs
from benchmarks.results_md import record_row, saved_result
from benchmarks.synthetic_table import build_in_own_process, large_table_parser

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
console = Console(stderr=True)
DATABASE, TABLE = "bench", "cutover"


class Writer:
    """The source table's writers: Spark appends to the local table (the Glue job's session, with
    the synthetic table's Hadoop catalog added), then published to the source account's bucket
    (what the writers' own commits would leave there)."""

    def __init__(self, lake: Any, spark: Any, warehouse: Path) -> None:
        self.lake = lake
        self.spark = spark
        for key, value in {
            "": "org.apache.iceberg.spark.SparkCatalog",
            ".type": "hadoop",
            ".warehouse": str(warehouse),
        }.items():
            spark.conf.set(f"spark.sql.catalog.synthetic{key}", value)
        self.next_id = 10**12

    def append(self, rows: int) -> str:
        """One commit of `rows` rows; returns the source metadata location it published."""
        start, self.next_id = self.next_id, self.next_id + rows
        self.spark.sql(
            "INSERT INTO synthetic.db.t SELECT id, TIMESTAMP '2024-06-01 00:00:00', id, 'late', 'NEW', "
            f"'FR', CAST(1.00 AS DECIMAL(12, 2)), 1, 0.0, NULL FROM range({start}, {start + rows})"
        )
        (latest,) = self.spark.sql(
            "SELECT file FROM synthetic.db.t.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
        ).collect()
        # Only what the commit added (the whole table again would re-check every file it holds)
        return str(self.lake.publish(DATABASE, TABLE, latest[0], incremental=True, direct=True))


MODEL: dict[str, Any] = {}  # the throughput model the requests carry (measured in the run)


def _request(lake: Any, run_id: str, mode: str) -> dict[str, Any]:
    request: dict[str, Any] = lake.request(run_id, mode=mode, selection={"tables": [f"{DATABASE}.{TABLE}"]})
    options = {"concurrency": 1, "validation": "metadata", "throughput": MODEL or pairs.embedded_throughput()}
    request["options"] = {**request["options"], **options}
    return request


def _run(deployment: Any, lake: Any, run_id: str, mode: str) -> tuple[dict[str, Any], float, list[Any]]:
    """One execution of the state machine: (the table's outcome, seconds, Lambda invocations)."""
    from icelake.local.embedded import run_execution
    from icelake.local.lambda_runtime import recording_invocations
    from icelake.workflow.client import read_report

    request = _request(lake, run_id, mode)
    with recording_invocations() as calls:
        started = time.monotonic()
        result = run_execution(deployment.state_machine_arn, request, timeout=4 * 3600, name=run_id)
        seconds = time.monotonic() - started
    if result.status != "SUCCEEDED":
        raise SystemExit(f"{run_id} ended {result.status}: {result.failure()}")
    (outcome,) = read_report(result.output["report_uri"])["tables"]
    load = os.getloadavg()[0]  # other work on the machine stretches every figure: said beside them
    console.print(f"  {run_id} ({mode}): {outcome['status']} in {seconds:.1f} s (load average {load:.1f})")
    outcome["load_average"] = round(load, 1)
    return outcome, seconds, list(calls)


def _entries_per_commit(lake: Any, metadata_location: str, commits: int) -> float | None:
    """The manifest entries the source's last `commits` commits wrote, as the assessment counts
    them (icelake/assess/gather/commit_entries.py)."""
    from datetime import UTC, datetime

    from icelake.assess.gather.commit_entries import entries_per_commit
    from icelake.aws.fileio import S3FileIO
    from icelake.migrate.plan.reads import read_metadata

    io = S3FileIO(lake.source.client("s3"))
    meta = read_metadata(io, metadata_location)[0]
    return entries_per_commit(meta, io, datetime.now(UTC), sample=commits)


def _by_step(calls: list[Any], glue_s: float, total: float) -> dict[str, float]:
    """Seconds per step of one run; `rest`: what no step holds (Inventory, Report, the Map)."""
    from icelake.constants import LAMBDA_STEPS

    step_of = {name: step for step, (name, _path, _ph) in LAMBDA_STEPS.items()}
    out: dict[str, float] = defaultdict(float)
    for call in calls:
        out[step_of.get(call.function_name, call.function_name)] += call.seconds
    steps = {s: round(out.pop(s, 0.0), 2) for s in ("plan", "copy", "register", "validate")}
    steps["copy"] = round(steps["copy"] + glue_s, 2)  # one of the two engines copies
    steps["rest"] = round(max(0.0, total - sum(steps.values())), 2)
    return steps


@contextmanager
def profiling_handlers(directory: Path | None) -> Iterator[None]:
    """With a directory: each handler call of the block under cProfile (the handler's own thread;
    its pools' threads show as waits), one `<n>-<function>.pstats` a call, to trace where a step's
    seconds go. Without one: nothing."""
    if directory is None:
        yield
        return
    import cProfile

    from icelake.local import lambda_runtime

    directory.mkdir(parents=True, exist_ok=True)
    real = lambda_runtime._call
    counter = iter(range(10**6))

    def profiled(handler_file: Path, attr: str, event: Any, context: Any) -> Any:
        profile = cProfile.Profile()
        try:
            return profile.runcall(real, handler_file, attr, event, context)
        finally:
            profile.dump_stats(directory / f"{next(counter):03d}-{context.function_name}.pstats")

    lambda_runtime._call = profiled
    try:
        yield
    finally:
        lambda_runtime._call = real


def run(files: int, file_size: int, work: Path, profile: Path | None = None) -> dict[str, Any]:
    import boto3
    from icelake.constants import GLUE_MIGRATE_JOB
    from icelake.local.deploy import deploy_migration_workflow
    from icelake.local.embedded import start_embedded_aws
    from icelake.local.lake import build_lake
    from icelake.local.spark import local_spark

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    console.print(f"building a table of {files:,} data files ...")
    built = build_in_own_process(work / "warehouse", files, max(1, files // 1000), file_size)
    with start_embedded_aws(REPO):
        deployment = deploy_migration_workflow()
        lake = build_lake(work / "lake", orchestrator_resources=False)
        lake.publish(DATABASE, TABLE, built["current_metadata"], direct=True)  # seeded: not measured
        spark = local_spark({}, app_name="icelake-bench-cutover")  # the Glue job's session, started
        MODEL.update(pairs.calibrated_throughput(manifest=pairs.a_data_manifest(built["metadata_dir"])))
        # The assessment's estimate of the first migration, set beside what it measured (issue 45)
        estimate = pairs.assessed_estimate(deployment, lake, _request(lake, "assess-1", "assess"), "assess-1")
        estimate, started = pairs.with_measured_start(estimate, MODEL)
        MODEL.update(started)
        migrated, full_s, _ = _run(deployment, lake, "full-1", "full")
        writer = Writer(lake, spark, work / "warehouse")
        for _ in range(3):
            last = writer.append(10)
        stopped = time.monotonic()  # the last source commit is published: writers stop here
        glue = boto3.client("glue")
        glue_before = {r["Id"] for r in glue.get_job_runs(JobName=GLUE_MIGRATE_JOB)["JobRuns"]}
        with profiling_handlers(profile):
            promoted, _cutover_s, calls = _run(deployment, lake, "cutover-1", "cutover")
        freeze_s = round(time.monotonic() - stopped, 2)
        glue_runs = [
            r for r in glue.get_job_runs(JobName=GLUE_MIGRATE_JOB)["JobRuns"] if r["Id"] not in glue_before
        ]
        glue_s = float(sum(r.get("ExecutionTime", 0) for r in glue_runs))
        # The assessment's freeze for the change the cutover met (3 commits, their files and the
        # manifest entries they wrote, as the assessment counts them), under the model measured in
        # the run
        entries = _entries_per_commit(lake, last, 3)
        predicted = pairs.freeze_estimate(
            MODEL, 3, int(promoted.get("files_copied", 0)), int(promoted.get("bytes_copied", 0)), entries
        )
        writer.append(1)  # a late writer, after promotion
        stranded, _, _ = _run(deployment, lake, "sync-late", "incremental")
        carried, _, _ = _run(deployment, lake, "carry-1", "carry_over")
        again, _, _ = _run(deployment, lake, "carry-2", "carry_over")
        after, _, _ = _run(deployment, lake, "sync-after", "incremental")
    return {
        "files": built["data_files"],
        "file_size": file_size,
        "full_s": round(full_s, 1),
        "full_status": migrated["status"],
        "full_estimate_engine": estimate["engine"],
        "full_estimate": pairs.paired(estimate, migrated),
        # What the estimate was made of, so a later model can be set beside the same measurement
        "full_assessed": estimate,
        "estimate_model": dict(MODEL),
        "full_outcome": {
            k: migrated.get(k) for k in ("engines", "duration_s", "requests_by_phase", "load_average")
        },
        "cutover_load_average": promoted["load_average"],
        "cutover_status": promoted["status"],
        "cutover_engines": promoted.get("engines"),
        "cutover_sync": promoted.get("sync"),
        "freeze_s": freeze_s,
        "freeze_by_step": _by_step(calls, glue_s, freeze_s),
        "freeze_estimate_s": predicted["freeze_s"],
        "freeze_estimate_range_s": predicted["freeze_range_s"],
        "freeze_estimate_by_step": predicted["freeze_by_step"],
        "freeze_estimate_entries": predicted["manifest_entries"],
        "freeze_ratio": round(freeze_s / predicted["freeze_s"], 3) if predicted["freeze_s"] else None,
        "glue_startup_s": "not included: the embedded Glue job starts at once",
        "stranded_detected": stranded["status"] == "stranded"
        and [c["operation"] for c in stranded.get("stranded", [])] == ["append"],
        "carried_rows": carried.get("carried_rows", 0) if carried["status"] == "promoted" else 0,
        "recarried_rows": again.get("carried_rows", 0),
        "after": after["status"],
    }


def record(res: dict[str, Any]) -> Path:
    day, commit, path = saved_result("cutover", res)
    steps = ", ".join(f"{k} {v}" for k, v in res["freeze_by_step"].items())
    row = (
        f"| {day} | {commit} | {res['files']:,} | {res['freeze_s']} | {steps} | {res['stranded_detected']} | "
        f"{res['carried_rows']} | {res['recarried_rows']} | {res['after']} |"
    )
    section = (
        "`python -m benchmarks.cutover_bench` (see its docstring): a table migrated "
        "through the state machine on embedded AWS gets 3 commits; freeze_s runs from the last one "
        "to the table promoted (a real Glue job run adds its start-up). Then a late append must end "
        "the next run stranded, a carry-over must bring its row, a second one nothing.\n\n"
        "| date | commit | data files | freeze s | by step (s) | stranded detected | carried rows "
        "| carried again | next run |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    heading = "## Cutover: the write freeze, and nothing stranded (make bench-cutover)"
    record_row(BENCH_DIR / "RESULTS.md", heading, section, row)  # before the prose that reads the runs
    return path


def main(argv: list[str] | None = None) -> None:
    ap = large_table_parser(
        "python -m benchmarks.cutover_bench", __doc__ or "", BENCH_DIR / ".work" / "cutover"
    )
    ap.add_argument("--profile", type=Path, help="a directory: profile the cutover run's handlers")
    args = ap.parse_args(argv)
    res = run(args.files, args.file_size, Path(args.work_dir).resolve(), args.profile)
    res["recorded_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    pairs.print_pairs(
        console, res["full_estimate"], f"the full migration: estimate ({res['full_estimate_engine']}) and run"
    )
    res["full_estimate_misses"] = pairs.misses(res["full_estimate"])
    if not args.no_record:
        console.print(f"recorded {record(res).relative_to(REPO)} and benchmarks/RESULTS.md")
    shutil.rmtree(args.work_dir, ignore_errors=True)
    keys = (
        "files",
        "freeze_s",
        "freeze_by_step",
        "freeze_estimate_s",
        "freeze_ratio",
        "stranded_detected",
        "carried_rows",
        "recarried_rows",
        "after",
        "full_estimate",
        "full_estimate_misses",
    )
    print(json.dumps({k: res[k] for k in keys}))


if __name__ == "__main__":
    main()
