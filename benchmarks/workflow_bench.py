"""Benchmark: N small tables through the migration state machine on embedded AWS.

    .venv/bin/python -m benchmarks.workflow_bench              # 50 tables (make bench)
    .venv/bin/python -m benchmarks.workflow_bench --tables 5   # a quick run, nothing recorded
    .venv/bin/python -m benchmarks.workflow_bench --estate 1000  # only the estate case (issue 48)

Records wall time for the whole run, per-table time (plan -> validated, from the copy results),
state transitions per table (history events of the distributed map's child executions, or the
workflow's fixed path length where moto does not expose them), and the Lambda-versus-Glue
comparison behind the copy-engine threshold: the same table copied by the Lambda step and by the
Glue job, at growing numbers of data files. Results go to benchmarks/results/workflow_<date>.json
and a row in benchmarks/WORKFLOW_RESULTS.md. `--estate N` runs N tiny tables through mode assess
then a full migration instead ("An estate of tiny tables" in WORKFLOW_RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from rich.console import Console
from rich.table import Table

from benchmarks.assess_bench import open_page

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
console = Console()

# The per-item path of migrate_tables.asl.json on success with the Lambda copy:
# Plan, KeepPlan, ChooseEngine, CopyInLambda, Register, Validate.
ITEM_STATES_LAMBDA_PATH = 6


def _table(lake: Any, name: str, files: int) -> str:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    root = lake.local_root / "bench" / name
    root.mkdir(parents=True, exist_ok=True)
    cat = SqlCatalog(name, uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.create_namespace_if_not_exists("bench")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = cat.create_table(f"bench.{name}", schema=schema)
    for i in range(files):
        table.append(pa.table({"id": pa.array([i], pa.int64()), "v": [f"v{i}"]}, schema=schema))
    return str(lake.publish("bench", name, cat.load_table(f"bench.{name}").metadata_location))


def run_workflow(n_tables: int, files_per_table: int) -> dict[str, Any]:
    from icelake.local.deploy import deploy_migration_workflow
    from icelake.local.embedded import run_execution, start_embedded_aws
    from icelake.local.lake import build_lake
    from icelake.workflow.client import read_report

    with start_embedded_aws(REPO):
        deployment = deploy_migration_workflow()
        lake = build_lake(Path(tempfile.mkdtemp(prefix="icelake-bench-")), orchestrator_resources=False)
        t0 = time.monotonic()
        for i in range(n_tables):
            _table(lake, f"t{i:03d}", files_per_table)
        seed_seconds = time.monotonic() - t0
        request = lake.request("bench-1", selection={"databases": ["bench"]}, options={"concurrency": 8})
        t0 = time.monotonic()
        result = run_execution(deployment.state_machine_arn, request, timeout=3600, name="bench-1")
        wall = time.monotonic() - t0
        assert result.status == "SUCCEEDED", result.failure()
        tables = read_report(result.output["report_uri"])["tables"]
        assert all(t["status"] == "migrated" for t in tables), tables
        parent_events = len(result.events)
    per_table = [t["seconds"] for t in tables]
    return {
        "tables": n_tables,
        "files_per_table": files_per_table,
        "seed_seconds": round(seed_seconds, 2),
        "workflow_wall_seconds": round(wall, 2),
        "seconds_per_table_wall": round(wall / n_tables, 3),
        "copy_seconds_per_table_median": round(statistics.median(per_table), 3),
        "copy_seconds_per_table_max": round(max(per_table), 3),
        "parent_history_events": parent_events,
        "state_transitions_per_table": ITEM_STATES_LAMBDA_PATH,
    }


PAYLOAD_CAP = 256 * 1024  # Step Functions' limit on a state's input or output


def _largest_payload(events: list[dict[str, Any]]) -> int:
    """The largest input, output or parameters of any state in an execution's history (bytes)."""
    sizes = [
        len(str(value).encode())
        for event in events
        for key, details in event.items()
        if key.endswith("EventDetails") and isinstance(details, dict)
        for field, value in details.items()
        if field in ("input", "output", "parameters")
    ]
    return max(sizes, default=0)


