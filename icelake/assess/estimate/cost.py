"""What a table's migration costs, from the work it does: one function for an estimate (work the
model predicts) and for a run's own account (work its clients counted and its steps timed), so
both are priced alike and can be compared line by line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icelake.assess.estimate.prices import PriceTable, load_prices, shipped_regions
from icelake.constants import STEP_LIMITS

# The cost lines of an estimate and of an outcome, `total` last.
COST_KEYS: tuple[str, ...] = (
    "s3_requests",
    "lambda",
    "glue",
    "step_functions",
    "transfer",
    "storage_month",
    "total",
)
# State transitions of one table's Map iteration that succeeds (Plan, KeepPlan, ChooseEngine, the
# copy, Register, Validate, SourceMoved, Done): tests/unit/test_assessment_model.py walks the ASL.
TABLE_TRANSITIONS = 8
DEFAULT_REGION = "us-east-1"
SYNC_DAYS = 30  # a month: what `storage_month` counts unless told otherwise


@dataclass(frozen=True)
class Work:
    """What a table's migration uses."""

    requests: Mapping[str, int]  # S3 requests by kind
    lambda_seconds: Mapping[str, float]  # step (a key of STEP_LIMITS) -> seconds it ran in its Lambda
    glue_seconds: float = 0.0  # the Glue job's run, when it copied
    glue_workers: int = 10
    glue_worker_type: str = "G.1X"
    transitions: int = TABLE_TRANSITIONS
    transfer_bytes: int = 0  # bytes copied from another region
    stored_bytes: int = 0  # bytes of the target copy, held beside the source for `storage_days`
    storage_days: float = SYNC_DAYS
    # An S3 Tables target: its objects (the monitoring fee), its storage and writes at S3 Tables'
    # rates (PriceTable.storage_usd, s3_requests_usd); None: an S3 bucket's.
    stored_objects: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def cost_usd(prices: PriceTable, work: Work) -> dict[str, float]:
    tables = work.stored_objects is not None
    lambda_usd = sum(
        prices.lambda_usd(STEP_LIMITS[step][0], seconds, 1) for step, seconds in work.lambda_seconds.items()
    )
    lines = {
        "s3_requests": prices.s3_requests_usd(work.requests, s3tables=tables),
        "lambda": lambda_usd,
        "glue": (
            prices.glue_usd(work.glue_workers, work.glue_worker_type, work.glue_seconds)
            if work.glue_seconds
            else 0.0
        ),
        "step_functions": prices.step_functions_usd(work.transitions),
        "transfer": prices.transfer_usd(work.transfer_bytes),
        "storage_month": prices.storage_usd(
            work.stored_bytes, work.storage_days, objects=work.stored_objects or 0, s3tables=tables
        ),
    }
    # Rounded to a millionth of a dollar, which keeps the figures of a small table visible.
    rounded = {k: round(v, 6) for k, v in lines.items()}
    return rounded | {"total": round(sum(lines.values()), 6)}


def summed(costs: list[Mapping[str, float]]) -> dict[str, float]:
    return {k: round(sum(c.get(k, 0.0) for c in costs), 6) for k in COST_KEYS}


def regions_of(request: Any) -> tuple[str | None, str | None]:
    """(source region, target region) of a migration request, where it names them."""
    return getattr(request.source, "region", None), getattr(request.target, "region", None)


def prices_for_region(region: str | None) -> PriceTable | None:
    """The shipped price table of `region` (default us-east-1), or None where none ships: a run is
    never failed for want of prices, its outcome then has no `cost_usd`."""
    region = region or DEFAULT_REGION
    return load_prices(region) if region in shipped_regions() else None
