"""Rollback step: remove what this run wrote for the table, restore its catalog entry."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import RollbackInput
from icelake.workflow.lambda_handler import step_handler

handler = step_handler(steps.rollback, RollbackInput, "TablesRolledBack")
