"""Malformed and adversarial migration requests, each run through the request model, `icelake
assess --request` and `icelake migrate start` on embedded AWS with the workflow deployed (issue 44).

A request the model refuses ends both commands with one line naming the field (and a valid
example where there is one), exit code 2 and no traceback, before anything is read; one that only
the catalogs can refuse (a 10,000-table selection of tables that do not exist, Unicode names, a
target around a source table) is refused by the same selection, locally by `assess` and by the
Inventory in AWS for `migrate start`: exit code 2 as well. No case writes to any bucket or catalog
of either account, nor to the artifacts bucket."""

from __future__ import annotations

import json
import re
from copy import deepcopy
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from icelake.cli import app
from icelake.errors import InvalidRequestError
from icelake.local.deploy import LocalDeployment
from icelake.request.selection import parse_request
from tests.hostile_requests import BY_THE_CATALOGS, REFUSED, VALID
from tests.lake import (
    SOURCE_BUCKET,
    TARGET_BUCKET,
    Lake,
    add_source_table,
    bucket_state,
    catalog_state,
)

pytestmark = pytest.mark.slow


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _one_line_refusal(code: int, stdout: str, stderr: str, says: str) -> None:
    assert code == 2, (code, stderr)
    assert "Traceback" not in stdout + stderr and 'File "' not in stderr, stderr
    assert stderr.startswith("icelake: error: ") and stderr.count("\n") == 1, stderr
    assert says in stderr, (says, stderr)


def _everything(lake: Lake, artifacts: str) -> dict[str, Any]:
    """What a refused request must leave as it was: both accounts' buckets and catalogs, and the
    artifacts bucket."""
    return {
        "source": bucket_state(lake.source, SOURCE_BUCKET),
        "target": bucket_state(lake.target, TARGET_BUCKET),
        "source catalog": catalog_state(lake.source),
        "target catalog": catalog_state(lake.target),
        "artifacts": bucket_state(boto3.Session(), artifacts),
    }


def _written(lake: Lake, tmp_path: Path, name: str, request: dict[str, Any]) -> str:
    path = tmp_path / f"{re.sub(r'[^a-z0-9]+', '-', name.lower())}.json"
    path.write_text(json.dumps(request, ensure_ascii=False))
    return str(path)


def test_hostile_requests_are_refused_in_one_line_and_write_nothing(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    lake, deployment = world
    add_source_table(lake, "orders", [[1], [2]])
    base = lake.request("hostile-1")
    before = _everything(lake, deployment.artifacts_bucket)
    sfn = boto3.client("stepfunctions")
    assert len(REFUSED) + len(BY_THE_CATALOGS) >= 40

    for name, edit, says in REFUSED:
        request = deepcopy(base)
        edit(request)
        # the model refuses it, in one line naming the field
        with pytest.raises(InvalidRequestError) as refused:
            parse_request(request)
        assert says in str(refused.value) and "\n" not in str(refused.value), (name, str(refused.value))
        # and so do both commands, before anything is read or started
        path = _written(lake, tmp_path, name, request)
        out = tmp_path / "out" / name
        _one_line_refusal(*_cli("assess", "--request", path, "--out", str(out)), says)
        assert not out.exists(), name
        _one_line_refusal(*_cli("migrate", "start", "--request", path, "--no-follow"), says)
    assert sfn.list_executions(stateMachineArn=deployment.state_machine_arn)["executions"] == []

    for i, (name, edit, says) in enumerate(BY_THE_CATALOGS):
        request = deepcopy(base) | {"run_id": f"hostile-catalog-{i}"}
        edit(request)
        parse_request(request)  # valid as a request
        path = _written(lake, tmp_path, name, request)
        _one_line_refusal(*_cli("assess", "--request", path, "--out", str(tmp_path / "out" / name)), says)
        code, stdout, stderr = _cli("migrate", "start", "--request", path)
        assert code == 2 and "InvalidRequest" in stderr and says in stderr, (name, stderr)
        assert "Traceback" not in stdout + stderr and "stackTrace" not in stderr, stderr

    assert _everything(lake, deployment.artifacts_bucket) == before

    for name, edit in VALID:
        request = deepcopy(base)
        edit(request)
        assert parse_request(request).run_id == "hostile-1", name

    # The valid request itself: assessed, nothing blocked, exit code 0; once a table is blocked (a
    # target table icelake did not create), exit code 1: a gate before `migrate start`
    path = _written(lake, tmp_path, "valid", base)
    code, _stdout, stderr = _cli("assess", "--request", path, "--out", str(tmp_path / "valid"))
    assert code == 0, stderr
    assert _everything(lake, deployment.artifacts_bucket) == before
    glue = lake.target.client("glue")
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_table(
        DatabaseName="sales", TableInput={"Name": "orders", "Parameters": {"table_type": "ICEBERG"}}
    )
    code, _stdout, stderr = _cli("assess", "--request", path, "--out", str(tmp_path / "blocked"))
    assert code == 1 and "1 of 1 table(s) blocked" in stderr, stderr
    assert (tmp_path / "blocked" / "assessment.html").exists()  # written either way
    code, stdout, _stderr = _cli("assess", "--help")
    assert code == 0 and "1 when any table is blocked" in " ".join(stdout.replace("│", " ").split())
