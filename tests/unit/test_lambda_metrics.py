"""A warm Lambda process with metrics disabled (as the embedded AWS runs every Lambda) keeps each
invocation's outcome its own: Powertools' shared metric set is emptied after every invocation, so
its 100-value auto-publish never fires and the empty-set warning never replaces a handler's error."""

from __future__ import annotations

import pytest
from aws_lambda_powertools import Metrics
from pydantic import BaseModel, ValidationError

from icelake.local.lambda_runtime import LambdaContext
from icelake.workflow.lambda_handler import step_handler


class NeedsATable(BaseModel):
    table: str


def test_a_failing_invocation_raises_its_own_error_however_many_came_before(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a step's handler in a process whose metrics are disabled (warnings are errors here)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "icelake-test")
    Metrics().clear_metrics()  # what earlier tests of this process left
    handler = step_handler(lambda request, deps: request, NeedsATable, "TablesPlanned")
    context = LambdaContext("icelake-plan", "arn:aws:lambda:us-east-1:000000000000:function:p", 1024)

    # When it is invoked 150 times with an event it refuses (after counting the invocation)
    errors = []
    for _ in range(150):
        with pytest.raises(Exception) as raised:
            handler({}, context)
        errors.append(type(raised.value))

    # Then every invocation failed with its own validation error (none with Powertools' "No
    # application metrics to publish"), nothing was published, and nothing is left in the set
    assert set(errors) == {ValidationError}
    assert "CloudWatchMetrics" not in capsys.readouterr().out
    assert not Metrics().metric_set
