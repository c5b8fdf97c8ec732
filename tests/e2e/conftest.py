"""The embedded AWS with the migration workflow deployed from the repo's ASL and handlers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icelake.local.deploy import LocalDeployment, deploy_migration_workflow
from icelake.local.embedded import run_execution, start_embedded_aws
from icelake.workflow.client import read_report
from tests.lake import Lake, build_lake

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Lake, LocalDeployment]]:
    with start_embedded_aws(REPO):
        deployment = deploy_migration_workflow()
        yield build_lake(tmp_path / "local", orchestrator_resources=False), deployment


def run_workflow(deployment: LocalDeployment, request: dict[str, Any]) -> dict[str, Any]:
    """The run's whole report: the execution returns a summary naming the report it wrote to S3."""
    result = run_execution(deployment.state_machine_arn, request, timeout=300, name=request["run_id"])
    assert result.status == "SUCCEEDED", result.failure()
    summary = dict(result.output)
    report = read_report(summary["report_uri"])
    assert summary["status"] == report["status"] and summary["tables"] == len(report["tables"])
    assert summary["counts"] == dict(Counter(t["status"] for t in report["tables"]))
    return report
