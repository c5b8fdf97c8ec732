"""A sync costs the change, not the table (issue 42): `make bench-sync`.

    .venv/bin/python -m benchmarks.sync_bench                    # 1,000,000 files; the workflow at 100,000
    .venv/bin/python -m benchmarks.sync_bench --files 50000 --workflow-files 5000   # a quick run

Two parts, in one run:

- **Local `icelake migrate path`** on a synthetic table (`benchmarks.synthetic_table`: `--files`
  data files in one fast append per 1,000, every file present, 1 KiB, built through the Iceberg
  Java API in this process's JVM): the full migration of the table as it was `--commits` appends
  before its end, then the sync of those commits, then a run with nothing new. Each is measured in
  seconds and in the requests S3 would be sent for the same calls (HEAD, GET, LIST, counted by
  `RequestCountingIO`; plus a PUT per file written and a COPY per file copied), source and
  target together. Then Iceberg's own `rewrite_table_path` with `start_version` (the version
  `--commits` back) on the same table, in the same JVM, its best of two runs, against icelake's
  sync without its copies (plan plus rewrite, as `make bench-large` compares the full ones).
- **The workflow on embedded AWS** (`--workflow-files`, default 100,000): the table published to
  the source bucket as it was `--commits` appends before its end and migrated by the state
  machine (`validation: metadata`), then published whole and synced (mode incremental), then run
  again with nothing new: each run's seconds per step and the table's requests.

The last line is one JSON object: files, sync_vs_full_s, noop_vs_full_s,
sync_requests_per_changed_file, sync_constant_requests, rtp_incremental_vs_sync,
workflow_incremental_step_s, and the figures they come from. Goals (issue 42): sync_vs_full_s <=
0.03, noop_vs_full_s <= 0.01, sync_requests_per_changed_file <= 3 with sync_constant_requests <=
50, rtp_incremental_vs_sync >= 2, every step of the workflow's incremental run <= 10 s. Recorded in
benchmarks/results/sync-*.json and benchmarks/RESULTS.md ("Sync").
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.icelake_side import RequestCountingIO

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
FILES_PER_SNAPSHOT = 1000
FILE_SIZE = 1024
GOALS = {
    "sync_vs_full_s": ("<=", 0.03),
    "noop_vs_full_s": ("<=", 0.01),
    "sync_requests_per_changed_file": ("<=", 3.0),
    "sync_constant_requests": ("<=", 50),
    "rtp_incremental_vs_sync": (">=", 2.0),
    "workflow_incremental_max_step_s": ("<=", 10.0),
}
console = Console(stderr=True)


class PhaseClock:
    """A progress sink that remembers when each phase started: the copy's seconds are the time
    from its start to the next phase's."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, float]] = []

    def start(self, phase: str, total: int) -> None:
        self.starts.append((phase, time.monotonic()))

    def advance(self, phase: str, amount: int = 1) -> None:
        return None

    def by_phase(self, begin: float, end: float) -> dict[str, float]:
        """Seconds from the start to the first phase ("setup": the source metadata read, the
        base found), then per phase, to the next phase's start."""
        marks = [("setup", begin), *self.starts, ("end", end)]
        out: dict[str, float] = {}
        for a, b in itertools.pairwise(marks):
            out[a[0]] = round(out.get(a[0], 0.0) + b[1] - a[1], 3)
        return out

    def seconds_of(self, phase: str, end: float) -> float:
        marks = [*self.starts, ("end", end)]
        return sum(b[1] - a[1] for a, b in itertools.pairwise(marks) if a[0] == phase)


