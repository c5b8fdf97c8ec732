"""A re-run's estimate against its time (issue 56): the sample lake migrated, then run again.

    .venv/bin/python -m benchmarks.rerun_bench               # 5 re-runs (make bench-rerun)
    .venv/bin/python -m benchmarks.rerun_bench --reruns 2 --no-record

The README's sample lake (`publish_sample_tables`: sales.orders and sales.customers, pyiceberg's,
with history) is migrated by the real state machine on embedded AWS, then the same request runs
again `--reruns` times. A re-run copies nothing (every file is on the target, same bytes), and its
own estimate (the Plan step's, under the request's throughput model) must say so: each re-run's
table is paired with its estimate, phase by phase, time and requests. The model is measured in the
run, as the other estimate benchmarks measure it (`estimate_pairs.calibrated_throughput`, the warm
Plan step's start `plan_step_start`): the embedded AWS is as fast as the machine is idle.

The goal: each table's median time over the re-runs within 30 % of its estimate, its requests
within 10 % (`estimate_pairs.TIME_GOAL`, `REQUESTS_GOAL`). A re-run is a second of fixed work,
so one re-run on a shared machine moves by more than that: the median is the figure; every run's
is recorded. Results: benchmarks/results/rerun-<files>-<date>-<commit>.json and a row in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.estimate_pairs import REQUESTS_GOAL, TIME_GOAL, calibrated_throughput, plan_step_start
from benchmarks.results_md import record_row, run_facts, saved_result

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
console = Console(stderr=True, width=150)
HEADING = "## A re-run's estimate"
SECTION = (  # what RESULTS.md says above the table, when the section is new
    "`python -m benchmarks.rerun_bench` (`make bench-rerun`, see its docstring): the sample lake "
    "migrated, then the same request run again; per table, the median over the re-runs of its "
    "time and its own estimate's (a warm step's start and S3's latencies measured in the run). "
    "Goal: within 30 %, requests within 10 %, nothing copied.\n\n"
    "| date | commit | load | tables (estimate, run, run / estimate) | misses |\n"
    "|---|---|---|---|---|\n"
)


def run(reruns: int, work: Path) -> dict[str, Any]:
    """The first run's and every re-run's tables: status, files copied, measured and estimated
    seconds and requests by phase."""
    from icelake.local.deploy import deploy_migration_workflow
    from icelake.local.embedded import run_execution, start_embedded_aws
    from icelake.local.lake import build_lake

    with start_embedded_aws(REPO):
        deployment = deploy_migration_workflow()
        lake = build_lake(work / "lake", orchestrator_resources=False)
        console.print("measuring the embedded AWS's throughput model ...")
        model = calibrated_throughput(200)
        start = plan_step_start(deployment, lake, model)  # also publishes the sample tables
        model = {**model, "lambda_start_s": start["start_s"]}
        console.print(f"  a warm step's start: {start['start_s']} s (Plan {start['plan_s']} s)")
        runs: list[dict[str, Any]] = []
        for i in range(reruns + 1):
            name = "first" if i == 0 else f"again-{i}"
            body = lake.request(
                name, options={"concurrency": 1, "validation": "metadata", "throughput": model}
            )
            result = run_execution(deployment.state_machine_arn, body, timeout=900, name=name)
            if result.status != "SUCCEEDED":
                raise SystemExit(f"run {name} ended {result.status}: {result.failure()}")
            tables = [_outcome(t) for t in _report(result)["tables"]]
            runs.append({"run": name, "tables": tables})
            console.print(f"  {name}: " + ", ".join(f"{t['table']} {t['status']}" for t in tables))
    return {"model": model, "step_start": start, "runs": runs}


def _report(result: Any) -> dict[str, Any]:
    from icelake.workflow.client import read_report

    return read_report(result.output["report_uri"])


def _outcome(table: dict[str, Any]) -> dict[str, Any]:
    estimate = table.get("estimate") or {}
    return {
        "table": table["table"],
        "status": table["status"],
        "files_copied": table.get("files_copied"),
        "files_skipped": table.get("files_skipped"),
        "measured_s": round(sum(table.get("duration_s", {}).values()), 3),
        "estimated_s": estimate.get("duration_s"),
        "range_s": estimate.get("duration_range_s"),
        "measured_by_phase": table.get("duration_s", {}),
        "estimated_by_phase": estimate.get("duration_by_phase", {}),
        "measured_requests": sum(table.get("requests", {}).values()),
        "estimated_requests": sum(estimate.get("requests", {}).values()),
    }


def summary(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per table, over the re-runs: the median measured and estimated seconds, their ratio, the
    requests' ratio, and whether the re-runs copied nothing."""
    out: dict[str, dict[str, Any]] = {}
    reruns = res["runs"][1:]
    for name in sorted({t["table"] for r in reruns for t in r["tables"]}):
        seen = [t for r in reruns for t in r["tables"] if t["table"] == name]
        measured = statistics.median(t["measured_s"] for t in seen)
        estimated = statistics.median(t["estimated_s"] for t in seen)
        requests = statistics.median(t["measured_requests"] / t["estimated_requests"] for t in seen)
        out[name] = {
            "reruns": len(seen),
            "copied_nothing": all(t["files_copied"] == 0 and t["status"] == "migrated" for t in seen),
            "measured_s": round(measured, 3),
            "estimated_s": round(estimated, 3),
            "time_ratio": round(measured / estimated, 3),
            "each_ratio": [round(t["measured_s"] / t["estimated_s"], 2) for t in seen],
            "requests_ratio": round(requests, 3),
        }
    return out


