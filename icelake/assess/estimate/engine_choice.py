"""Which engine copies a table, and by which rule: the Plan step's choice (icelake/workflow/steps/
planning.py) and the assessment's (icelake/assess/gather/assessment.py) are this one function.

Rules, in order:
1. thresholds: more files or bytes to copy than `options.glue_threshold_files` / `_bytes` -> Glue;
2. estimate: the Lambda copy the estimate model (icelake/assess/estimate/model.py) expects takes more
   than 60 % of the Copy Lambda's timeout -> Glue, whatever the thresholds say; unless the request
   set a threshold explicitly: an operator's threshold wins over the model;
3. else the Lambda.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from icelake.assess.estimate.model import copy_seconds
from icelake.constants import STEP_LIMITS
from icelake.request.models import Options
from icelake.throughput import ThroughputModel

LAMBDA_SHARE = 0.6  # of the Copy Lambda's timeout: the margin a slower-than-modelled S3 gets
COPY_TIMEOUT_S = STEP_LIMITS["copy"][1]
THRESHOLDS = ("glue_threshold_files", "glue_threshold_bytes")
# A full copy whose snapshot summaries are over a threshold: the Glue job plans it as well.
PLANNED_BY_GLUE = "planned by Glue: the table's snapshot summaries put it over a Glue threshold"


@dataclass(frozen=True)
class EngineChoice:
    engine: Literal["lambda", "glue"]
    rule: str  # which rule chose it, with its figures (the outcome's and the assessment's engine_rule)


@dataclass(frozen=True)
class CopyWork:
    """What the copy will do: the increment for an incremental sync, the whole table otherwise."""

    files: int
    bytes: int
    run_requests: Mapping[str, int]  # the copy's requests (assess.expected.expected_requests "copy")
    busiest: float = 1.0  # the copies' busiest prefix's share of them (Copies.prefix_spread)


@dataclass(frozen=True)
class Thresholds:
    files: int
    bytes: int
    explicit: bool  # the request set one itself: the estimate rule is off

    @classmethod
    def of(cls, options: Options) -> Thresholds:
        # model_fields_set: the workflow's JSON keeps an unset threshold unset (Options' serializer)
        explicit = any(name in options.model_fields_set for name in THRESHOLDS)
        return cls(options.glue_threshold_files, options.glue_threshold_bytes, explicit)


def choose_engine(work: CopyWork, thresholds: Thresholds, model: ThroughputModel) -> EngineChoice:
    t = thresholds
    set_by = "set in the request" if t.explicit else "the default"
    if work.files > t.files:
        return EngineChoice(
            "glue", f"files: {work.files:,} to copy, over the Glue threshold {t.files:,} ({set_by})"
        )
    if work.bytes > t.bytes:
        return EngineChoice(
            "glue", f"bytes: {work.bytes:,} to copy, over the Glue threshold {t.bytes:,} ({set_by})"
        )
    seconds = copy_seconds(
        work.run_requests, work.bytes, model, glue=False, busiest=work.busiest, files=work.files
    )
    limit = LAMBDA_SHARE * COPY_TIMEOUT_S
    estimated = f"the Lambda copy is estimated at {seconds:,.0f} s (model {model.name!r})"
    under = f"{work.files:,} files, {work.bytes:,} bytes"
    if t.explicit:
        return EngineChoice(
            "lambda",
            f"thresholds set in the request: under both ({under}); {estimated}; the estimate rule is "
            "off when a threshold is set",
        )
    if seconds > limit:
        return EngineChoice(
            "glue",
            f"estimate: {estimated}, over {LAMBDA_SHARE:.0%} of the Copy Lambda's {COPY_TIMEOUT_S} s "
            f"timeout ({limit:,.0f} s), though under the thresholds ({under})",
        )
    return EngineChoice(
        "lambda",
        f"thresholds and estimate: under both thresholds ({under}); {estimated}, within "
        f"{LAMBDA_SHARE:.0%} of the {COPY_TIMEOUT_S} s timeout",
    )
