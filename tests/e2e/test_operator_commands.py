"""The operator's commands, run as the operator runs them against the deployed workflow, with every
AWS call they make recorded and decided by @cloud-copilot/iam-simulate against the policy
docs/deploy.md gives an operator ("The operator"): `icelake assess --workflow`, `migrate start`,
`migrate status`, `migrate verify` and `migrate carry-over`. 0 denied: the README's and the
runbook's commands work with that policy alone, which reads neither lake."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from icelake.cli import app
from icelake.constants import ORCHESTRATOR_ACCOUNT_LOCAL
from icelake.local.deploy import LocalDeployment
from tests.iam.evaluator import Recorder, Request, simulate
from tests.infrastructure.test_operator import documented_policies
from tests.lake import Lake, add_source_table

pytestmark = pytest.mark.slow
OPERATOR = f"arn:aws:iam::{ORCHESTRATOR_ACCOUNT_LOCAL}:role/icelake-operator"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    return result.exit_code, result.stderr


def test_the_operators_commands_make_only_calls_the_documented_policy_allows(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    lake, _deployment = world
    add_source_table(lake, "orders", [[1, 2], [3]])
    request = tmp_path / "request.json"
    body = {k: v for k, v in lake.request("unused").items() if k != "run_id"}
    request.write_text(json.dumps(body))
    # The commands run in this thread; the workflow's Lambdas run in the embedded AWS's threads,
    # with the workflow's roles, and are not the operator's calls.
    here = threading.current_thread()
    recorder = Recorder(default_principal=lambda: OPERATOR if threading.current_thread() is here else None)
    out = tmp_path / "assessment"
    with recorder.recording():
        assessed = _cli(
            "assess", "--request", str(request), "--workflow", "--run-id", "op-assess", "--out", str(out)
        )
        started = _cli("migrate", "start", "--request", str(request), "--run-id", "op-full")
        status = _cli("migrate", "status", "op-full")
        verified = _cli("migrate", "verify", "--request", str(request), "--run-id", "op-verify")
        carried = _cli("migrate", "carry-over", "--request", str(request), "--run-id", "op-carry")

    # Then each command did its work: the assessment fetched, the table migrated and verified; the
    # carry-over found nothing stranded on a table that was never promoted (a refusal per table)
    assert assessed[0] == 0, assessed[1]
    written = json.loads((out / "assessment.json").read_text())
    assert [t["table"] for t in written["tables"]] == ["sales.orders"]
    assert (out / "assessment.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((out / "rewire.json").read_text())["tables"] == 1  # the scan's list, fetched too
    assert started[0] == 0 and status[0] == 0 and verified[0] == 0, (started, status, verified)
    assert carried[0] in (0, 1), carried

    # ... and every call they made, as the operator, is allowed by the documented policy
    policy, _opt_in = documented_policies()
    calls = [c for c in recorder.calls if c.principal == OPERATOR]
    requests = [
        Request(
            id=str(i),
            principal=OPERATOR,
            action=need[0],
            resource=need[1],
            resource_account=ORCHESTRATOR_ACCOUNT_LOCAL,
            identity_policies=[{"policy": policy}],
            context={**(need[2] if len(need) > 2 else {}), "aws:SecureTransport": "true"},  # type: ignore[misc]
        )
        for i, need in enumerate(n for c in calls for n in c.needs())
    ]
    decisions = simulate(requests)
    denied = [f"{r.action} {r.resource}" for r in requests if decisions[r.id] != "Allowed"]
    kinds = Counter(f"{c.service}:{c.operation}" for c in calls)
    print(f"IAM operator (recorded): {len(calls)} calls, {len(requests)} requests, {len(denied)} denied")
    print(f"  by operation: {dict(kinds)}")
    assert {"stepfunctions:StartExecution", "stepfunctions:DescribeExecution", "s3:GetObject"} <= set(kinds)
    assert not denied, "\n".join(denied)
