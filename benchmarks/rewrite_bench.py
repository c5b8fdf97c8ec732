"""Benchmark: Iceberg's `rewrite_table_path` against icelake's metadata rewrite, on one large table.

    .venv/bin/python -m benchmarks.rewrite_bench            # 200 snapshots x 250 files (make bench)
    .venv/bin/python -m benchmarks.rewrite_bench --quick    # a tiny run, nothing recorded

1. Builds a synthetic Iceberg v2 table (Hadoop catalog, local directory) through the Iceberg Java
   API: N fast appends of M DataFile entries whose Parquet files are never written.
2. Times `CALL <cat>.system.rewrite_table_path(...)` on it (Spark local[2], same JVM).
3. Times icelake's rewrite of the same metadata (benchmarks/icelake_side.py: every metadata.json,
   manifest list and manifest, plus the list of data files to copy) in a separate Python process,
   and icelake's planning pass (`build_plan`), each at two table sizes (the table after N/2
   appends, whose metadata.json is still there, and after N) with their peak memory.
4. Verifies both outputs with pyiceberg and records the figures in benchmarks/results/ and
   benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.rewrite_results import mib, print_summary, record

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent


# ----------------------------------------------------------------------------------------------
# CPU accounting: the machine may be shared, so every timed step records how much CPU other
# processes used meanwhile (machine busy time minus the measured process's own CPU time).

_TICK = os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds spent busy on all cores since boot (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / _TICK


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of one process (/proc/<pid>/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def wait_for_quiet(max_wait: float, cores: float = 0.3, window: float = 3.0) -> float:
    """Wait (up to `max_wait` s) until the machine uses less than `cores` CPUs; the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < max_wait:
        busy0 = machine_busy_seconds()
        time.sleep(window)
        if (machine_busy_seconds() - busy0) / window < cores:
            break
    return round(time.monotonic() - started, 1)


def self_cpu_seconds() -> float:
    """CPU of this process and of its finished children (the rewrite's worker processes)."""
    ru, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime + children.ru_utime + children.ru_stime


# ----------------------------------------------------------------------------------------------
# Worker: one icelake measurement in a fresh process (so ru_maxrss is that measurement's alone).


