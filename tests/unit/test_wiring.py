"""The migration workflow's wiring: one set of placeholders and one environment for both deployments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from icelake.constants import ENV_ARTIFACTS_BUCKET, ENV_LEDGER_TABLE, LAMBDA_STEPS, MIGRATE_ASL
from icelake.request.deps import WorkflowEnv
from icelake.workflow.wiring import migrate_lambda_environment, migrate_substitutions


def test_substitutions_fill_every_placeholder_of_the_asl() -> None:
    asl = Path(MIGRATE_ASL).read_text(encoding="utf-8")
    placeholders = set(re.findall(r"\$\{(\w+)\}", asl))
    arns = {
        step: f"arn:aws:lambda:us-east-1:111111111111:function:{name}"
        for step, (name, _h, _p) in LAMBDA_STEPS.items()
    }
    substitutions = migrate_substitutions(arns, "artifacts")
    assert placeholders == set(substitutions)
    assert substitutions["PlanFunctionArn"].endswith(":icelake-plan")
    json.loads(re.sub(r"\$\{(\w+)\}", lambda m: substitutions[m.group(1)], asl))


def test_a_missing_step_arn_is_named() -> None:
    arns = {step: "arn" for step in LAMBDA_STEPS if step != "rollback"}
    with pytest.raises(ValueError, match="rollback"):
        migrate_substitutions(arns, "artifacts")


def test_lambda_settings_read_the_environment_the_wiring_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in migrate_lambda_environment("ledger-t", "artifacts-b", embedded=False).items():
        monkeypatch.setenv(key, value)
    assert WorkflowEnv.from_environ() == WorkflowEnv(
        ledger_table="ledger-t", artifacts_bucket="artifacts-b", event_bus="default"
    )
    monkeypatch.delenv(ENV_LEDGER_TABLE)
    with pytest.raises(ValueError, match=ENV_LEDGER_TABLE):
        WorkflowEnv.from_environ()
    assert ENV_ARTIFACTS_BUCKET in migrate_lambda_environment("l", "a", embedded=True)


def test_embedded_environment_turns_off_what_has_no_cloudwatch() -> None:
    cloud = migrate_lambda_environment("l", "a", embedded=False)
    local = migrate_lambda_environment("l", "a", embedded=True)
    assert "POWERTOOLS_METRICS_DISABLED" not in cloud
    assert local["POWERTOOLS_METRICS_DISABLED"] == "true"
    assert {k: v for k, v in local.items() if k in cloud and k != "POWERTOOLS_LOG_LEVEL"} == {
        k: v for k, v in cloud.items() if k != "POWERTOOLS_LOG_LEVEL"
    }


def test_a_run_summary_publishes_every_outcome_and_the_pruned_files() -> None:
    from icelake.workflow.models import OUTCOME_METRICS, RunSummary

    summary = RunSummary(
        run_id="r",
        status="partial",
        tables=3,
        counts={"promoted": 2, "diverged": 1},
        files_pruned=7,
        report_uri="s3://b/k",
    )
    metrics = summary.metrics()
    assert metrics["TablesPromoted"] == 2 and metrics["TablesDiverged"] == 1 and metrics["FilesPruned"] == 7
    assert all(metrics[m] == 0 for s, m in OUTCOME_METRICS.items() if s not in ("promoted", "diverged"))