def _page_open(uri: str, work: Path) -> dict[str, Any]:
    """A page of the artifacts bucket: its size, and its time to the load event in headless
    Chromium at 1280 px."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    page = work / key.replace("/", "_")
    page.write_bytes(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
    opened = open_page(page)
    return {"bytes": opened["bytes"], "load_s": opened["load_s"]}


def run_estate(n_tables: int, concurrency: int) -> dict[str, Any]:
    """An estate (issue 48): `n_tables` tiny tables (one pyiceberg table, two commits, published
    under each name) in one database through mode assess, then a full migration."""
    from icelake.aws import pacing
    from icelake.local.deploy import deploy_migration_workflow
    from icelake.local.embedded import run_execution, start_embedded_aws
    from icelake.local.lake import build_lake
    from icelake.workflow.client import read_report

    from benchmarks.assess_bench import _seed

    work = Path(tempfile.mkdtemp(prefix="icelake-estate-"))
    # The bench's own S3 pacing lanes: the host's default file is shared with every other icelake
    # process on this machine (other engineers' benchmarks), whose lock waits are not this run's.
    os.environ[pacing.ENV_FILE] = str(work / "pacing.bin")
    with start_embedded_aws(REPO):
        deployment = deploy_migration_workflow()
        lake = build_lake(work / "local", orchestrator_resources=False)
        seed_seconds = _seed(lake, n_tables)
        measured: dict[str, Any] = {
            "tables": n_tables,
            "concurrency": concurrency,
            "seed_s": round(seed_seconds, 1),
        }
        for mode in ("assess", "full"):
            request = lake.request(
                f"estate-{mode}",
                mode=mode,
                selection={"databases": ["bulk"]},
                options={"concurrency": concurrency},
            )
            t0, cpu0, load0 = time.monotonic(), time.process_time(), os.getloadavg()[0]
            result = run_execution(
                deployment.state_machine_arn, request, timeout=6 * 3600, name=f"estate-{mode}"
            )
            wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
            assert result.status == "SUCCEEDED", result.failure()
            report = read_report(result.output["report_uri"])
            if mode == "full":
                states = Counter(t["status"] for t in report["tables"])
                assert states == {"migrated": n_tables}, states
            measured[mode] = {
                "wall_s": round(wall, 1),
                "s_per_table": round(wall / n_tables, 3),
                # This process's CPU (the handlers, moto's services and the interpreter all run in
                # it): what the run costs whatever else the shared machine is doing.
                "cpu_s": round(cpu, 1),
                "cpu_s_per_table": round(cpu / n_tables, 3),
                "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
                "history_events": len(result.events),
                "largest_payload_bytes": _largest_payload(result.events),
                "page": _page_open(str(result.output["report_html_uri"]), work),
            }
            console.print(f"  {mode}: {measured[mode]}")
    return measured


def _record_estate(estate: dict[str, Any]) -> None:
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    results = BENCH_DIR / "results"
    results.mkdir(exist_ok=True)
    (results / f"workflow_estate_{day}_{estate['tables']}.json").write_text(
        json.dumps(estate, indent=2) + "\n"
    )
    md = BENCH_DIR / "WORKFLOW_RESULTS.md"
    text = md.read_text()
    header = "## An estate of tiny tables"
    columns = (
        "| date | tables | Map concurrency | assess s (s/table) | full s (s/table) | CPU s/table "
        "(assess, full) | load (1 min, at start and end) | history events"
    )
    if header not in text:
        text = text.rstrip("\n") + (
            f"\n\n{header} (`python -m benchmarks.workflow_bench --estate N`)\n\n"
            "N tiny tables (two commits, one data file each) in one database: mode assess, then a full\n"
            "migration, through the real state machine on embedded AWS; the parent execution's history\n"
            "events, its largest state input, output or parameters against Step Functions' 256 KiB (the\n"
            "bench fails over 200 KiB), and each run's page (assessment.html, report.html): size and time\n"
            "to the load event in headless Chromium at 1280 px.\n\n"
            f"{columns} (assess, full) | largest payload KiB (assess, full) | pages (assessment, report) |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n"
        )
    a, f = estate["assess"], estate["full"]
    row = (
        f"| {day} | {estate['tables']} | {estate['concurrency']} | {a['wall_s']} ({a['s_per_table']}) | "
        f"{f['wall_s']} ({f['s_per_table']}) | {a['cpu_s_per_table']}, {f['cpu_s_per_table']} | "
        f"{a['load'][0]}–{a['load'][1]}, {f['load'][0]}–{f['load'][1]} | "
        f"{a['history_events']}, {f['history_events']} | "
        f"{a['largest_payload_bytes'] / 1024:.1f}, {f['largest_payload_bytes'] / 1024:.1f} | "
        f"{a['page']['bytes'] / 1e6:.2f} MB {a['page']['load_s']} s, "
        f"{f['page']['bytes'] / 1e6:.2f} MB {f['page']['load_s']} s |\n"
    )
    md.write_text(text.rstrip("\n") + "\n" + row)


def compare_engines(file_counts: list[int]) -> list[dict[str, Any]]:
    """The same table copied by the Lambda step and by the Glue job, at growing numbers of files."""
    from icelake.local.deploy import deploy_migration_workflow
    from icelake.local.embedded import start_embedded_aws
    from icelake.local.lake import build_lake
    from icelake.local.spark import local_spark
    from icelake.workflow import steps
    from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput

    sys_path_glue = str(REPO / "glue_jobs")
    sys.path.insert(0, sys_path_glue)
    import migrate_table as glue_job  # glue_jobs/ is not a package: Glue runs the file as a script

    local_spark({}, app_name="icelake-bench")  # the Glue job reuses the active session
    rows = []
    with start_embedded_aws(REPO):
        deploy_migration_workflow()
        lake = build_lake(Path(tempfile.mkdtemp(prefix="icelake-engines-")), orchestrator_resources=False)
        for n in file_counts:
            _table(lake, f"f{n}", n)
            inv = steps.inventory(
                InventoryInput.model_validate(
                    lake.request(f"lam-{n}", selection={"tables": [f"bench.f{n}"]})
                ),
                lake.deps,
            )
            body = (
                boto3.client("s3").get_object(Bucket=inv.worklist_bucket, Key=inv.worklist_key)["Body"].read()
            )
            item = json.loads(body)[0]
            planned = steps.plan(PlanInput.model_validate({"item": item}), lake.deps).model_dump(mode="json")
            t0 = time.monotonic()
            steps.copy(PlannedInput.model_validate({"plan": planned}), lake.deps)
            lambda_seconds = time.monotonic() - t0
            glue_target = item["target_location"] + "-glue"
            t0 = time.monotonic()
            glue_job.main(
                [
                    "--work-item",
                    json.dumps(item),
                    "--source-metadata",
                    item["source_metadata_location"],
                    "--target-location",
                    glue_target,
                    "--result-uri",
                    f"s3://{lake.env.artifacts_bucket}/bench/{n}.json",
                    "--run-id",
                    f"glue-{n}",
                ]
            )
            glue_seconds = time.monotonic() - t0
            rows.append(
                {
                    "data_files": n,
                    "lambda_seconds": round(lambda_seconds, 2),
                    "glue_seconds": round(glue_seconds, 2),
                }
            )
            console.print(f"  {n} files: Lambda path {lambda_seconds:.2f} s, Glue job {glue_seconds:.2f} s")
    sys.path.remove(sys_path_glue)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=50)
    ap.add_argument("--files-per-table", type=int, default=3)
    ap.add_argument("--engine-files", default="10,100,400", help="file counts for the engine comparison")
    ap.add_argument("--estate", type=int, help="only the estate case: this many tiny tables (issue 48)")
    ap.add_argument("--estate-concurrency", type=int, default=8, help="the estate's Map concurrency")
    args = ap.parse_args()
    if args.estate:
        estate = run_estate(args.estate, args.estate_concurrency)
        assert max(estate[m]["largest_payload_bytes"] for m in ("assess", "full")) <= 200 * 1024, estate
        _record_estate(estate)
        return
    record = args.tables >= 50
    console.print(f"{args.tables} tables x {args.files_per_table} files through the state machine ...")
    workflow = run_workflow(args.tables, args.files_per_table)
    console.print(workflow)
    console.print("Lambda path versus Glue job on one table ...")
    engines = compare_engines([int(x) for x in args.engine_files.split(",")])
    out = {
        "benchmark": "migrate_tables workflow on embedded AWS",
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "workflow": workflow,
        "engines": engines,
    }
    summary = Table(title="migrate_tables on embedded AWS", show_header=False)
    for key, value in workflow.items():
        summary.add_row(key, str(value))
    for row in engines:
        summary.add_row(
            f"{row['data_files']} files", f"Lambda {row['lambda_seconds']} s / Glue {row['glue_seconds']} s"
        )
    console.print(summary)
    if record:
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        results = BENCH_DIR / "results"
        results.mkdir(exist_ok=True)
        (results / f"workflow_{day}.json").write_text(json.dumps(out, indent=2) + "\n")
        md = BENCH_DIR / "WORKFLOW_RESULTS.md"
        if not md.exists():
            md.write_text(
                "# Workflow benchmark results\n\n"
                "`python -m benchmarks.workflow_bench`: tables through the real state machine on\n"
                "embedded AWS (moto, in-process Lambda handlers, local Spark for Glue).\n\n"
                "| date | tables | files/table | workflow s | s/table | copy s/table (median) |"
                " transitions/table | engines: files -> Lambda s / Glue s |\n"
                "|---|---|---|---|---|---|---|---|\n"
            )
        engines_text = "; ".join(
            f"{r['data_files']} -> {r['lambda_seconds']} / {r['glue_seconds']}" for r in engines
        )
        with md.open("a") as fh:
            fh.write(
                f"| {day} | {workflow['tables']} | {workflow['files_per_table']} | "
                f"{workflow['workflow_wall_seconds']} | "
                f"{workflow['seconds_per_table_wall']} | {workflow['copy_seconds_per_table_median']} | "
                f"{workflow['state_transitions_per_table']} | {engines_text} |\n"
            )
        console.print(f"recorded {results / f'workflow_{day}.json'} and {md}")


if __name__ == "__main__":
    main()
