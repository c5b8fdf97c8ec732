"""Assess step (mode "assess"): one table's assessment, the same as `icelake assess --request`."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import PlanInput
from icelake.workflow.lambda_handler import step_handler

handler = step_handler(steps.assess, PlanInput, "TablesAssessed")