def local_run(source_metadata: str, target: Path) -> dict[str, Any]:
    """`icelake migrate path` as the CLI runs it (a sync from the target's last one when it holds
    one), with every request counted as S3 would be sent it."""
    from icelake.migrate import migrate_table
    from icelake.migrate.plan.since import Since
    from icelake.migrate.settings import EngineSettings

    src, dst = RequestCountingIO(), RequestCountingIO()
    clock = PhaseClock()
    started = time.monotonic()
    result = migrate_table(
        source_metadata,
        str(target),
        src_io=src,
        dst_io=dst,
        settings=EngineSettings(progress=clock, since=Since(from_target=True)),
    )
    ended = time.monotonic()
    requests = Counter(src.requests) + Counter(dst.requests)
    requests["PUT"] += result.files_rewritten
    requests["COPY"] += result.files_copied
    seconds = round(ended - started, 3)
    copy_s = round(clock.seconds_of("copy files", ended), 3)
    return {
        "sync": result.sync,
        "sync_reason": result.sync_reason,
        "seconds": seconds,
        "plan_rewrite_s": round(seconds - copy_s, 3),
        "copy_s": copy_s,
        "phase_s": clock.by_phase(started, ended),
        "requests": dict(requests),
        "requests_total": sum(requests.values()),
        "files_read": requests["GET"],
        "files_copied": result.files_copied,
        "files_rewritten": result.files_rewritten,
    }