def _worker(args: argparse.Namespace) -> None:
    from benchmarks.icelake_side import measure_plan, rewrite_table_metadata

    if args.tracemalloc:
        tracemalloc.start()
    out: dict[str, Any] = {"mode": args.worker, "tracemalloc": bool(args.tracemalloc)}
    if args.worker == "rewrite":
        # Timing runs spread manifests over worker processes like the engine; the traced run stays in
        # one process so that tracemalloc sees every allocation of the rewrite.
        processes = 1 if args.tracemalloc else None
        out.update(
            rewrite_table_metadata(args.source_metadata, args.target, args.staging, processes).as_dict()
        )
    elif args.worker == "plan":
        out.update(vars(measure_plan(args.source_metadata, args.target)))
    if args.tracemalloc:
        out["tracemalloc_peak_bytes"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    out["maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    out["worker_maxrss_bytes"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    out["cpu_seconds"] = round(self_cpu_seconds(), 3)
    print(json.dumps(out))


def run_worker(
    mode: str, source_metadata: str, target: str, staging: str, traced: bool, quiet_wait: float = 0.0
) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.rewrite_bench",
        "--worker",
        mode,
        "--source-metadata",
        source_metadata,
        "--target",
        target,
        "--staging",
        staging,
    ]
    if traced:
        cmd.append("--tracemalloc")
    for path in (staging, target):
        shutil.rmtree(path, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    waited = wait_for_quiet(quiet_wait) if quiet_wait else 0.0
    busy0, wall0 = machine_busy_seconds(), time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    busy, wall = machine_busy_seconds() - busy0, time.monotonic() - wall0
    if proc.returncode != 0:
        raise RuntimeError(f"worker {mode} failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_wall_seconds"] = round(wall, 3)
    result["waited_for_quiet_seconds"] = waited
    result["other_cpu_seconds"] = round(max(0.0, busy - result["cpu_seconds"]), 2)
    return result


# ----------------------------------------------------------------------------------------------
# Machine and versions.


def machine_facts(spark: Any) -> dict[str, Any]:
    import fastavro
    import pyiceberg

    cpu = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    jvm = spark._jvm

    def git(*a: str) -> str:
        return subprocess.run(
            ["git", *a], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD")
    # The icelake side runs the working tree: say when it differs from the commit.
    dirty = bool(git("status", "--porcelain", "--", "icelake"))
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "memory_gib": round(mem_gib, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": jvm.java.lang.System.getProperty("java.version"),
        "spark": spark.version,
        "iceberg": jvm.org.apache.iceberg.IcebergBuild.version(),
        "pyiceberg": pyiceberg.__version__,
        "fastavro": fastavro.__version__,
        "git_commit": commit + ("+dirty" if dirty else ""),
    }


# ----------------------------------------------------------------------------------------------
# The benchmark.


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from icelake.local.spark import local_spark
    from rich.console import Console

    from benchmarks.synthetic_table import build_with_progress_bar
    from benchmarks.verify import link_target_to_staging, verify_rewrite

    console = Console()
    work = Path(args.work_dir).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    warehouse = work / "warehouse"

    t0 = time.monotonic()
    spark = local_spark({"bench": str(warehouse)}, app_name="icelake-bench")
    spark_start_s = round(time.monotonic() - t0, 3)
    facts = machine_facts(spark)
    console.print(f"[bold]machine[/]: {facts}")

    built = build_with_progress_bar(
        spark,
        "bench",
        console,
        snapshots=args.snapshots,
        files_per_snapshot=args.files_per_snapshot,
        partitions_per_snapshot=args.partitions_per_snapshot,
    )
    console.print(
        f"built {built.identifier}: {built.snapshots} snapshots, {built.data_files} data files in "
        f"{built.build_seconds} s (entries {built.append_seconds} s, commits {built.commit_seconds} s)"
    )

    # Iceberg's procedure, in the JVM that built the table.
    iceberg_runs: list[dict[str, Any]] = []
    jvm: Any = spark._jvm
    jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
    iceberg_target = str(work / "target_iceberg" / "db" / "t")
    for i in range(args.repeat):
        staging = work / f"staging_iceberg_{i}"
        console.print(f"iceberg rewrite_table_path, run {i + 1}/{args.repeat} ...")
        waited = wait_for_quiet(args.wait_quiet) if args.wait_quiet else 0.0
        cpu0 = process_cpu_seconds(jvm_pid) + self_cpu_seconds()
        busy0 = machine_busy_seconds()
        t0 = time.monotonic()
        row = spark.sql(
            "CALL bench.system.rewrite_table_path("
            f"table => 'db.t', source_prefix => '{built.location}', target_prefix => '{iceberg_target}', "
            f"staging_location => '{staging}')"
        ).collect()[0]
        seconds = round(time.monotonic() - t0, 3)
        own_cpu = process_cpu_seconds(jvm_pid) + self_cpu_seconds() - cpu0
        other_cpu = machine_busy_seconds() - busy0 - own_cpu
        file_list = Path(row["file_list_location"])
        iceberg_runs.append(
            {
                "seconds": seconds,
                "latest_version": row["latest_version"],
                "file_list": str(file_list),
                "file_list_lines": _count_lines(file_list),
                "staging": str(staging),
                "cpu_seconds": round(own_cpu, 2),
                "other_cpu_seconds": round(max(0.0, other_cpu), 2),
                "waited_for_quiet_seconds": waited,
            }
        )
        console.print(f"  {seconds} s, file list of {iceberg_runs[-1]['file_list_lines']} lines")
    spark.stop()

    # icelake, in fresh processes, at two sizes; the timing runs are not traced.
    sizes = (
        sorted({max(1, args.snapshots // 2), args.snapshots})
        if not args.memory_snapshots
        else sorted({int(s) for s in args.memory_snapshots.split(",")})
    )
    if sizes[-1] != args.snapshots:
        raise SystemExit("--memory-snapshots must include the full size")
    icelake: dict[str, Any] = {}
    icelake_target = str(work / "target_icelake" / "db" / "t")
    icelake_staging = str(work / "staging_icelake")
    for n in sizes:
        source = built.metadata_after(n)
        entry: dict[str, Any] = {
            "snapshots": n,
            "data_files": n * args.files_per_snapshot,
            "rewrite_runs": [],
        }
        runs = args.repeat if n == args.snapshots else 1
        for i in range(runs):
            console.print(f"icelake rewrite, {n} snapshots, run {i + 1}/{runs} ...")
            r = run_worker("rewrite", source, icelake_target, icelake_staging, False, args.wait_quiet)
            entry["rewrite_runs"].append(r)
            console.print(f"  {r['seconds']} s, peak RSS {mib(r['maxrss_bytes'])}")
        console.print(f"icelake rewrite, {n} snapshots, traced ...")
        traced = run_worker("rewrite", source, icelake_target, icelake_staging, True)
        entry["rewrite_tracemalloc_peak_bytes"] = traced["tracemalloc_peak_bytes"]
        entry["rewrite_traced_seconds"] = traced["seconds"]
        console.print(f"icelake build_plan, {n} snapshots ...")
        entry["plan"] = run_worker(
            "plan", source, str(work / "target_plan" / "db" / "t"), "", False, args.wait_quiet
        )
        console.print(f"  {entry['plan']['seconds']} s, peak RSS {mib(entry['plan']['maxrss_bytes'])}")
        traced = run_worker("plan", source, str(work / "target_plan" / "db" / "t"), "", True)
        entry["plan_tracemalloc_peak_bytes"] = traced["tracemalloc_peak_bytes"]
        icelake[str(n)] = entry
    baseline = run_worker(
        "baseline", built.current_metadata, icelake_target, icelake_staging + "_none", False
    )
    # Sizes run smallest first: the full-size output (of the traced run) is in icelake_staging.
    full = icelake[str(args.snapshots)]
    last = full["rewrite_runs"][-1]

    # Verification with pyiceberg, of both outputs.
    console.print("verifying both outputs with pyiceberg ...")
    half = sizes[0]
    link_target_to_staging(icelake_target, icelake_staging)
    icelake_check = verify_rewrite(
        "icelake",
        source_metadata=built.current_metadata,
        target_location=icelake_target,
        target_metadata=last["target_metadata"],
        file_list=last["file_list"],
        older=(f"{icelake_target}/metadata/v{half + 1}.metadata.json", half),
    )
    ice_run = iceberg_runs[-1]
    link_target_to_staging(iceberg_target, ice_run["staging"])
    iceberg_check = verify_rewrite(
        "iceberg",
        source_metadata=built.current_metadata,
        target_location=iceberg_target,
        target_metadata=f"{iceberg_target}/metadata/{ice_run['latest_version']}",
        file_list=ice_run["file_list"],
        older=(f"{iceberg_target}/metadata/v{half + 1}.metadata.json", half),
        expect_correct_lengths=False,
    )

    iceberg_s = min(r["seconds"] for r in iceberg_runs)
    icelake_s = min(r["seconds"] for r in full["rewrite_runs"])
    return {
        "benchmark": "rewrite_table_path vs icelake metadata rewrite",
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": facts,
        "parameters": {
            "snapshots": args.snapshots,
            "files_per_snapshot": args.files_per_snapshot,
            "partitions_per_snapshot": args.partitions_per_snapshot,
            "repeat": args.repeat,
            "wait_quiet": args.wait_quiet,
            "memory_sizes_snapshots": sizes,
        },
        "table": {
            "data_files": built.data_files,
            "snapshots": built.snapshots,
            "metadata_json_files": full["rewrite_runs"][-1]["metadata_files"],
            "manifest_lists": full["rewrite_runs"][-1]["manifest_lists"],
            "manifests": full["rewrite_runs"][-1]["manifests"],
            "spark_start_seconds": spark_start_s,
            "build_seconds": built.build_seconds,
            "build_datafile_entries_seconds": built.append_seconds,
            "build_commit_seconds": built.commit_seconds,
        },
        "iceberg": {"runs": iceberg_runs, "best_seconds": iceberg_s, "verification": iceberg_check.as_dict()},
        "icelake": {
            "sizes": icelake,
            "baseline_maxrss_bytes": baseline["maxrss_bytes"],
            "best_rewrite_seconds": icelake_s,
            "verification": icelake_check.as_dict(),
        },
        # Best of the runs (Iceberg's later runs profit from a JIT-warm JVM), and Iceberg's first
        # run (cold JVM, as in a one-off migration job) against icelake's best.
        "ratio_iceberg_over_icelake": round(iceberg_s / icelake_s, 2) if icelake_s else None,
        "ratio_iceberg_first_over_icelake": round(iceberg_runs[0]["seconds"] / icelake_s, 2)
        if icelake_s
        else None,
        # Other processes on the machine inflate the timings: the CPU they used during the runs.
        "max_other_cpu_seconds": max(r["other_cpu_seconds"] for r in [*iceberg_runs, *full["rewrite_runs"]]),
    }


# ----------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.rewrite_bench", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--snapshots", type=int, default=200, help="fast appends (snapshots) in the table")
    ap.add_argument("--files-per-snapshot", type=int, default=250, help="data files added by each append")
    ap.add_argument("--partitions-per-snapshot", type=int, default=5, help="days(ts) partitions per append")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs of each side at full size (best kept)")
    ap.add_argument(
        "--memory-snapshots",
        default="",
        help="comma-separated table sizes (in snapshots) for the memory runs; default: half and full",
    )
    ap.add_argument(
        "--quick", action="store_true", help="tiny table (6 x 40); records nothing unless --record"
    )
    ap.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each timed run, wait up to SECONDS for other processes to leave the CPUs idle",
    )
    ap.add_argument("--record", action="store_true", help="record results even with --quick")
    ap.add_argument("--no-record", action="store_true", help="do not write results/ or RESULTS.md")
    ap.add_argument("--work-dir", default=str(BENCH_DIR / ".work" / "rewrite"), help="scratch directory")
    ap.add_argument("--results-dir", default=str(BENCH_DIR / "results"))
    ap.add_argument("--json", action="store_true", help="print the result JSON at the end")
    ap.add_argument("--show", metavar="JSON", help="print the summary of a recorded result and exit")
    # Internal: one icelake measurement in a fresh process.
    ap.add_argument("--worker", choices=["rewrite", "plan", "baseline"], help=argparse.SUPPRESS)
    ap.add_argument("--source-metadata", help=argparse.SUPPRESS)
    ap.add_argument("--target", help=argparse.SUPPRESS)
    ap.add_argument("--staging", help=argparse.SUPPRESS)
    ap.add_argument("--tracemalloc", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.snapshots, args.files_per_snapshot, args.partitions_per_snapshot = 6, 40, 2
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.worker:
        _worker(args)
        return
    if args.show:
        print_summary(json.loads(Path(args.show).read_text()))
        return
    res = run(args)
    print_summary(res)
    if args.json:
        print(json.dumps(res, indent=2))
    if (not args.quick or args.record) and not args.no_record:
        path = record(res, Path(args.results_dir))
        print(f"recorded {path.relative_to(REPO)} and benchmarks/RESULTS.md")
    if not res["icelake"]["verification"]["ok"]:
        raise SystemExit(
            "icelake's rewritten table failed verification: "
            + "; ".join(res["icelake"]["verification"]["problems"])
        )


if __name__ == "__main__":
    main()
