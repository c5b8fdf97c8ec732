"""Verify step (modes "verify" and "repair"): one migrated or promoted target checked again,
nothing written; under repair, its damaged files written again from the source."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import VerifyInput
from icelake.workflow.lambda_handler import step_handler

handler = step_handler(steps.verify_or_repair, VerifyInput, "TablesVerified")
