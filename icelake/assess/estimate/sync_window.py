"""The sync window priced (issue 45) and the cutover's write freeze predicted (issue 43): what the
syncs between a table's first copy and its cutover cost, from its commit rate (commits.py) and how
often a sync runs (the deployment's `sync_schedule`, a request's `options.sync_interval`:
icelake/request/schedule.py).

A sync is incremental (icelake/migrate/plan/incremental.py): it reads the metadata versions logged
since the last sync, the new snapshots' manifest lists and their new manifests, lists around the
new files (inventory_near), copies only the files the commits added, and validates only the new
snapshots (validate_since). Its requests by phase are `sync_requests`: per commit, its
metadata.json, manifest list and manifest read, stat'd and rewritten; per file, its copy
(`copy.copy_requests`) and the listing pages that find it; and a constant. The constants and
per-commit counts were counted on the workflow's incremental runs on embedded AWS (1, 2 and 4
commits of one file; tests/e2e/test_sync_window.py holds a full run and n syncs to them). Time
and cost are the estimator's (`estimate.estimate_table`) on that work, with the engine Plan would
choose for the increment (`engine_choice.choose_engine`).

Per window (`sync_days`): syncs = the window over the interval. At fewer than one commit an
interval, that share of the syncs brings one commit each and the rest find nothing new (a plan
that reads the source's pointer and stops: `IDLE`); at more, every sync brings the interval's
commits.

The cutover's freeze is the last sync (the commits one interval brings: writers stop at most an
interval after the last scheduled sync) plus Register and the proof that the source did not move
(a catalog read of the source, the promotion's catalog writes), and the run's own Inventory and
Report (`rest`, the model's map_overhead_s): writers wait for the whole cutover run.

A commit's new manifests hold more entries than the files it added when its writer merges
manifests (Iceberg's Java merge append folds the table's small manifests into the one it writes):
the entries a commit writes are counted from the recent snapshots' manifest lists
(commit_entries.py), and each is read three times and rewritten once (`ENTRY_PASSES`), at the
model's `manifest_entry_s`. At 100,000 files that is most of a cutover's freeze.

What it leaves out: a commit's requests are counted as one new manifest's (an append; an
overwrite or a compaction writes more, whose entries are timed but whose GETs are not); the
Lambda-or-Glue choice of a sync weighs its files, not its entries; the files a commit
adds are taken to land in as many directories as the table's copies spread over, at most one a
file; the prune after a sync that follows an expiry (it reads the target's manifests: the whole
table); the catalog calls of Register and the proof are timed at the model's S3 latencies (the
model has no Glue latency); Glue's start-up counts when the increment goes to Glue; a sync of
commits that arrive while it runs is not modelled (the next sync takes them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from icelake.assess.estimate.cost import COST_KEYS
from icelake.assess.estimate.engine_choice import CopyWork, Thresholds, choose_engine
from icelake.assess.estimate.model import COPY_PASSES, PlannedWork, TableEstimate, estimate_table
from icelake.assess.estimate.prices import PriceTable
from icelake.aws.request_count import added
from icelake.migrate.copy.objects import copy_requests
from icelake.migrate.inventory import KEYS_PER_PAGE
from icelake.request.schedule import interval_seconds
from icelake.throughput import ThroughputModel

DAY_S = 86_400
# (constant, per commit) requests of one incremental sync through the workflow, by phase and kind,
# counted on embedded AWS (see the module's docstring). Per file: `_per_file`.
PER_SYNC: dict[str, dict[str, tuple[int, int]]] = {
    # the source's pointer and metadata.json, the target's of the last sync and its list; per
    # commit its list and manifest read, its three metadata files stat'd
    "plan": {"get": (7, 2), "head": (0, 3)},
    # the copy plans again, then writes: per commit three rewritten files (a PUT each, their
    # sources read again but one the plan holds), and the target's metadata directory listed
    "copy": {"get": (6, 5), "head": (0, 3), "put": (0, 3), "list": (1, 0)},
    # the target's new version and the last sync's, their lists; per commit its list and manifest
    "validate": {"get": (5, 2), "list": (1, 0)},
}
IDLE = {"plan": {"get": 7, "head": 1, "list": 1}}  # a sync that finds nothing new: Plan stops
# How many reads of each entry of its commits' new manifests a sync makes, by phase: Plan reads
# them; the Copy's plan reads them again and its rewrite splices their paths
# (estimate.COPY_PASSES); Validate's check of the new files reads them
# (icelake/migrate/check/since.py). Seen in the profile of bench-cutover's handlers at 100,000
# files (benchmarks/RESULTS.md).
ENTRY_PASSES = {"plan": 1.0, "copy": COPY_PASSES, "validate": 1.0}
REGISTER_CALLS = 3  # Register: the target's Glue table read, written, the ledger row
PROOF_CALLS = 2  # the cutover's proof: the source's Glue table read, the promotion written


class SyncWindow(BaseModel):
    """The syncs of one table between its first copy and its cutover, priced."""

    model_config = ConfigDict(frozen=True)
    schedule: str  # the schedule expression the syncs run on
    interval_s: float
    window_days: float
    syncs: float  # in the window
    syncs_with_commits: float  # of them, those that bring commits
    commits_per_sync: float  # in a sync that brings commits
    files_per_sync: int
    bytes_per_sync: int
    # The manifest entries a commit writes, from the recent snapshots (None: not counted, one a file)
    manifest_entries_per_commit: float | None = None
    per_sync: TableEstimate  # one sync that brings commits: requests by phase, time, cost
    idle_sync: TableEstimate  # one that finds nothing new
    requests: dict[str, int]  # the window's, by kind
    duration_s: float  # the window's syncs' seconds, added up
    cost_usd: dict[str, float]  # the window's


class CutoverFreeze(BaseModel):
    """How long writers stop at cutover: the last sync, Register and the proof."""

    model_config = ConfigDict(frozen=True)
    commits: int  # the last sync's: one interval's
    files: int
    manifest_entries: int = 0  # the entries its commits wrote, read three times and rewritten
    freeze_s: float
    freeze_range_s: tuple[float, float]
    # plan, copy, register, validate, proof, and rest: the run's Inventory and Report (map_overhead_s)
    freeze_by_step: dict[str, float]
    full_copy_s: float  # the table's first copy, for comparison
    full_copy_range_s: tuple[float, float] | None = None


@dataclass(frozen=True)
class SyncInputs:
    """What the window is priced from, besides the table's commit history."""

    schedule: str
    window_days: float
    model: ThroughputModel
    prices: PriceTable
    thresholds: Thresholds
    cross_region: bool
    per_copy: Mapping[str, int]  # one copy's requests (copy.copy_requests for the table's files)
    directories: int  # the prefixes the table's files spread over (Copies.prefix_spread)
    # The manifest entries a commit writes (commit_entries.entries_per_commit); None: unknown, and
    # taken as the files it adds (one entry each, as a fast append writes them)
    entries_per_commit: float | None = None


