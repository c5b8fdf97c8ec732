"""Plan step: pin the source version, check the target, decide Lambda or Glue, record it in the ledger."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import PlanInput
from icelake.workflow.lambda_handler import step_handler

handler = step_handler(steps.plan, PlanInput, "TablesPlanned")
