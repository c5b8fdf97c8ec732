"""Copy step for small tables: server-side copies and metadata rewrite in this Lambda."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import PlannedInput
from icelake.workflow.lambda_handler import step_handler

handler = step_handler(steps.copy, PlannedInput, "TablesCopied")
