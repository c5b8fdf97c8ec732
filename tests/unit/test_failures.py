"""A table's error in one shape (issue 44): the Step Functions cause parsed once, no stack trace
kept, the step's log named; report.html shows it wrapped, whole on demand, with a link to the log;
an assessment's commit rates said as a person says them."""

from __future__ import annotations

import json

from icelake.assess.gather.commits import CommitHistory, commit_rate_warning, count
from icelake.assess.pages.render import render_report
from icelake.workflow.failures import table_error
from icelake.workflow.models import TableOutcome

TRACE = [
    '  File "/home/someone/icelake/icelake/workflow/steps/planning.py", line 80, in plan\n',
    "    catalog.check_target_is_ours(existing, owner, target)\n",
]
LAMBDA_CAUSE = json.dumps(
    {
        "errorType": "TargetNotOursError",
        "errorMessage": "target table sales.orders exists and icelake did not create it",
        "requestId": "0f1e2d3c-aaaa-bbbb-cccc-123456789012",
        "stackTrace": TRACE,
    }
)


def test_a_lambda_cause_becomes_type_message_step_and_its_log() -> None:
    error = table_error("TargetNotOursError", LAMBDA_CAUSE, "Plan", "eu-west-1")
    assert (error.type, error.step) == ("TargetNotOursError", "Plan")
    assert error.message == "target table sales.orders exists and icelake did not create it"
    assert error.hint and "target.renames" in error.hint
    assert (error.log_group, error.request_id, error.region) == (
        "/aws/lambda/icelake-plan",
        "0f1e2d3c-aaaa-bbbb-cccc-123456789012",
        "eu-west-1",
    )
    assert "stackTrace" not in error.model_dump_json() and "File " not in error.model_dump_json()


def test_a_glue_job_runs_cause_names_its_run_and_the_glue_error_log() -> None:
    cause = json.dumps(
        {"Id": "jr_0123", "JobName": "icelake-migrate", "JobRunState": "FAILED", "ErrorMessage": "boom"}
    )
    error = table_error("States.TaskFailed", cause, "Copy")
    assert (error.type, error.message, error.step) == ("States.TaskFailed", "boom", "Copy")
    assert (error.log_group, error.request_id) == ("/aws-glue/jobs/error", "jr_0123")


def test_a_traceback_in_text_is_cut_and_old_text_errors_still_read() -> None:
    text = "MemoryError: out of memory\nTraceback (most recent call last):\n" + "".join(TRACE)
    error = table_error("Sandbox.Timedout", text, "Copy")
    assert error.message == "MemoryError: out of memory" and error.hint
    outcome = TableOutcome.model_validate(
        {"run_id": "r", "table": "a.b", "status": "failed", "error": "old text"}
    )
    assert outcome.error is not None and outcome.error.message == "old text"
    caught = {"Error": "Lambda.Unknown", "Cause": LAMBDA_CAUSE, "Step": "Rollback"}  # RollbackFailed's
    outcome = TableOutcome.model_validate(
        {"run_id": "r", "table": "a.b", "status": "failed", "error": caught}
    )
    assert outcome.error is not None and outcome.error.step == "Rollback"
    assert outcome.error.log_group == "/aws/lambda/icelake-rollback"


def test_report_html_wraps_a_long_message_and_links_the_log() -> None:
    long = "the copy of s3://source-lake/lake/sales/orders/data/" + "x" * 3000 + " failed"
    error = table_error(
        "CopyVerificationError",
        json.dumps(
            {
                "errorType": "CopyVerificationError",
                "errorMessage": long,
                "requestId": "req-1",
                "stackTrace": TRACE,
            }
        ),
        "Copy",
        "us-east-1",
    )
    outcome = TableOutcome(run_id="r", table="sales.orders", status="rolled_back", error=error)
    page = render_report({"run_id": "r", "status": "failed", "tables": [outcome.model_dump(mode="json")]})
    assert "<details><summary>full message (3," in page and long in page
    assert "stackTrace" not in page and "Traceback" not in page and "/home/someone" not in page
    assert (
        "log-group/$252Faws$252Flambda$252Ficelake-copy/log-events$3FfilterPattern$3D$2522req-1$2522" in page
    )
    assert "overflow-wrap:anywhere" in page


def test_commit_rates_are_said_as_a_person_says_them() -> None:
    rare = commit_rate_warning(CommitHistory(0.143, 0.133, 0, 0, []), duration_s=4, sync_days=30)
    assert rare is not None
    assert "about 4 commits in a 30-day sync window; fewer than 1 expected during the copy" in rare.message
    assert "e-0" not in rare.message
    busy = commit_rate_warning(CommitHistory(24, 20, 0, 0, []), duration_s=5 * 3600, sync_days=30)
    assert (
        busy is not None and "about 24 commits a day" in busy.message and "about 5 expected" in busy.message
    )
    assert [count(0.2), count(1, "commit"), count(1234.5, "commit")] == [
        "fewer than 1",
        "about 1 commit",
        "about 1,200 commits",
    ]
