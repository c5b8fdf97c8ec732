"""Validate step: the target reads like the source in every snapshot (pyiceberg, another engine)."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import PlannedInput
from icelake.workflow.lambda_handler import step_handler

handler = step_handler(steps.validate, PlannedInput, "TablesValidated")
