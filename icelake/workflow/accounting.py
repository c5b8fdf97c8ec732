"""Every run accounts for itself: a table's outcome gets the S3 requests its steps' clients sent
(by kind), each phase's seconds, and what that work costs by the target region's price table,
priced as an estimate is (icelake/assess/estimate/cost.py), so report.html sets one beside the other."""

from __future__ import annotations

import os

from icelake.assess.estimate.cost import SYNC_DAYS, Work, cost_usd, prices_for_region, regions_of
from icelake.assess.estimate.expected import by_engine
from icelake.assess.estimate.model import (
    PlannedWork,
    TableEstimate,
    ThroughputModel,
    estimate_table,
    full_copy_entries,
)
from icelake.assess.estimate.prices import PriceTable
from icelake.aws.request_count import added
from icelake.migrate.models import MigrationResult
from icelake.request.models import MigrationRequest
from icelake.workflow.models import PlanResult, TableOutcome


def accounted(
    outcome: TableOutcome,
    request: MigrationRequest,
    planned: PlanResult | None,
    copied: MigrationResult | None,
    step: str,
    requests: dict[str, int],
    seconds: float,
) -> TableOutcome:
    """`outcome` with the table's account: Plan's (carried in `planned`), the copy's (its result),
    and the work of `step`, the step that ends the table (validate or rollback)."""
    phases: dict[str, float] = {}
    by_phase: dict[str, dict[str, int]] = {}
    if planned is not None:
        phases["plan"] = planned.seconds
        by_phase["plan"] = dict(planned.requests)
    if copied is not None:
        phases["copy"] = copied.elapsed_seconds
        by_phase["copy"] = dict(copied.requests or {})
    phases[step] = round(seconds, 3)
    by_phase[step] = added(by_phase.get(step, {}), requests)
    engine = planned.engine if planned is not None else "none"
    source_region, target_region = regions_of(request)
    cross_region = bool(source_region and target_region and source_region != target_region)
    prices = prices_for_region(target_region or os.environ.get("AWS_REGION"))
    total = added(*by_phase.values())
    cost: dict[str, float] = {}
    if prices is not None:
        glue = engine == "glue" and copied is not None
        copied_bytes = copied.bytes_copied if copied is not None else 0
        work = Work(
            requests=total,
            lambda_seconds={k: v for k, v in phases.items() if not (glue and k == "copy")},
            glue_seconds=copied.elapsed_seconds if glue and copied is not None else 0.0,
            transfer_bytes=copied_bytes if cross_region else 0,
            stored_bytes=copied_bytes,
            stored_objects=_table_objects(
                request, prices, copied.files_copied + copied.files_rewritten if copied else 0
            ),
        )
        cost = cost_usd(prices, work)
    estimate = plan_estimate(planned, prices, cross_region) if planned is not None and prices else None
    update = {
        "requests": total,
        "requests_by_phase": by_phase,
        "duration_s": phases,
        "cost_usd": cost,
        "estimate": estimate,
    }
    return outcome.model_copy(update=update)


def plan_estimate(planned: PlanResult, prices: PriceTable, cross_region: bool) -> TableEstimate | None:
    """The estimate model applied to the run's own plan (its measured requests and what it predicts
    the copy and Validate send), with the request's throughput model (else the defaults): what the
    run is held to."""
    expected = planned.expected_requests
    if not expected:
        return None
    run_requests, validate_requests = by_engine(expected, planned.engine)
    glue = planned.engine == "glue"
    work = PlannedWork(
        plan_requests=planned.requests,
        run_requests=run_requests,
        validate_requests=validate_requests,
        bytes_to_copy=planned.bytes_to_copy,
        files_to_copy=planned.files_to_copy,
        engine="glue" if glue else "lambda",
        entries_read=full_copy_entries(
            planned.manifest_entries,
            glue=glue,
            planned_by_glue=False,
            prune=planned.item.request.options.prune,
        ),
        validated_snapshots=planned.snapshots,
    )
    return estimate_table(
        work,
        planned.item.request.options.throughput or ThroughputModel(),
        prices,
        cross_region=cross_region,
        stored_bytes=planned.bytes_to_copy,
        sync_days=SYNC_DAYS,
        stored_objects=_table_objects(planned.item.request, prices, planned.files_to_copy),
    )


def _table_objects(request: MigrationRequest, prices: PriceTable, objects: int) -> int | None:
    """The objects an S3 Tables target stores (its storage priced at S3 Tables' rates, with the
    monitoring fee per object), or None: an S3 bucket's rates. A region whose S3 Tables prices the
    price table lacks is priced at S3's, as the assessment was refused without options.prices."""
    if request.target.kind != "s3tables" or prices.s3tables is None:
        return None
    return objects
