"""Report step: the run's summary to S3 and an EventBridge event."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import ReportInput
from icelake.workflow.lambda_handler import step_handler

# result_metrics: the per-status table counts the dashboard graphs
handler = step_handler(steps.report, ReportInput, "Reports", result_metrics=lambda summary: summary.metrics())
