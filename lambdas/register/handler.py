"""Register step: create or move the target Glue table, never clobbering a concurrent change."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import PlannedInput
from icelake.workflow.lambda_handler import step_handler

handler = step_handler(steps.register, PlannedInput, "TablesRegistered")
