"""The assessment's estimate of a table's migration beside what the run measured (issue 45), for
the benchmarks that run a large table through the state machine (workflow_large, cutover_bench).

The estimate is the workflow's own assessment (mode "assess", the code `icelake assess` runs)
under the embedded AWS's throughput model (`icelake/throughput/embedded.json`); the measurement is
the migration's outcome: each phase's seconds (`duration_s`) and S3 requests
(`requests_by_phase`), as report.html shows them. Plan, Copy and Validate are paired; the goal is
each phase's time within 30 % and its requests within 10 %.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

PHASES = ("plan", "copy", "validate")
TIME_GOAL = 0.30  # a phase's measured seconds within 30 % of the estimate
REQUESTS_GOAL = 0.10  # and its requests within 10 %


def embedded_throughput() -> dict[str, Any]:
    """The embedded AWS's measured model, as a request's `options.throughput`."""
    from icelake.throughput import shipped_throughput

    return shipped_throughput("embedded").model_dump(mode="json")


def a_data_manifest(metadata_dir: str) -> Path:
    """The largest data manifest of a built table (its entries time the model's manifest_entry_s)."""
    manifests = [p for p in Path(metadata_dir).glob("*.avro") if not p.name.startswith("snap-")]
    return max(manifests, key=lambda p: p.stat().st_size)


def calibrated_throughput(requests: int = 100, manifest: Path | None = None) -> dict[str, Any]:
    """The embedded AWS's model measured now, in this process, under the load the run will meet
    (the machine is shared: its load stretches every latency): `benchmarks.throughput_probe` for
    S3's latencies, list_key_s and copy speed, a step's start as a cold step pays it (the
    two accounts' roles assumed, their S3 and Glue clients made; `with_measured_start` then sets
    the warm start the run's steps pay), and, given a data `manifest` of the table the run
    migrates, manifest_entry_s on its entries; over the shipped model's other parameters. Call
    it with embedded AWS running."""
    import time

    import boto3
    from icelake.aws.session import assume_role_session
    from icelake.local.lake import SOURCE_ROLE, TARGET_ROLE

    from benchmarks.throughput_probe import entry_seconds, probe

    s3 = boto3.client("s3", region_name="us-east-1")
    bucket = "icelake-bench-calibration"
    s3.create_bucket(Bucket=bucket)
    measured = probe(s3, bucket, requests, 16)
    starts = []
    for _ in range(3):
        started = time.perf_counter()
        for role in (SOURCE_ROLE, TARGET_ROLE):
            session = assume_role_session(role)
            session.client("s3"), session.client("glue")
        starts.append(time.perf_counter() - started)
    start = sorted(starts)[1]
    parallel = _effective_parallel(s3, bucket, measured["latency_s"]["head"])
    if manifest is not None:
        measured["manifest_entry_s"] = round(entry_seconds(str(manifest), manifest.read_bytes()), 8)
    return {
        **embedded_throughput(),
        **measured,
        "name": "embedded, calibrated in the run",
        "measured": f"benchmarks.throughput_probe ({requests} requests a kind) and a cold step's "
        f"sessions and clients, in the benchmark's process before the run, load average "
        f"{os.getloadavg()[0]:.1f}",
        "lambda_start_s": round(start, 3),
        # The embedded Glue job starts in a thread of this process, on the Spark session the
        # benchmark started, and begins as a step does: the roles assumed, the clients made.
        "glue_startup_s": round(start, 3),
        # One process serves every request, whatever sends it: a Lambda's threads and the Glue
        # job's two local executors alike (the interpreter's lock). The steps' own concurrency is
        # the code's; the requests in flight are what the endpoint answers at once.
        "endpoint_parallel": parallel,
        "glue_workers": 2,
    }


def _effective_parallel(s3: Any, bucket: str, head_s: float, threads: int = 16, each: int = 20) -> int:
    """How many requests embedded AWS really serves at once: HEADs from `threads` threads, their
    single-thread latency times their number over the seconds they took (at least 1)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    s3.put_object(Bucket=bucket, Key="parallel-probe", Body=b"x")
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda _: s3.head_object(Bucket=bucket, Key="parallel-probe"), range(threads * each)))
    elapsed = time.perf_counter() - started
    return max(1, round(threads * each * head_s / elapsed))


def assessed_estimate(deployment: Any, lake: Any, request: dict[str, Any], run_id: str) -> dict[str, Any]:
    """The table's estimate from a run of the request in mode assess (one table selected), and
    its Inventory step's seconds (`inventory_s`): a step's start on this AWS under this load (its
    roles assumed, clients made, catalog read, a worklist written), measured on a step that is
    not one of those estimated. The assessment runs twice and the second is taken: the embedded
    AWS runs every step in this one process, warm after its first invocation (its modules
    imported, its sessions kept: icelake/aws/warm.py), as the migration's steps then run; the
    first run's Inventory is the process's cold start, which no step of the migration pays."""
    from icelake.local.embedded import run_execution
    from icelake.local.lambda_runtime import recording_invocations
    from icelake.workflow.client import read_report

    for attempt in (f"{run_id}-cold", run_id):
        body = {**request, "run_id": attempt, "mode": "assess"}
        with recording_invocations() as calls:
            result = run_execution(deployment.state_machine_arn, body, timeout=3600, name=attempt)
        if result.status != "SUCCEEDED":
            raise SystemExit(f"the assessment {attempt} ended {result.status}: {result.failure()}")
    inventory_s = [c.seconds for c in calls if c.function_name.endswith("-inventory")]
    report_s = [c.seconds for c in calls if c.function_name.endswith("-report")]
    (table,) = read_report(result.output["report_uri"])["tables"]
    if not table.get("estimate"):
        raise SystemExit(f"the assessment made no estimate: {table.get('blockers')}")
    counts = ("data_files", "delete_files", "files_to_copy", "bytes_to_copy", "metadata_files", "snapshots")
    return {
        "engine": table["engine"],
        "engine_rule": table.get("engine_rule"),
        "table": {k: table.get(k) for k in counts},
        "load_average": round(os.getloadavg()[0], 1),
        "inventory_s": round(inventory_s[0], 3) if inventory_s else None,
        "report_s": round(report_s[0], 3) if report_s else None,
        **table["estimate"],
    }


def plan_step_start(deployment: Any, lake: Any, model: dict[str, Any]) -> dict[str, Any]:
    """A Lambda step's fixed work on this AWS under this load, measured on a step of the kind the
    estimate times but of another table: the Plan step of the sample lake's `sales.orders`
    (pyiceberg's, three commits; `publish_sample_tables`) in a dry run, run twice and the second
    taken (warm, as the migration's steps are), less its S3 requests at `model`'s latencies. What
    remains is what every Plan and Validate pays whatever the table: the two accounts' sessions
    and clients, the target's Glue table read, the ledger's claim and records, the journal
    written (about 7 calls besides the table's requests). The assessment run's Inventory, which
    the start was before, makes fewer and cheaper ones (its 0.15 s against a Plan's 0.25 s)."""
    from icelake.local.embedded import run_execution
    from icelake.local.lake import publish_sample_tables
    from icelake.workflow.client import read_report

    publish_sample_tables(lake)
    for attempt in ("start-cold", "start-warm"):
        body = lake.request(
            attempt,
            selection={"tables": ["sales.orders"]},
            options={"dry_run": True, "validation": "metadata", "throughput": model},
        )
        result = run_execution(deployment.state_machine_arn, body, timeout=600, name=attempt)
        if result.status != "SUCCEEDED":
            raise SystemExit(f"the dry run {attempt} ended {result.status}: {result.failure()}")
    (outcome,) = read_report(result.output["report_uri"])["tables"]
    requests = outcome["requests_by_phase"]["plan"]
    latency = sum(n * model["latency_s"].get(kind, 0.0) for kind, n in requests.items())
    seconds = float(outcome["duration_s"]["plan"])
    return {
        "plan_s": seconds,
        "plan_requests": sum(requests.values()),
        "requests_s": round(latency, 3),
        "start_s": round(max(0.0, seconds - latency), 3),
    }


def with_measured_start(
    assessed: dict[str, Any], model: dict[str, Any], step_start: float | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model with a step's start measured (`step_start`: `plan_step_start`'s; else the (warm)
    assessment run's Inventory's), a run's map_overhead_s as its Inventory and Report took them,
    and the estimate made again under it (the estimate is of the same plan)."""
    if assessed.get("inventory_s") is None:
        return assessed, model
    start = assessed["inventory_s"] if step_start is None else step_start
    # A start outside its range widens the range by itself (ThroughputModel.bounds)
    started = {**model, "lambda_start_s": start, "glue_startup_s": start}
    if assessed.get("report_s") is not None:  # a run's own steps: its Inventory and Report
        started["map_overhead_s"] = round(assessed["inventory_s"] + assessed["report_s"], 3)
    return re_estimated(assessed, started), started


def paired(estimate: dict[str, Any], outcome: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per phase: estimated and measured seconds and requests, and measured / estimated."""
    out: dict[str, dict[str, Any]] = {}
    for phase in PHASES:
        est_s = float(estimate["duration_by_phase"].get(phase, 0.0))
        got_s = float(outcome.get("duration_s", {}).get(phase, 0.0))
        est_r = sum(estimate["requests_by_phase"].get(phase, {}).values())
        got_r = sum(outcome.get("requests_by_phase", {}).get(phase, {}).values())
        out[phase] = {
            "estimated_s": round(est_s, 2),
            "measured_s": round(got_s, 2),
            "time_ratio": round(got_s / est_s, 3) if est_s else None,
            "estimated_requests": est_r,
            "measured_requests": got_r,
            "requests_ratio": round(got_r / est_r, 3) if est_r else None,
        }
    return out


def misses(pairs: dict[str, dict[str, Any]]) -> list[str]:
    """The phases whose measurement is outside its goal (empty: every estimate held)."""
    out = []
    for phase, p in pairs.items():
        if p["time_ratio"] is None or abs(p["time_ratio"] - 1) > TIME_GOAL:
            out.append(f"{phase} time {p['measured_s']} s against {p['estimated_s']} s")
        if p["requests_ratio"] is None or abs(p["requests_ratio"] - 1) > REQUESTS_GOAL:
            out.append(f"{phase} requests {p['measured_requests']} against {p['estimated_requests']}")
    return out


def print_pairs(console: Console, pairs: dict[str, dict[str, Any]], title: str) -> None:
    table = Table(title=title)
    for col in ("phase", "estimated s", "measured s", "ratio", "est. requests", "requests", "ratio"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for phase, p in pairs.items():
        table.add_row(
            phase,
            str(p["estimated_s"]),
            str(p["measured_s"]),
            str(p["time_ratio"]),
            f"{p['estimated_requests']:,}",
            f"{p['measured_requests']:,}",
            str(p["requests_ratio"]),
        )
    console.print(table)


def re_estimated(assessed: dict[str, Any], model: dict[str, Any]) -> dict[str, Any]:
    """The estimate `assessed_estimate` returned, made again under another model from the same
    plan (its requests by phase, files and bytes to copy, engine): the estimate is a function of
    those and the model, so a model measured later can be set beside a run measured earlier."""
    from icelake.assess.estimate.model import PlannedWork, estimate_table
    from icelake.assess.estimate.prices import load_prices
    from icelake.throughput import ThroughputModel

    phases = assessed["requests_by_phase"]
    work = PlannedWork(
        plan_requests=phases["plan"],
        run_requests=phases["copy"],
        validate_requests=phases["validate"],
        bytes_to_copy=int(assessed["table"]["bytes_to_copy"]),
        files_to_copy=int(assessed["table"]["files_to_copy"]),
        engine=assessed["engine"],
        entries_read=assessed.get("entries_by_phase") or {},
        validated_snapshots=int(assessed["table"].get("snapshots") or 0),
    )
    estimate = estimate_table(
        work,
        ThroughputModel.model_validate(model),
        load_prices("us-east-1"),
        cross_region=False,
        stored_bytes=work.bytes_to_copy,
        sync_days=30,
    )
    return {**assessed, **estimate.model_dump(mode="json")}


def freeze_estimate(
    model: dict[str, Any], commits: int, files: int, size: int, entries_per_commit: float | None = None
) -> dict[str, Any]:
    """The assessment's cutover freeze (icelake/assess/estimate/sync_window.py) for a table whose last
    interval brought `commits` commits adding `files` files of `size` bytes in all, each commit
    writing `entries_per_commit` manifest entries (commit_entries.py), under `model`: the rates
    given to `sync_window` make one interval (a day) bring exactly those."""
    from icelake.assess.estimate.engine_choice import Thresholds
    from icelake.assess.estimate.model import TableEstimate
    from icelake.assess.estimate.prices import load_prices
    from icelake.assess.estimate.sync_window import SyncInputs, per_copy_requests, sync_window
    from icelake.throughput import ThroughputModel

    throughput = ThroughputModel.model_validate(model)
    full = re_estimated(
        {
            "requests_by_phase": {"plan": {}, "copy": {}, "validate": {}},
            "table": {"bytes_to_copy": 0, "files_to_copy": 0},
            "engine": "lambda",
        },
        model,
    )
    inputs = SyncInputs(
        schedule="rate(1 day)",
        window_days=1,
        model=throughput,
        prices=load_prices("us-east-1"),
        thresholds=Thresholds(20_000, 100 * 1024**3, False),
        cross_region=False,
        # the bench's files: written with their SHA-256 (S3FileIO.write), to a KMS-encrypted target
        per_copy=per_copy_requests(None, True, target_kms=True),
        directories=1,
        entries_per_commit=entries_per_commit,
    )
    _, freeze = sync_window(
        (float(commits), float(files), float(size)), TableEstimate.model_validate(full), inputs
    )
    return freeze.model_dump(mode="json")
