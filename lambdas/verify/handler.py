"""Verify step (mode "verify"): one migrated or promoted target checked again, nothing written."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import PlanInput
from icelake.workflow.lambda_handler import step_handler

handler = step_handler(steps.verify, PlanInput, "TablesVerified")