def misses(tables: dict[str, dict[str, Any]]) -> list[str]:
    """The tables whose re-runs missed a goal (empty: every one held)."""
    out = []
    for name, t in tables.items():
        if not t["copied_nothing"]:
            out.append(f"{name}: a re-run copied files")
        if abs(t["time_ratio"] - 1) > TIME_GOAL:
            out.append(f"{name}: {t['measured_s']} s against {t['estimated_s']} s estimated")
        if abs(t["requests_ratio"] - 1) > REQUESTS_GOAL:
            out.append(f"{name}: requests {t['requests_ratio']} of the estimate's")
    return out


def print_summary(tables: dict[str, dict[str, Any]]) -> None:
    table = Table(title="a re-run's estimate and its time (medians over the re-runs)")
    for col in (
        "table",
        "re-runs",
        "copied nothing",
        "estimated s",
        "measured s",
        "ratio",
        "each",
        "requests",
    ):
        table.add_column(col, justify="left" if col == "table" else "right")
    for name, t in tables.items():
        table.add_row(
            name,
            str(t["reruns"]),
            "yes" if t["copied_nothing"] else "NO",
            str(t["estimated_s"]),
            str(t["measured_s"]),
            str(t["time_ratio"]),
            " ".join(map(str, t["each_ratio"])),
            str(t["requests_ratio"]),
        )
    console.print(table)


def record(res: dict[str, Any]) -> Path:
    day, commit, path = saved_result("rerun", res)
    cells = "; ".join(
        f"{name} {t['estimated_s']} s est., {t['measured_s']} s run ({t['time_ratio']}x; "
        f"each {', '.join(map(str, t['each_ratio']))}), requests {t['requests_ratio']}x"
        for name, t in res["tables"].items()
    )
    facts = run_facts()
    row = f"| {day} | {commit} | {facts['load_average']} | {cells} | {', '.join(res['misses']) or 'none'} |"
    record_row(BENCH_DIR / "RESULTS.md", HEADING, SECTION, row)
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.rerun_bench", description=__doc__)
    ap.add_argument("--reruns", type=int, default=5, help="times the request runs again (default 5)")
    ap.add_argument("--no-record", action="store_true", help="print only; record nothing")
    args = ap.parse_args(argv)
    if args.reruns < 1:
        ap.error("--reruns: at least 1")
    with tempfile.TemporaryDirectory(prefix="icelake-rerun-") as work:
        res = run(args.reruns, Path(work))
    res["recorded_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    res["files"] = sum(t["files_skipped"] or 0 for t in res["runs"][-1]["tables"])
    res["tables"] = summary(res)
    res["misses"] = misses(res["tables"])
    print_summary(res["tables"])
    if not args.no_record:
        console.print(f"recorded {record(res).relative_to(REPO)} and benchmarks/RESULTS.md")
    print(json.dumps({"tables": res["tables"], "misses": res["misses"]}))


if __name__ == "__main__":
    main()