def per_copy_requests(
    etag: str | None, checksum_known: bool, *, target_kms: bool, streamed: bool = False
) -> dict[str, int]:
    """One copy's requests for a file like the table's (its listed ETag, whether its checksum is
    known); `streamed`: into S3 Tables' storage, a GET and a PUT (copy.table_storage)."""
    known = checksum_known
    return copy_requests(0, checksum_known=known, etag=etag, target_kms=target_kms, streamed=streamed)


def sync_requests(
    commits: int, files: int, per_copy: Mapping[str, int], directories: int
) -> dict[str, dict[str, int]]:
    """One incremental sync's requests by phase (plan, copy, validate) for `commits` commits adding
    `files` files in all (see PER_SYNC)."""
    if commits <= 0:
        return {"plan": dict(IDLE["plan"]), "copy": {}, "validate": {}}
    out = {
        phase: {kind: const + per * commits for kind, (const, per) in kinds.items()}
        for phase, kinds in PER_SYNC.items()
    }
    # What exists among the new files, listed around them: the source's and the target's check in
    # Plan, again in the copy's plan, the target's in Validate; the versions logged since, listed too.
    pages = _pages(files, directories)
    logged = 1 if commits > 1 else 0
    out["plan"]["list"] = 2 * pages + logged
    out["copy"]["list"] += 2 * pages + logged
    out["validate"]["list"] += pages
    copies = {kind: n * files for kind, n in per_copy.items()}
    out["copy"] = added(out["copy"], copies)
    return out


def sync_entries(commits: int, files: int, per_commit: float | None) -> int:
    """The manifest entries `commits` commits adding `files` files wrote: at least one a file."""
    if commits <= 0:
        return 0
    return max(files, round(per_commit * commits)) if per_commit is not None else files


def _pages(files: int, directories: int) -> int:
    """Listing pages that find `files` new files spread over at most `directories` directories."""
    spread = max(1, min(directories, files))
    return max(spread, math.ceil(files / KEYS_PER_PAGE))


