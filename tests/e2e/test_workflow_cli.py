"""`icelake migrate start/status` on bad input: one line that says what to do, never a traceback,
and nothing started that Step Functions would refuse or fail on later."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from typer.testing import CliRunner

from icelake.cli import app
from icelake.local.deploy import LocalDeployment
from icelake.local.moto_server import free_port
from tests.lake import Lake, add_source_table

pytestmark = pytest.mark.slow


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    return result.exit_code, result.stderr


def _request_file(tmp_path: Path, body: object, name: str = "request.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(body))
    return str(path)


def _executions(deployment: LocalDeployment) -> list[str]:
    listed = boto3.client("stepfunctions").list_executions(stateMachineArn=deployment.state_machine_arn)
    return [e["name"] for e in listed["executions"]]


def test_bad_requests_get_one_line_and_start_nothing(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    lake, deployment = world
    array = _request_file(tmp_path, [lake.request("a-1")])
    for extra in ([], ["--run-id", "a-2"]):
        code, stderr = _cli("migrate", "start", "--request", array, *extra)
        assert code == 2 and "must be one JSON object" in stderr and stderr.count("\n") == 1, stderr

    huge = lake.request("huge-1", selection={"tables": [f"sales.t{i:06d}" for i in range(20_000)]})
    code, stderr = _cli("migrate", "start", "--request", _request_file(tmp_path, huge, "huge.json"))
    assert code == 2 and "Step Functions accepts at most 262,144" in stderr, stderr

    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, stderr = _cli("migrate", "start", "--request", str(broken))
    assert code == 2 and "is not JSON" in stderr, stderr

    code, stderr = _cli("migrate", "status", "no-such-run")
    assert code == 2 and "there is no run no-such-run" in stderr, stderr
    assert _executions(deployment) == []


def test_a_used_run_id_and_an_empty_selection(world: tuple[Lake, LocalDeployment], tmp_path: Path) -> None:
    lake, _deployment = world
    add_source_table(lake, "orders", [[1]])
    empty = _request_file(
        tmp_path, lake.request("empty-1", selection={"databases": ["sales"], "patterns": ["x*"]})
    )
    code, stderr = _cli("migrate", "start", "--request", empty)
    assert code == 1 and "matched no Iceberg table" in stderr and "--allow-empty" in stderr, stderr
    code, stderr = _cli("migrate", "start", "--request", empty, "--run-id", "empty-2", "--allow-empty")
    assert code == 0, stderr
    code, stderr = _cli("migrate", "start", "--request", empty)  # run id empty-1 again
    assert code == 2 and "run id empty-1 was used already" in stderr, stderr


def test_an_unreachable_endpoint_is_named(
    world: tuple[Lake, LocalDeployment], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, _deployment = world
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("ICELAKE_AWS_MAX_ATTEMPTS", "1")
    code, stderr = _cli("migrate", "start", "--request", _request_file(tmp_path, lake.request("down-1")))
    assert code == 2 and "does not answer" in stderr and "icelake local up" in stderr, stderr
