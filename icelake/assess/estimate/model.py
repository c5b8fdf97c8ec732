"""The estimate model: S3 requests, time and cost of migrating a table, from the plan a real run
makes (`build_plan`, counted by the assessment's own clients) and the requests the run's steps
send after it (`engine.migration_requests`, `copy.copy_requests`, `validate.files_check_requests`).

Time: each phase is its requests at a per-request latency, spread over the concurrency the step
really has (the plan fetches 4 metadata files ahead; a copy Lambda runs 16 copies at once, the Glue
job its workers' cores; none more than the endpoint answers at once, `endpoint_parallel`), plus the
bytes of server-side copies at a per-copy speed, bounded below by S3's request rates per prefix,
plus the manifest entries each phase decodes (`full_copy_entries`), plus the step's start (a
Lambda invocation and its fixed calls, a Glue job run). Tables
run side by side in the Map's lanes (`options.concurrency`): the run lasts as long as its longest
lane. Cost: the same work priced by icelake/assess/estimate/cost.py, as a run's own account is.
Every figure here is a model parameter (`ThroughputModel`), written into assessment.json.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from icelake.assess.estimate.cost import TABLE_TRANSITIONS, Work, cost_usd
from icelake.assess.estimate.prices import PriceTable
from icelake.aws.request_count import REQUEST_KINDS, added
from icelake.throughput import ThroughputModel

__all__ = [
    "PlannedWork",
    "TableEstimate",
    "ThroughputModel",
    "copy_seconds",
    "estimate_table",
    "full_copy_entries",
    "lay_out",
]

PHASES = ("plan", "copy", "validate")
LIST_PAGE_KEYS = 1000  # ListObjectsV2's page


@dataclass(frozen=True)
class PlannedWork:
    """What the plan says a table's migration does (the estimate's inputs)."""

    plan_requests: Mapping[str, int]  # the Plan step's requests, as the assessment's clients counted them
    run_requests: Mapping[str, int]  # what the copy sends: its own plan (counted alike), then its writes
    validate_requests: Mapping[str, int]
    bytes_to_copy: int
    files_to_copy: int
    engine: str  # lambda | glue
    # The copies' busiest S3 prefix's share of them (`Copies.prefix_spread`): S3 limits each prefix,
    # so the copy is bound by that prefix's rate, not the table's. 1.0: all on one prefix.
    busiest_share: float = 1.0
    # Manifest entries each phase reads (plan, copy, validate), at `manifest_entry_s` each: a full
    # copy's (full_copy_entries), a sync's new manifests' (sync_window.py).
    entries_read: Mapping[str, int] = field(default_factory=dict)
    # Snapshots Validate compares one by one (all of a full copy's, a sync's new ones): pyiceberg
    # reads each one's manifest list on both sides (`validated_reads`)
    validated_snapshots: int = 0


class TableEstimate(BaseModel):
    model_config = ConfigDict(frozen=True)
    requests: dict[str, int]
    requests_by_phase: dict[str, dict[str, int]]
    duration_s: float
    duration_by_phase: dict[str, float]
    # The manifest entries each phase decodes (PlannedWork.entries_read), timed in its duration
    entries_by_phase: dict[str, int] = {}
    # (low, high): the model's latency spread and start-up ranges (ThroughputModel.bounds); None in
    # an estimate made before they existed.
    duration_range_s: tuple[float, float] | None = None
    cost_usd: dict[str, float]


def estimate_table(
    work: PlannedWork,
    model: ThroughputModel,
    prices: PriceTable,
    *,
    cross_region: bool,
    stored_bytes: int,
    sync_days: float,
    stored_objects: int | None = None,
) -> TableEstimate:
    """The table's requests, time and cost; `stored_objects`: the objects of an S3 Tables target
    (its storage priced at S3 Tables' rate, with the monitoring fee per object; None: S3's)."""
    by_phase = {
        "plan": added(work.plan_requests),
        # The copy step plans again (its own plan, from the same metadata), then writes.
        "copy": added(work.run_requests),
        "validate": added(work.validate_requests),
    }
    glue = work.engine == "glue"
    seconds = _seconds(work, by_phase, model, glue)
    low, high = (sum(_seconds(work, by_phase, m, glue).values()) for m in model.bounds())
    total = added(*by_phase.values())
    priced = Work(
        requests=total,
        lambda_seconds={k: v for k, v in seconds.items() if not (glue and k == "copy")},
        glue_seconds=seconds["copy"] if glue else 0.0,
        glue_workers=model.glue_workers,
        glue_worker_type=model.glue_worker_type,
        transitions=TABLE_TRANSITIONS,
        transfer_bytes=work.bytes_to_copy if cross_region else 0,
        stored_bytes=stored_bytes,
        storage_days=sync_days,
        stored_objects=stored_objects,
    )
    return TableEstimate(
        requests=total,
        requests_by_phase=by_phase,
        duration_s=round(sum(seconds.values()), 3),
        duration_by_phase={k: round(v, 3) for k, v in seconds.items()},
        entries_by_phase=dict(work.entries_read),
        duration_range_s=(round(low, 3), round(high, 3)),
        cost_usd=cost_usd(prices, priced),
    )


def _seconds(
    work: PlannedWork, by_phase: Mapping[str, Mapping[str, int]], model: ThroughputModel, glue: bool
) -> dict[str, float]:
    files = work.files_to_copy
    # Entries are decoded on one core, after their manifest's GET (counted in the requests)
    decoding = {phase: n * model.manifest_entry_s for phase, n in work.entries_read.items()}
    plan_parallel = _at_once(model, model.plan_parallel)
    return {
        "plan": model.lambda_start_s
        + _requests_time(by_phase["plan"], model, plan_parallel, files=files)
        + decoding.get("plan", 0.0),
        "copy": _copy_time(work, by_phase["copy"], model, glue) + decoding.get("copy", 0.0),
        "validate": model.lambda_start_s
        + _requests_time(by_phase["validate"], model, plan_parallel, files=files)
        + decoding.get("validate", 0.0)
        + validated_reads(work.validated_snapshots, model),
    }


def _at_once(model: ThroughputModel, parallel: int) -> int:
    """The requests a phase has in flight: its own concurrency, within what S3 answers at once."""
    return min(parallel, model.endpoint_parallel or parallel)


# Reads of each manifest entry the copy step makes: its own plan reads them, and its rewrite
# splices their paths where that read found them (a third to a half of a read: 0.35 by
# benchmarks/throughput_probe.entry_seconds beside avro_files.rewrite_manifest on a 100,000-entry
# manifest, 0.54 in bench-cutover's profile of its handlers, benchmarks/RESULTS.md). A full
# copy's and a sync's alike (sync_window.ENTRY_PASSES).
COPY_PASSES = 1.5


def full_copy_entries(entries: int, *, glue: bool, planned_by_glue: bool, prune: bool) -> dict[str, int]:
    """The manifest entries each phase of a full copy decodes, `entries` being those of the
    manifests its plan reads: the Plan step's plan (none when the Glue job plans), the copy's own
    plan and its rewrite (`COPY_PASSES`), the check of the
    target's files (a pass, in the engine that runs it: expected.by_engine), and Validate's prune
    (a pass over the target's manifests, when `prune`). At 100,000 entries and 25 us each, a pass
    is 2.5 s: a third of Validate's time on embedded AWS (WORKFLOW_RESULTS.md)."""
    check = 1.0
    passes = {
        "plan": 0.0 if planned_by_glue else 1.0,
        "copy": COPY_PASSES + (check if glue else 0.0),
        "validate": (0.0 if glue else check) + (1.0 if prune else 0.0),
    }
    return {phase: round(entries * n) for phase, n in passes.items() if n and entries}


def validated_reads(snapshots: int, model: ThroughputModel) -> float:
    """Seconds of pyiceberg's reads in Validate (icelake/migrate/check/validate.py): each side's
    metadata.json and, per snapshot compared, its manifest list, one after another, each opened
    with a HEAD and read with a GET (pyarrow's S3 filesystem). `python -m benchmarks.validate_reads`
    on embedded AWS: 3.5 to 3.8 s for 100 snapshots against 4.76 estimated, 0.98 for 25 against
    1.23 (pyarrow's requests are a little quicker than botocore's, whose latencies the model has;
    benchmarks/WORKFLOW_RESULTS.md). These requests are not in the run's request counts (pyarrow's
    client is not botocore's), so not in the estimate's either: their time only."""
    each = model.latency_s.get("head", 0.02) + model.latency_s.get("get", 0.03)
    return 2 * (1 + snapshots) * each


def _requests_time(
    requests: Mapping[str, int],
    model: ThroughputModel,
    parallel: int,
    busiest: float = 1.0,
    *,
    files: int = 0,
) -> float:
    """Requests at their latency, `parallel` at a time, and no faster than their busiest prefix's
    rates (`busiest`: its share of them; S3 limits each prefix, not the bucket). The listings
    return the table's `files` (those a plan's source check or Validate's file check settles) in
    full pages of 1,000 keys, each key at `list_key_s`."""
    listed_keys = min(requests.get("list", 0) * LIST_PAGE_KEYS, files)
    latency = sum(n * model.latency_s.get(kind, 0.05) for kind, n in requests.items()) / parallel
    latency += listed_keys * model.list_key_s / parallel
    writes = sum(requests.get(k, 0) for k in ("put", "copy", "delete", "list")) * busiest
    reads = sum(requests.get(k, 0) for k in ("get", "head")) * busiest
    return max(latency, writes / model.prefix_write_per_s, reads / model.prefix_read_per_s)


def _copy_time(work: PlannedWork, requests: Mapping[str, int], model: ThroughputModel, glue: bool) -> float:
    return copy_seconds(
        work.run_requests,
        work.bytes_to_copy,
        model,
        glue=glue,
        busiest=work.busiest_share,
        files=work.files_to_copy,
    )


def copy_seconds(
    run_requests: Mapping[str, int],
    bytes_to_copy: int,
    model: ThroughputModel,
    *,
    glue: bool,
    busiest: float = 1.0,
    files: int = 0,
) -> float:
    """The copy step's seconds in one engine: its start, its requests, its bytes (what the Plan
    step's choice of engine weighs against the Lambda's timeout). `busiest`: the copies' busiest
    prefix's share of them (PlannedWork.busiest_share); `files`: what its plan's listings return."""
    engine_parallel = model.glue_workers * model.glue_threads_per_worker if glue else model.lambda_parallel
    parallel = _at_once(model, engine_parallel)
    start = model.glue_startup_s if glue else model.lambda_start_s
    writing = _requests_time(run_requests, model, parallel, busiest, files=files)
    streaming = bytes_to_copy / (model.copy_mib_per_s * 1024**2) / parallel
    # Bytes moved with no CopyObject (the copy's requests name none) pass through the engine: a
    # target that takes no server-side copy, S3 Tables' storage. Its bandwidth bounds them.
    if bytes_to_copy and not run_requests.get("copy", 0):
        through = (
            model.glue_workers * model.glue_worker_stream_mib_per_s if glue else model.lambda_stream_mib_per_s
        )
        streaming = max(streaming, bytes_to_copy / (through * 1024**2))
    return start + writing + streaming


class Lane(BaseModel):
    """A table's place in the Map: which lane runs it, from when to when (seconds from the start)."""

    model_config = ConfigDict(frozen=True)
    table: str
    lane: int
    start_s: float
    end_s: float


def lay_out(durations: Mapping[str, float], concurrency: int) -> list[Lane]:
    """Tables on the Map's `concurrency` lanes, each started on the first lane free, longest first
    (the Map takes items in worklist order; longest-first is the layout to aim the order at)."""
    lanes = [(0.0, lane) for lane in range(max(1, concurrency))]
    heapq.heapify(lanes)
    placed = []
    for table, seconds in sorted(durations.items(), key=lambda kv: (-kv[1], kv[0])):
        free_at, lane = heapq.heappop(lanes)
        placed.append(
            Lane(table=table, lane=lane, start_s=round(free_at, 3), end_s=round(free_at + seconds, 3))
        )
        heapq.heappush(lanes, (free_at + seconds, lane))
    return placed


def zero_requests() -> dict[str, int]:
    return dict.fromkeys(REQUEST_KINDS, 0)
