"""A verify run of one table (modes verify and repair): its S3 requests, its time in each engine,
and which engine checks it. The assessment estimates it from the table's plan; the Verify step
chooses its engine from the target's metadata.json alone (the snapshot summaries' totals), before
reading anything that grows with the table.

The work is `check/proved.py`'s: a HEAD of each file the record proves by a checksum (the metadata
files, manifest lists, manifests and delete files icelake rewrote) or that lies outside the table
location, the location's listing in ranges for the copies, and a GET of the metadata file, each
manifest list and each manifest, whose entries are decoded (`VERIFY_PASSES` times an entry's
plan read: decoded, then checked). Rules of the engine, as the copy's (`engine_choice.py`):
1. threshold: more files than `options.verify_glue_threshold_files` -> Glue;
2. estimate: the Lambda's check expected past 60 % of the Verify Lambda's timeout -> Glue;
3. else the Lambda.
The tiers' reads after the check (`sample`: ten data files; `rows`: every row) are not in it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from icelake.assess.estimate.engine_choice import LAMBDA_SHARE, EngineChoice
from icelake.constants import STEP_LIMITS
from icelake.migrate import metadata_json as mj
from icelake.migrate.check.proof_chunks import KEYS_PER_PAGE, RANGE_KEYS
from icelake.migrate.check.proved import proof_requests
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.table_size import estimate_size
from icelake.throughput import ThroughputModel

VERIFY_TIMEOUT_S = STEP_LIMITS["verify"][1]
# A verify's CPU per data or delete file, in manifest entries' plan reads (manifest_entry_s): the
# entry decoded (lighter than a plan's read), then its record row found and compared. `make
# bench-verify` (benchmarks/verify_bench.py) measures the Lambda engine's whole process CPU at
# 0.9 of them a file, its listing's parse included (benchmarks/RESULTS.md, "Verify at scale").
VERIFY_PASSES = 1.0


@dataclass(frozen=True)
class VerifyWork:
    """What a verify of the table checks."""

    files: int  # data and delete files the metadata reaches
    listed: int  # of those, proved by the table location's listing (copies under it)
    headed: int  # files proved by a HEAD each (metadata, lists, manifests, delete files, elsewhere)
    lists: int
    manifests: int

    @classmethod
    def of_plan(cls, plan: TablePlan) -> VerifyWork:
        """The verify of the target this plan migrates (the assessment's): its copies are taken to
        lie under the target's location, as Validate's estimate takes them; its delete files are
        rewritten (a HEAD each), as its metadata files are."""
        metadata = len(plan.metadata_files) + len(plan.manifest_lists) + len(plan.manifests)
        present = max(0, plan.files_planned - metadata)  # data, delete and statistics files
        deletes = len(plan.delete_files)
        lists, manifests = len(plan.manifest_lists), len(plan.manifests)
        return cls(present, present - deletes, max(1, metadata) + deletes, lists, manifests)

    @classmethod
    def of_metadata(cls, meta: mj.Metadata) -> VerifyWork | None:
        """The verify of a target, from its metadata.json: its snapshot summaries' files (an upper
        bound), a manifest per snapshot at least; None when a summary has no running totals."""
        size = estimate_size(meta)
        if size is None:
            return None
        lists = sum(1 for s in meta.get("snapshots", []) if "manifest-list" in s)
        headed = 1 + len(mj.metadata_log(meta)) + 2 * lists
        return cls(size.files, size.files, headed, lists, lists)


def verify_requests(work: VerifyWork) -> dict[str, int]:
    return proof_requests(work.headed, work.listed, work.lists, work.manifests)


def verify_seconds(work: VerifyWork, model: ThroughputModel, *, glue: bool) -> float:
    """Seconds of the files check in `engine`: its start; HEADs and GETs at their latency over the
    engine's concurrency; the listing's ranges side by side, each page's latency, and each key's
    cost on a core; the entries decoded and checked on a core (Glue: one per worker)."""
    requests = verify_requests(work)
    concurrency = model.glue_workers * model.glue_threads_per_worker if glue else model.lambda_parallel
    parallel = min(concurrency, model.endpoint_parallel or concurrency)
    cores = model.glue_workers if glue else 1
    start = model.glue_startup_s if glue else model.lambda_start_s
    latency = model.latency_s
    heads_gets = (
        requests["head"] * latency.get("head", 0.02) + requests["get"] * latency.get("get", 0.03)
    ) / parallel
    ranges = math.ceil(work.listed / RANGE_KEYS) if requests["list"] else 0
    # A range's pages come one after another; ranges go side by side, a thread each in a Lambda, a
    # task each in the Glue job (as many at once as it has cores)
    pages_at_once = min(cores if glue else parallel, ranges) or 1
    listing = requests["list"] * latency.get("list", 0.08) / pages_at_once
    # each key's parse is a core's, and a range's keys one core's: side by side only across ranges
    listing += requests["list"] * KEYS_PER_PAGE * model.list_key_s / min(cores, ranges or 1)
    cpu = work.files * VERIFY_PASSES * model.manifest_entry_s / cores
    # S3's rate per prefix: the metadata files' HEADs and GETs share theirs, the listing its own
    reads = max(requests["head"] + requests["get"], requests["list"]) / model.prefix_read_per_s
    return start + max(heads_gets + listing, reads) + cpu


def choose_verify_engine(
    work: VerifyWork | None, model: ThroughputModel, threshold_files: int | None
) -> EngineChoice:
    """The Verify step's engine for a table (see the module's rules)."""
    if work is None:
        return EngineChoice(
            "lambda", "no running totals in the snapshot summaries: the Lambda, which reads it all"
        )
    if threshold_files is not None and work.files > threshold_files:
        return EngineChoice(
            "glue",
            f"files: {work.files:,} to verify, over options.verify_glue_threshold_files {threshold_files:,}",
        )
    seconds = verify_seconds(work, model, glue=False)
    limit = LAMBDA_SHARE * VERIFY_TIMEOUT_S
    estimated = (
        f"the Lambda's check of {work.files:,} files is estimated at {seconds:,.0f} s (model {model.name!r})"
    )
    if seconds > limit:
        return EngineChoice(
            "glue",
            f"estimate: {estimated}, over {LAMBDA_SHARE:.0%} of the Verify Lambda's "
            f"{VERIFY_TIMEOUT_S} s timeout",
        )
    return EngineChoice(
        "lambda", f"estimate: {estimated}, within {LAMBDA_SHARE:.0%} of its {VERIFY_TIMEOUT_S} s timeout"
    )


def verify_estimate(work: VerifyWork, model: ThroughputModel, threshold_files: int | None) -> dict[str, Any]:
    """The assessment's figures of a verify run: requests, seconds in each engine, the engine."""
    chosen = choose_verify_engine(work, model, threshold_files)
    return {
        "files": work.files,
        "requests": verify_requests(work),
        "duration_s": {
            "lambda": round(verify_seconds(work, model, glue=False), 3),
            "glue": round(verify_seconds(work, model, glue=True), 3),
        },
        "engine": chosen.engine,
        "engine_rule": chosen.rule,
    }