def sync_window(
    busiest: tuple[float, float, float], full: TableEstimate, inputs: SyncInputs
) -> tuple[SyncWindow, CutoverFreeze]:
    """The table's sync window priced, and its cutover's freeze. `busiest`: its commits, files and
    bytes a day (commits.CommitHistory.busiest)."""
    interval = interval_seconds(inputs.schedule)
    per_day, files_a_day, bytes_a_day = busiest
    per_interval = per_day * interval / DAY_S
    # What one commit adds, on average over the window the rate comes from.
    files_each, bytes_each = (files_a_day / per_day, bytes_a_day / per_day) if per_day else (0.0, 0.0)
    syncs = inputs.window_days * DAY_S / interval
    busy_share = min(1.0, per_interval)
    commits = max(1, round(per_interval))
    files, size = round(files_each * commits), round(bytes_each * commits)
    per_sync = _sync_estimate(commits, files, size, inputs)
    idle = _sync_estimate(0, 0, 0, inputs)
    busy, quiet = syncs * busy_share, syncs * (1 - busy_share)
    window = SyncWindow(
        schedule=inputs.schedule,
        interval_s=interval,
        window_days=inputs.window_days,
        syncs=round(syncs, 3),
        syncs_with_commits=round(busy, 3),
        commits_per_sync=round(max(1.0, per_interval), 3),
        files_per_sync=files,
        bytes_per_sync=size,
        manifest_entries_per_commit=inputs.entries_per_commit,
        per_sync=per_sync,
        idle_sync=idle,
        requests={
            k: round(per_sync.requests.get(k, 0) * busy + idle.requests.get(k, 0) * quiet)
            for k in sorted({*per_sync.requests, *idle.requests})
        },
        duration_s=round(per_sync.duration_s * busy + idle.duration_s * quiet, 3),
        cost_usd={
            k: round(per_sync.cost_usd.get(k, 0.0) * busy + idle.cost_usd.get(k, 0.0) * quiet, 6)
            for k in COST_KEYS
        },
    )
    # The last sync takes what one interval brings, rounded up: writers stop at most an interval
    # after the last scheduled sync.
    last = math.ceil(per_interval) if per_interval > 0 else 0
    last_files = round(files_each * last)
    freeze_sync = _sync_estimate(last, last_files, round(bytes_each * last), inputs)
    entries = sync_entries(last, last_files, inputs.entries_per_commit)
    return window, _freeze(freeze_sync, (last, last_files, entries), full, inputs.model)


def _sync_estimate(commits: int, files: int, size: int, inputs: SyncInputs) -> TableEstimate:
    """One sync of `commits` commits adding `files` files of `size` bytes, timed and priced."""
    requests = sync_requests(commits, files, inputs.per_copy, inputs.directories)
    engine = choose_engine(CopyWork(files, size, requests["copy"]), inputs.thresholds, inputs.model).engine
    entries = sync_entries(commits, files, inputs.entries_per_commit)
    work = PlannedWork(
        plan_requests=requests["plan"],
        run_requests=requests["copy"],
        validate_requests=requests["validate"],
        bytes_to_copy=size,
        files_to_copy=files,
        engine=engine,
        busiest_share=1.0 / max(1, min(inputs.directories, files)),
        entries_read={phase: round(entries * n) for phase, n in ENTRY_PASSES.items()},
        validated_snapshots=commits,  # validate_since: the new snapshots only
    )
    return estimate_table(
        work, inputs.model, inputs.prices, cross_region=inputs.cross_region, stored_bytes=0, sync_days=0
    )


def _freeze(
    sync: TableEstimate, change: tuple[int, int, int], full: TableEstimate, model: ThroughputModel
) -> CutoverFreeze:
    """The last sync of `change` (commits, files, manifest entries), then Register and the
    proof, at the model and at its low and high ends."""
    commits, files, entries = change

    def catalog(m: ThroughputModel) -> tuple[float, float, float]:
        register = m.lambda_start_s + REGISTER_CALLS * m.latency_s.get("put", 0.05)
        return register, PROOF_CALLS * m.latency_s.get("get", 0.03), m.map_overhead_s

    register, proof, rest = catalog(model)
    steps = {"register": round(register, 3), "proof": round(proof, 3), "rest": round(rest, 3)}
    by_step = {**sync.duration_by_phase, **steps}
    by_step = {k: by_step.get(k, 0.0) for k in ("plan", "copy", "register", "validate", "proof", "rest")}
    low_m, high_m = model.bounds()
    low_sync, high_sync = sync.duration_range_s or (sync.duration_s, sync.duration_s)
    low, high = low_sync + sum(catalog(low_m)), high_sync + sum(catalog(high_m))
    return CutoverFreeze(
        commits=commits,
        files=files,
        manifest_entries=entries,
        freeze_s=round(sum(by_step.values()), 3),
        freeze_range_s=(round(low, 3), round(high, 3)),
        freeze_by_step=by_step,
        full_copy_s=full.duration_s,
        full_copy_range_s=full.duration_range_s,
    )
