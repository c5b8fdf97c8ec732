"""A verify run of one table (modes verify and repair): its S3 requests, its time in each engine,
and which engine checks it. The assessment estimates it from the table's plan; the Verify step
chooses its engine from the target's metadata.json alone (the snapshot summaries' totals), before
reading anything that grows with the table.

The work is `check/proved.py`'s, in its order, each phase after the last:
1. the metadata files: a HEAD of the metadata file, its logged versions, its statistics files and
   its manifest lists, then a GET of each list, then a HEAD of each manifest, on this process's
   `HEAD_THREADS` threads (at most what the endpoint answers at once, `endpoint_parallel`) in
   batches of `HEAD_BATCH` HEADs one after another (so a phase of up to 320 HEADs costs a batch's
   20 latencies), all on the metadata prefix (at most its read rate, at the pacing's pace);
2. the manifests' GETs, their entries decoded (`DECODE_PASSES` times an entry's plan read) on the
   engine's cores;
3. the data and delete files: each one's proof found and judged in the driver (`DRIVER_PASSES`;
   in the Glue job, also pickled with its proof to the tasks, `SHIP_PASSES`),
   the location's listing in ranges of `RANGE_KEYS` (side by side: a thread each in a Lambda, whose
   one core parses every key; a task each in the Glue job, as many at once as it has cores), and a
   HEAD of each file the listing does not answer for (delete files, files elsewhere).
Rules of the engine, as the copy's (`engine_choice.py`):
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
from icelake.aws.pacing import CUT
from icelake.constants import STEP_LIMITS
from icelake.migrate import metadata_json as mj
from icelake.migrate.check.proof_chunks import HEAD_BATCH, KEYS_PER_PAGE, RANGE_KEYS, list_pages
from icelake.migrate.check.proved import HEAD_THREADS, proof_requests
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.table_size import estimate_size
from icelake.throughput import ThroughputModel

VERIFY_TIMEOUT_S = STEP_LIMITS["verify"][1]
# A verify's CPU per data or delete file, in manifest entries' plan reads (manifest_entry_s), as
# `make bench-verify` measures its phases (benchmarks/RESULTS.md, "Verify at scale"): the check's
# decode of an entry is a tenth of a plan's read (it keeps three fields), and finding the file's
# proof, sorting it into a range and judging it costs the driver about as much again.
DECODE_PASSES = 0.1
DRIVER_PASSES = 0.1
# The Glue job's driver pickles each file and its proof into the tasks' slices (Spark's
# parallelize): 1.0 and 1.2 s for 100,000 files, 0.14 and 0.21 of an entry's read, in two runs of
# bench-verify timed inside SparkRunner (2026-12-08).
SHIP_PASSES = 0.15


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
    """Seconds of the files check in an engine: its start, then the phases of the module's docstring
    one after another, each at its requests' latency over what runs side by side (at least the
    prefix's read rate) plus its CPU."""
    latency = model.latency_s
    head, get = latency.get("head", 0.02), latency.get("get", 0.03)
    rate = _paced_reads(model)
    cores = model.glue_workers if glue else 1
    # the runner's side by side: Spark tasks, one a core; a Lambda's threads
    runner = cores if glue else min(model.lambda_parallel, model.endpoint_parallel or model.lambda_parallel)

    def headed(n: int, at_once: int) -> float:
        batches = math.ceil(n / HEAD_BATCH)
        return max(math.ceil(batches / at_once) * min(n, HEAD_BATCH) * head, n / rate)

    def got(n: int, at_once: int) -> float:
        return max(math.ceil(n / at_once) * get, n / rate)

    # the process's HEAD threads, as many as the endpoint answers at once
    threads = min(HEAD_THREADS, model.endpoint_parallel or HEAD_THREADS)
    spread_heads = work.files - work.listed  # delete files, files elsewhere: a HEAD each
    first = max(1, work.headed - spread_heads - work.manifests)  # metadata files, statistics, lists
    metadata = get + headed(first, threads) + got(work.lists, threads)
    metadata += headed(work.manifests, threads)
    manifests = got(work.manifests, runner) + work.files * DECODE_PASSES * model.manifest_entry_s / cores
    driver = DRIVER_PASSES + (SHIP_PASSES if glue else 0.0)
    files = work.files * driver * model.manifest_entry_s + headed(spread_heads, runner)
    pages = verify_requests(work)["list"]
    if pages:
        files += _listing(work.listed, pages, model, runner, glue)
    start = model.glue_startup_s if glue else model.lambda_start_s
    return start + metadata + manifests + files


def _paced_reads(model: ThroughputModel) -> float:
    """Reads a second on one prefix. A phase past the prefix's read rate meets SlowDown, and the
    client's pacing then sends at CUT of the rate it was sent at, growing back
    (icelake/aws/pacing.py): priced at that pace."""
    return model.prefix_read_per_s * CUT


def _listing(listed: int, pages: int, model: ThroughputModel, runner: int, glue: bool) -> float:
    """Seconds of the location's listing in ranges of `RANGE_KEYS`, `runner` ranges at a time: the
    longest of
    - the path: each runner's ranges one after another, page after page (a page's latency, then
      its keys at `ThroughputModel.list_key`: the endpoint writes them, the client parses them);
    - the client's core: a Lambda's one core parses every page (`list_key_client`) while the
      endpoint answers the other threads' (a Glue task parses only its own ranges: the path);
    - the prefix's read rate, at the pacing's pace."""
    rounds = math.ceil(math.ceil(listed / RANGE_KEYS) / runner)
    path_pages = rounds * list_pages(min(listed, RANGE_KEYS))
    page_s = model.latency_s.get("list", 0.08) + KEYS_PER_PAGE * model.list_key()
    bounds = [path_pages * page_s, pages / _paced_reads(model)]
    if not glue:
        bounds.append(pages * KEYS_PER_PAGE * model.list_key_client())
    return max(bounds)


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