def local_part(work: Path, files: int, commits: int) -> dict[str, Any]:
    from icelake.local.spark import local_spark

    from benchmarks.synthetic_table import build_with_progress_bar

    spark = local_spark({"sync": str(work / "warehouse")}, app_name="icelake-bench-sync", driver_memory="8g")
    snapshots = max(commits + 1, files // FILES_PER_SNAPSHOT)
    built = build_with_progress_bar(
        spark,
        "sync",
        console,
        snapshots=snapshots,
        files_per_snapshot=files // snapshots,
        partitions_per_snapshot=5,
        file_size=FILE_SIZE,
    )
    console.print(
        f"built {built.data_files:,} data files in {built.snapshots} snapshots, {built.build_seconds} s"
    )
    target = work / "target" / "db" / "t"
    before, after = built.metadata_after(snapshots - commits), built.metadata_after(snapshots)
    runs = {}
    for name, metadata in (("full", before), ("sync", after), ("noop", after)):
        os.sync()
        console.print(f"icelake migrate path: {name} ...")
        runs[name] = local_run(metadata, target)
        console.print(
            f"  {runs[name]['sync']}: {runs[name]['seconds']} s, {runs[name]['requests_total']:,} requests"
        )
    if runs["full"]["sync"] != "full" or runs["sync"]["sync"] != "incremental":
        raise SystemExit(f"unexpected plans: {runs['full']['sync_reason']} / {runs['sync']['sync_reason']}")
    rtp = []
    for i in range(2):
        console.print(f"iceberg rewrite_table_path start_version ({i + 1}/2) ...")
        os.sync()
        started = time.monotonic()
        spark.sql(
            "CALL sync.system.rewrite_table_path(table => 'db.t', "
            f"source_prefix => '{built.location}', target_prefix => '{work / f'target_iceberg_{i}'}', "
            f"start_version => '{before.rsplit('/', 1)[-1]}', end_version => '{after.rsplit('/', 1)[-1]}', "
            f"staging_location => '{work / f'staging_iceberg_{i}'}')"
        ).collect()
        rtp.append(round(time.monotonic() - started, 3))
        console.print(f"  {rtp[-1]} s")
    spark.stop()
    changed = commits * (files // snapshots)
    constant = runs["noop"]["requests_total"]
    return {
        "files": built.data_files,
        "snapshots": built.snapshots,
        "commits": commits,
        "changed_files": changed,
        "build_s": built.build_seconds,
        "local": runs,
        "rtp_incremental_runs_s": rtp,
        "sync_vs_full_s": round(runs["sync"]["seconds"] / runs["full"]["seconds"], 4),
        "noop_vs_full_s": round(runs["noop"]["seconds"] / runs["full"]["seconds"], 4),
        "sync_constant_requests": constant,
        "sync_requests_per_changed_file": round((runs["sync"]["requests_total"] - constant) / changed, 3),
        "rtp_incremental_vs_sync": round(min(rtp) / runs["sync"]["plan_rewrite_s"], 2),
    }


def workflow_part(work: Path, files: int, commits: int) -> dict[str, Any]:
    """The full run, the incremental run after `commits` appends and the run with nothing new,
    through the state machine on embedded AWS."""
    from icelake.local.deploy import deploy_migration_workflow
    from icelake.local.embedded import start_embedded_aws
    from icelake.local.lake import build_lake
    from icelake.local.spark import local_spark

    from benchmarks.synthetic_table import build_in_own_process

    snapshots = max(commits + 1, files // FILES_PER_SNAPSHOT)
    console.print(f"building a table of {files:,} data files for the workflow ...")
    built = build_in_own_process(work / "wf-warehouse", files, snapshots, FILE_SIZE)

    def version(n: int) -> str:
        return f"{built['metadata_dir']}/v{n + 1}.metadata.json"

    runs: dict[str, Any] = {}
    with start_embedded_aws(REPO):
        deployment = deploy_migration_workflow()
        lake = build_lake(work / "lake", orchestrator_resources=False)
        local_spark({}, app_name="icelake-bench-sync-workflow")  # the Glue job's session, started
        for name, at, mode in (
            ("full", snapshots - commits, "full"),
            ("incremental", snapshots, "incremental"),
            ("noop", snapshots, "incremental"),
        ):
            console.print(f"publishing the source at snapshot {at} ...")
            lake.publish("bench", "sync", version(at), incremental=True)
            console.print(f"workflow: {name} ...")
            runs[name] = _workflow_run(deployment, lake, f"sync-{name}", mode)
            console.print(
                f"  {runs[name]['status']}, {runs[name]['workflow_s']} s, steps {runs[name]['step_s']}"
            )
    return {"workflow_files": built["data_files"], "workflow": runs}


def _workflow_run(deployment: Any, lake: Any, run_id: str, mode: str) -> dict[str, Any]:
    import boto3
    from icelake.constants import GLUE_MIGRATE_JOB, LAMBDA_STEPS
    from icelake.local.embedded import run_execution
    from icelake.local.lambda_runtime import recording_invocations
    from icelake.workflow.client import read_report

    request = lake.request(
        run_id,
        mode=mode,
        selection={"tables": ["bench.sync"]},
        options={"concurrency": 1, "validation": "metadata"},
    )
    glue = boto3.client("glue")
    runs_before = {r["Id"] for r in glue.get_job_runs(JobName=GLUE_MIGRATE_JOB)["JobRuns"]}
    with recording_invocations() as calls:
        started = time.monotonic()
        result = run_execution(deployment.state_machine_arn, request, timeout=4 * 3600, name=run_id)
        workflow_s = round(time.monotonic() - started, 1)
    if result.status != "SUCCEEDED":
        raise SystemExit(f"the execution ended {result.status}: {result.failure()}")
    (outcome,) = read_report(result.output["report_uri"])["tables"]
    if outcome["status"] not in ("migrated", "in_sync"):
        raise SystemExit(f"{run_id}: the table ended {outcome['status']}: {outcome.get('error')}")
    step_of = {name: step for step, (name, _path, _ph) in LAMBDA_STEPS.items()}
    step_s: dict[str, float] = defaultdict(float)
    for call in calls:
        step_s[step_of.get(call.function_name, call.function_name)] += call.seconds
    glue_runs = [
        r for r in glue.get_job_runs(JobName=GLUE_MIGRATE_JOB)["JobRuns"] if r["Id"] not in runs_before
    ]
    if glue_runs:
        step_s["glue job"] = sum(r.get("ExecutionTime", 0) for r in glue_runs)
    return {
        "status": outcome["status"],
        "sync": outcome.get("sync"),
        "sync_reason": outcome.get("sync_reason"),
        "engines": outcome.get("engines"),
        "files_copied": outcome.get("files_copied"),
        "validation": outcome.get("validation"),
        "workflow_s": workflow_s,
        "step_s": {k: round(v, 2) for k, v in step_s.items()},
        "requests": outcome.get("requests", {}),
        "requests_total": sum(outcome.get("requests", {}).values()),
    }


def _met(key: str, value: float) -> bool:
    op, goal = GOALS[key]
    return value <= goal if op == "<=" else value >= goal


def record(res: dict[str, Any]) -> Path:
    commit = res["commit"]
    path = BENCH_DIR / "results" / f"sync-{res['files']}-{res['recorded_at'][:10]}-{commit}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(res, indent=2) + "\n")
    met = ", ".join(f"{k} {'met' if _met(k, res[k]) else 'NOT met'}" for k in GOALS if k in res)
    local = res["local"]
    row = (
        f"| {res['recorded_at'][:10]} | {commit} | {res['files']:,} | {local['full']['seconds']} | "
        f"{local['sync']['seconds']} | {local['noop']['seconds']} | {res['sync_vs_full_s']} | "
        f"{res['noop_vs_full_s']} | "
        f"{res['sync_requests_per_changed_file']} + {res['sync_constant_requests']} | "
        f"{res['rtp_incremental_vs_sync']} | {res.get('workflow_files', 0):,}: "
        f"{res.get('workflow_incremental_step_s', {})} | {met} |"
    )
    doc = BENCH_DIR / "RESULTS.md"
    text = doc.read_text()
    header = "## Sync"
    if header not in text:
        text += (
            f"\n{header}\n\n`make bench-sync` (`python -m benchmarks.sync_bench`, see its docstring): a "
            "local full migration, the sync of 3 commits of 1,000 files and a run with nothing new, "
            "in seconds and requests; Iceberg's incremental `rewrite_table_path` against icelake's "
            "sync (plan and rewrite); the workflow's incremental run per step. Goals (issue 42): sync "
            "<= 0.03 and nothing new <= 0.01 of the full migration's time, <= 3 requests per changed "
            "file plus <= 50, Iceberg / icelake >= 2, each workflow step <= 10 s.\n\n"
            "| date | commit | files | full s | sync s | nothing new s | sync/full | nothing/full | "
            "requests per changed file + constant | iceberg incremental / icelake sync | "
            "workflow incremental steps s | goals |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        )
    lines = text.rstrip("\n").split("\n")
    at = lines.index(header)
    while at < len(lines) and not lines[at].startswith("|"):
        at += 1
    while at < len(lines) and lines[at].startswith("|"):
        at += 1
    doc.write_text("\n".join([*lines[:at], row, *lines[at:]]) + "\n")
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.sync_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1_000_000, help="data files of the local table")
    ap.add_argument(
        "--workflow-files", type=int, default=100_000, help="data files of the workflow's table (0: skip)"
    )
    ap.add_argument("--commits", type=int, default=3, help="appends of 1,000 files the sync brings")
    ap.add_argument("--work-dir", default=str(BENCH_DIR / ".work" / "sync"))
    ap.add_argument("--no-record", action="store_true", help="do not write results/ or RESULTS.md")
    args = ap.parse_args(argv)
    work = Path(args.work_dir).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = time.monotonic()
    res = local_part(work, args.files, args.commits)
    if args.workflow_files:
        res.update(workflow_part(work, args.workflow_files, args.commits))
        incremental = res["workflow"]["incremental"]["step_s"]
        res["workflow_incremental_step_s"] = {
            k: incremental.get(k, 0.0) for k in ("plan", "copy", "validate")
        }
        res["workflow_incremental_max_step_s"] = max(incremental.values())
    res["bench_s"] = round(time.monotonic() - started, 1)
    res["recorded_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    res["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    if not args.no_record:
        console.print(f"recorded {record(res).relative_to(REPO)} and benchmarks/RESULTS.md")
    shutil.rmtree(work, ignore_errors=True)
    keys: tuple[str, ...] = ("files", "sync_vs_full_s", "noop_vs_full_s", "sync_requests_per_changed_file")
    keys += ("sync_constant_requests", "rtp_incremental_vs_sync", "workflow_incremental_step_s")
    print(json.dumps({k: res[k] for k in keys if k in res}))


if __name__ == "__main__":
    main()
