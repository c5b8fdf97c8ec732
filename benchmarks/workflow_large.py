"""One large table through the migration state machine on embedded AWS, each step measured
against the limits AWS would hold it to.

    .venv/bin/python -m benchmarks.workflow_large                 # 100,000 data files (make bench-large)
    .venv/bin/python -m benchmarks.workflow_large --files 25000   # a quicker run (still over the
                                                                   # Glue threshold)

The table is built through the Iceberg Java API in its own process (metadata of `files / 1000`
fast appends; every data file exists, `--file-size` bytes), published to the source account's
bucket, and migrated by the real state machine with `validation: metadata`: Inventory, Plan, the
Glue job (plan, rewrite, copy), Register and Validate run as they would in AWS.

For every Lambda invocation the embedded runtime records its duration and the peak resident memory
of the process while it ran (`lambda_runtime.recording_invocations`). The process also holds the
embedded services and their objects, so a handler's own need is estimated as what its call added
to the process (peak minus resident before) plus what its package costs in a fresh interpreter
(imported alone, as a Lambda cold start does). Both are compared with the function's deployed
memory and timeout (`constants.STEP_LIMITS`), and each response with the 256 KiB a Step Functions
state may pass on. The Glue run is timed against its job's timeout.

The last line printed is one JSON object (files, workflow_s, and per step: invocations, max_s,
timeout_s, est_memory_mib, memory_mb, max_response_kib). Recorded in
benchmarks/results/workflow-large-<files>-<date>-<commit>.json and WORKFLOW_RESULTS.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from rich.console import Console
from rich.table import Table

from benchmarks.estimate_pairs import (
    a_data_manifest,
    assessed_estimate,
    calibrated_throughput,
    embedded_throughput,
    misses,
    paired,
    plan_step_start,
    print_pairs,
    with_measured_start,
)
from benchmarks.results_md import record_row, saved_result
from benchmarks.synthetic_table import build_in_own_process, large_table_parser

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
STATE_PAYLOAD_LIMIT = 256 * 1024  # bytes a Step Functions state may pass to the next
console = Console(stderr=True)


def build_table(work: Path, files: int, file_size: int) -> dict[str, Any]:
    """The synthetic table, built by `benchmarks.synthetic_table` in its own JVM and process."""
    return build_in_own_process(work / "warehouse", files, max(1, files // 1000), file_size)


def package_baseline_mib(handler_file: str, environment: dict[str, str]) -> float:
    """Peak resident memory of a fresh interpreter that imports only this handler (its cold start).
    Read from the process's own high-water mark: getrusage's ru_maxrss keeps, across exec, the
    size of the process that forked it (this benchmark, with all of embedded AWS in it)."""
    code = (
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        f"spec = importlib.util.spec_from_file_location('handler', {str(REPO / handler_file)!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "from icelake.local.process_memory import peak_rss_mib\n"
        "print(peak_rss_mib())\n"
    )
    env = {**os.environ, **environment, "AWS_DEFAULT_REGION": "us-east-1"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def run(files: int, file_size: int, work: Path, *, calibrate: bool = True) -> dict[str, Any]:
    from icelake.constants import GLUE_MIGRATE_JOB, LAMBDA_STEPS
    from icelake.local.deploy import deploy_migration_workflow
    from icelake.local.embedded import run_execution, start_embedded_aws
    from icelake.local.lake import build_lake
    from icelake.local.lambda_runtime import recording_invocations
    from icelake.local.spark import local_spark
    from icelake.workflow.client import read_report

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    console.print(f"building a table of {files:,} data files ...")
    built = build_table(work, files, file_size)
    console.print(
        f"  {built['data_files']:,} files in {built['snapshots']} snapshots, {built['build_seconds']} s"
    )
    step_of = {name: step for step, (name, _path, _ph) in LAMBDA_STEPS.items()}
    with start_embedded_aws(REPO):
        deployment = deploy_migration_workflow()
        lake = build_lake(work / "lake", orchestrator_resources=False)
        console.print("publishing it to the source account's bucket ...")
        started = time.monotonic()
        lake.publish("bench", "large", built["current_metadata"], direct=True)  # seeded: not measured
        publish_s = round(time.monotonic() - started, 1)
        console.print(f"  {publish_s} s")
        local_spark({}, app_name="icelake-bench-workflow-large")  # the Glue job's session, started
        # 300 requests a kind: the probe's medians of 100 moved by a fifth between quiet runs
        manifest = a_data_manifest(built["metadata_dir"])
        model = calibrated_throughput(300, manifest) if calibrate else embedded_throughput()
        request = lake.request(
            "large-1",
            selection={"tables": ["bench.large"]},
            options={"concurrency": 1, "validation": "metadata", "throughput": model},
        )
        console.print("assessing it (mode assess, the embedded AWS's throughput model) ...")
        estimate = assessed_estimate(deployment, lake, request, "large-assess")
        step_start = plan_step_start(deployment, lake, model) if calibrate else None
        if step_start is not None:
            estimate, model = with_measured_start(estimate, model, step_start["start_s"])
        console.print("running the migration state machine ...")
        with recording_invocations() as calls:
            started = time.monotonic()
            result = run_execution(deployment.state_machine_arn, request, timeout=4 * 3600, name="large-1")
            workflow_s = round(time.monotonic() - started, 1)
        if result.status != "SUCCEEDED":
            raise SystemExit(f"the execution ended {result.status}: {result.failure()}")
        (outcome,) = read_report(result.output["report_uri"])["tables"]
        if outcome["status"] != "migrated":
            raise SystemExit(f"the table was not migrated: {json.dumps(outcome)[:2000]}")
        lam = boto3.client("lambda")
        configs = {
            n: lam.get_function_configuration(FunctionName=n) for n in {c.function_name for c in calls}
        }
        glue = boto3.client("glue")
        job = glue.get_job(JobName=GLUE_MIGRATE_JOB)["Job"]
        runs = glue.get_job_runs(JobName=GLUE_MIGRATE_JOB)["JobRuns"]

    by_step: dict[str, list[Any]] = defaultdict(list)
    for call in calls:
        by_step[step_of.get(call.function_name, call.function_name)].append(call)
    steps: dict[str, dict[str, Any]] = {}
    for step, step_calls in by_step.items():
        name = step_calls[0].function_name
        handler = LAMBDA_STEPS[step][1]
        baseline = package_baseline_mib(handler, configs[name].get("Environment", {}).get("Variables", {}))
        added = max(c.peak_rss_mib - c.rss_before_mib for c in step_calls)
        steps[step] = {
            "engine": "lambda",
            "invocations": len(step_calls),
            "total_s": round(sum(c.seconds for c in step_calls), 2),
            "max_s": round(max(c.seconds for c in step_calls), 2),
            "timeout_s": step_calls[0].timeout_seconds,
            "package_mib": round(baseline, 1),
            "added_mib": round(added, 1),
            "est_memory_mib": round(baseline + added, 1),
            "memory_mb": step_calls[0].memory_limit_mb,
            "max_response_kib": round(max(c.response_bytes for c in step_calls) / 1024, 1),
            "errored": sum(c.errored for c in step_calls),
        }
    steps["glue job"] = {
        "engine": "glue",
        "invocations": len(runs),
        "total_s": sum(r.get("ExecutionTime", 0) for r in runs),
        "max_s": max((r.get("ExecutionTime", 0) for r in runs), default=0),
        "timeout_s": job["Timeout"] * 60,
        "states": sorted({r["JobRunState"] for r in runs}),
    }
    return {
        "files": built["data_files"],
        "snapshots": built["snapshots"],
        "file_size": file_size,
        "build_s": built["build_seconds"],
        "publish_s": publish_s,
        "workflow_s": workflow_s,
        "engines": outcome.get("engines"),
        "files_copied": outcome.get("files_copied"),
        "validation": outcome.get("validation"),
        "steps": steps,
        "estimate_engine": estimate["engine"],
        "estimate_model": model,
        "assessed": estimate,
        "step_start": step_start,
        "estimate": paired(estimate, outcome),
    }


def print_steps(res: dict[str, Any]) -> None:
    table = Table(title=f"{res['files']:,} data files through the state machine in {res['workflow_s']} s")
    for col in ("step", "calls", "max s", "timeout s", "est. memory MiB", "memory MB", "response KiB"):
        table.add_column(col, justify="left" if col == "step" else "right")
    for step, s in res["steps"].items():
        if s["engine"] == "glue":
            table.add_row(
                step, str(s["invocations"]), str(s["max_s"]), str(s["timeout_s"]), "not measured", "", ""
            )
            continue
        table.add_row(
            step,
            str(s["invocations"]),
            str(s["max_s"]),
            str(int(s["timeout_s"])),
            f"{s['est_memory_mib']} ({s['package_mib']} + {s['added_mib']})",
            str(s["memory_mb"]),
            f"{s['max_response_kib']} / {STATE_PAYLOAD_LIMIT // 1024}",
        )
    console.print(table)


def within_limits(res: dict[str, Any]) -> list[str]:
    """The steps that went past a limit (empty: every step fits)."""
    over = []
    for step, s in res["steps"].items():
        if s["max_s"] > s["timeout_s"]:
            over.append(f"{step}: {s['max_s']} s of {s['timeout_s']} s")
        if s["engine"] == "lambda" and s["est_memory_mib"] > s["memory_mb"]:
            over.append(f"{step}: about {s['est_memory_mib']} MiB of {s['memory_mb']} MB")
        if s["engine"] == "lambda" and s["max_response_kib"] * 1024 > STATE_PAYLOAD_LIMIT:
            over.append(f"{step}: a {s['max_response_kib']} KiB response")
    return over


def record(res: dict[str, Any]) -> Path:
    day, commit, path = saved_result("workflow-large", res)
    steps = "; ".join(
        f"{step} {s['max_s']}/{int(s['timeout_s'])} s"
        + (f", {s['est_memory_mib']}/{s['memory_mb']} MiB" if s["engine"] == "lambda" else "")
        for step, s in res["steps"].items()
    )
    row = (
        f"| {day} | {commit} | {res['files']:,} | {res['workflow_s']} | {steps} | "
        f"{', '.join(res['over_limits']) or 'none'} |"
    )
    section = (
        "`python -m benchmarks.workflow_large` (see its docstring): per step, the "
        "longest call against its timeout and the estimated memory (package in a fresh "
        "interpreter + what the call added) against its memory size.\n\n"
        "| date | commit | data files | workflow s | steps (s / timeout, MiB / memory) | over a limit |\n"
        "|---|---|---|---|---|---|\n"
    )
    record_row(BENCH_DIR / "WORKFLOW_RESULTS.md", "## One large table", section, row)
    return path


def main(argv: list[str] | None = None) -> None:
    ap = large_table_parser(
        "python -m benchmarks.workflow_large", __doc__ or "", BENCH_DIR / ".work" / "workflow-large"
    )
    ap.add_argument(
        "--shipped-model",
        action="store_true",
        help="estimate with icelake/throughput/embedded.json as shipped, not a model measured in the run",
    )
    args = ap.parse_args(argv)
    res = run(args.files, args.file_size, Path(args.work_dir).resolve(), calibrate=not args.shipped_model)
    res["recorded_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    res["over_limits"] = within_limits(res)
    print_steps(res)
    print_pairs(console, res["estimate"], f"the assessment's estimate ({res['estimate_engine']}) and the run")
    res["estimate_misses"] = misses(res["estimate"])
    if not args.no_record:
        console.print(f"recorded {record(res).relative_to(REPO)} and benchmarks/WORKFLOW_RESULTS.md")
    shutil.rmtree(args.work_dir, ignore_errors=True)
    summary = {"files": res["files"], "workflow_s": res["workflow_s"], "over_limits": res["over_limits"]}
    summary["estimate"] = res["estimate"]
    summary["estimate_misses"] = res["estimate_misses"]
    summary["steps"] = {
        step: {
            k: s[k] for k in ("invocations", "max_s", "timeout_s", "est_memory_mib", "memory_mb") if k in s
        }
        for step, s in res["steps"].items()
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
