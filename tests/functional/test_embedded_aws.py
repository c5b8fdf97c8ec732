"""Embedded AWS runs real ASL on moto: Lambda tasks call repo handlers, Glue tasks call repo scripts.

Everything here goes through moto's Step Functions interpreter in server mode (no stubs): the test
ASL, handlers and Glue script live in tests/embedded_fixtures/.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.stepfunctions.parser.asl.parse.asl_parser import ASLParserException

from icelake.local import lambda_runtime, resources
from icelake.local.embedded import (
    ENV_RETRY_WAIT_SCALE,
    EmbeddedAws,
    create_glue_job,
    create_lambda,
    create_state_machine,
    moto_patches,
    patches_installed,
    render_asl,
    retry_wait_scale,
    run_execution,
    start_embedded_aws,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = "tests/embedded_fixtures"
HANDLERS = f"{FIXTURES}/handlers.py"
GLUE_SCRIPT = f"{FIXTURES}/glue_script.py"
ASL = f"{FIXTURES}/workflow.asl.json"
RESULT_BUCKET = "embedded-results"


def _moto_originals() -> dict[str, Any]:
    from moto import backends
    from moto.awslambda.models import LambdaFunction
    from moto.core.base_backend import BackendDict
    from moto.glue.models import FakeJob, FakeJobRun
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_glue as sfn_glue,
    )
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    return {
        "invoke": LambdaFunction.__dict__["_invoke_lambda"],
        "start": FakeJob.__dict__["start_job_run"],
        "as_dict": FakeJobRun.__dict__["as_dict"],
        "patterns": set(sfn_glue._SUPPORTED_INTEGRATION_PATTERNS),
        "sync": sfn_glue.StateTaskServiceGlue.__dict__["_sync_to_start_job_run"],
        "modules": backends.list_of_moto_modules,
        "parse": AmazonStateLanguageParser.__dict__["parse"],
        "backend": BackendDict.__dict__["_create_account_specific_backend"],
        "retry_time": retrier_decl.time,
        "ended": BaseExecutionWorkerCommunication.__dict__["terminated"],
        "environ_copy": type(os.environ).__dict__["copy"],
        "environ_items": type(os.environ).items,
        "environ_values": type(os.environ).values,
    }


def _backend_lookups_are_listed_for_reset() -> None:
    """A backend dict looked up is listed for moto's reset, whether or not it held the account."""
    from moto.core.base_backend import BackendDict
    from moto.sqs.models import SQSBackend

    account = "123456789012"
    fresh: Any = BackendDict(SQSBackend, "sqs")
    made = fresh[account]
    assert fresh[account] is made and any(known is fresh for known in BackendDict._instances)
    unlisted: Any = BackendDict(SQSBackend, "sqs")
    dict.__setitem__(unlisted, account, made)  # holds the account, yet moto's reset does not know it
    assert unlisted[account] is made
    assert any(known is unlisted for known in BackendDict._instances)
    for listed in (fresh, unlisted):
        BackendDict._instances.remove(listed)  # the test's own dicts: left out of the next reset


def test_patches_are_idempotent_and_reversible() -> None:
    already = patches_installed()  # e.g. a session-wide embedded AWS of another test module
    before = _moto_originals()
    if not already:
        assert before["invoke"].__module__ == "moto.awslambda.models"
        assert "waitForTaskToken" not in before["patterns"]
    with moto_patches(REPO):
        patched = _moto_originals()
        assert patched["invoke"].__module__ == "icelake.local.embedded"
        assert patched["start"].__module__ == "icelake.local.embedded"
        assert patched["sync"].__module__ == "icelake.local.embedded"
        assert "waitForTaskToken" in patched["patterns"]
        # moto's own list of its service modules, listed once instead of at every request
        assert patched["modules"].__module__ == "icelake.local.moto_server"
        assert list(patched["modules"]()) == list(before["modules"]()) and "s3" in patched["modules"]()
        # a definition parsed once, its program given to every execution; a bad one still refused
        parse = patched["parse"].__func__
        definition = '{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}'
        assert parse(definition) is parse(definition)
        with pytest.raises(ASLParserException):
            parse('{"StartAt": "A", "States": {"A": {"Type": "NoSuchType", "End": true}}}')
        # a backend's lookup skips moto's global lock once there is nothing to create or list
        assert patched["backend"].__module__ == "icelake.local.moto_server"
        # a Retry's wait scaled by ICELAKE_LOCAL_RETRY_WAIT_SCALE (the suite's conftest sets it)
        assert patched["retry_time"].sleep.__module__ == "icelake.local.embedded"
        assert patched["ended"].__module__ == "icelake.local.embedded"  # an execution says it ended
        # the environment copied in one step while the Lambda runtime changes it in other threads
        assert patched["environ_copy"].__module__ == "icelake.local.embedded"
        assert os.environ.copy() == dict(os.environ) and isinstance(os.environ.copy(), dict)
        assert (
            patched["environ_items"].__module__
            == patched["environ_values"].__module__
            == "icelake.local.embedded"
        )
        assert dict(os.environ.items()) == dict(os.environ) and list(os.environ.values()) == list(
            dict(os.environ).values()
        )
        _backend_lookups_are_listed_for_reset()
        with moto_patches(REPO):  # a nested install changes nothing
            assert _moto_originals() == patched
        assert _moto_originals() == patched  # still installed: the outer one holds them
    assert patches_installed() == already
    assert _moto_originals() == before
    if not already:  # installed again (the next embedded AWS): the program parsed before is kept
        with moto_patches(REPO):
            assert _moto_originals()["parse"].__func__(definition) is parse(definition)


def test_the_environment_reads_whole_while_handlers_set_and_remove_their_variables() -> None:
    """Every botocore request reads `os.environ.items()` (urllib's proxy settings), in any thread,
    while the in-process Lambda runtime sets and removes a handler's variables: under the patches no
    read meets a key that vanished between listing and looking it up. Without them, about one read
    in ten failed here with a KeyError such as a Step Functions task once met."""
    function = lambda_runtime.FunctionConfig(
        function_name="env-churn",
        function_arn="arn:aws:lambda:us-east-1:123456789012:function:env-churn",
        handler="handlers.decide",
        environment={"ICELAKE_CHURN": "1", "POWERTOOLS_METRICS_NAMESPACE": "churn"},
    )

    def handler_calls() -> None:
        for _ in range(20_000):
            lambda_runtime.call_handler(function=function, handler_file=REPO / HANDLERS, event={})

    reads, failed = 0, []
    interval = sys.getswitchinterval()
    with moto_patches(REPO):
        churn = threading.Thread(target=handler_calls)
        sys.setswitchinterval(1e-6)  # switch threads often, so the window between the two is met
        churn.start()
        try:
            while churn.is_alive():
                reads += 1
                try:
                    urllib.request.getproxies()
                    sum(1 for _ in os.environ.values())
                    os.environ.copy()
                except KeyError as e:
                    failed.append(e)
        finally:
            churn.join()
            sys.setswitchinterval(interval)
    assert reads > 50, f"only {reads} reads overlapped the handler calls: the race was not met"
    assert not failed, f"{len(failed)} of {reads} reads lost a key: {failed[:3]}"
    assert "ICELAKE_CHURN" not in os.environ and "AWS_LAMBDA_FUNCTION_NAME" not in os.environ


@pytest.mark.parametrize("raw", ["0", "2", "-1", "fast", "nan"])
def test_a_retry_wait_scale_that_is_not_a_factor_is_refused_saying_what_to_give(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_RETRY_WAIT_SCALE, raw)
    with pytest.raises(ValueError, match=rf"{ENV_RETRY_WAIT_SCALE}='{raw}': give a factor above 0"):
        retry_wait_scale()
    monkeypatch.setenv(ENV_RETRY_WAIT_SCALE, "0.25")
    assert retry_wait_scale() == 0.25
    monkeypatch.delenv(ENV_RETRY_WAIT_SCALE)
    assert retry_wait_scale() == 1.0  # as AWS waits


def test_render_asl_fails_loudly_on_a_placeholder_left() -> None:
    with pytest.raises(ValueError, match=r"BoomFunctionArn.*FailJobName|FailJobName.*BoomFunctionArn"):
        render_asl(
            REPO / ASL, {"DecideFunctionArn": "a", "MultiplyFunctionArn": "b", "FlakyFunctionArn": "c"}
        )


def test_migration_functions_resolve_from_shared_constants() -> None:
    from icelake.constants import LAMBDA_STEPS

    name, path, _placeholder = LAMBDA_STEPS["plan"]
    lambda_runtime.configure(REPO)
    assert lambda_runtime.resolve_handler_file(name) == REPO / path


@pytest.fixture(scope="module")
def aws() -> Iterator[EmbeddedAws]:
    with start_embedded_aws(REPO) as embedded:
        yield embedded


@pytest.fixture(scope="module")
def workflow(aws: EmbeddedAws) -> str:
    aws.client("s3").create_bucket(Bucket=RESULT_BUCKET)
    subs = {
        "DecideFunctionArn": create_lambda(
            "t-decide", HANDLERS, "decide", {"POWERTOOLS_METRICS_NAMESPACE": "icelake-test"}
        ),
        "MultiplyFunctionArn": create_lambda(
            "t-multiply", HANDLERS, "multiply", {"FACTOR": "3", "RESULT_BUCKET": RESULT_BUCKET}
        ),
        "FlakyFunctionArn": create_lambda("t-flaky", HANDLERS, "flaky"),
        "BoomFunctionArn": create_lambda("t-boom", HANDLERS, "boom"),
        "WriteJobName": create_glue_job("t-glue-write", GLUE_SCRIPT, {"--mode": "write"}),
        "FailJobName": create_glue_job("t-glue-fail", GLUE_SCRIPT, {"--mode": "raise"}),
    }
    return create_state_machine(ASL, subs, "t-workflow")


def _request(tmp_path: Path, items: list[int], boom_kind: str = "named") -> dict[str, Any]:
    return {
        "items": items,
        "counter_file": str(tmp_path / "flaky.count"),
        "glue_output": str(tmp_path / "glue-output.json"),
        "boom_kind": boom_kind,
    }


def test_task_choice_map_retry_catch_and_glue_sync(workflow: str, tmp_path: Path) -> None:
    status, out, events = run_execution(workflow, _request(tmp_path, [1, 2, 5]), timeout=45)

    assert status == "SUCCEEDED", events[-1]
    # Task result drives the Choice; the handler saw a Lambda context and its function's environment.
    assert out["decision"]["route"] == "process"
    assert out["decision"]["function_name"] == "t-decide"
    assert out["decision"]["namespace"] == "icelake-test"
    assert out["decision"]["remaining_ms"] > 800_000
    assert "FACTOR" not in os.environ and "POWERTOOLS_METRICS_NAMESPACE" not in os.environ
    # Map over the items, each one a Lambda call with the function's environment (FACTOR=3).
    assert out["multiplied"] == [3, 6, 15]
    s3 = boto3.client("s3")
    assert s3.get_object(Bucket=RESULT_BUCKET, Key="items/5")["Body"].read() == b"15"
    # Retry on the error name: first attempt failed, second succeeded.
    assert out["flaky"] == {"attempt": 2}
    assert (tmp_path / "flaky.count").read_text() == "2"
    failed = [e["taskFailedEventDetails"] for e in events if e["type"] == "TaskFailed"]
    assert [f["error"] for f in failed].count("TransientError") == 1
    # Catch on the exception's class name, with Lambda's error document as the cause.
    assert out["caught"]["Error"] == "IcelakeTestError"
    cause = json.loads(out["caught"]["Cause"])
    assert cause["errorType"] == "IcelakeTestError"
    assert json.loads(cause["errorMessage"]) == {"reason": "boom"}
    # glue:startJobRun.sync ran the script: default args merged with the task's arguments.
    assert out["glue_write"]["state"] == "SUCCEEDED"
    assert out["glue_write"]["job"] == "t-glue-write"
    assert isinstance(out["glue_write"]["started_on"], int)  # epoch ms, as in AWS (moto: a datetime)
    written = json.loads((tmp_path / "glue-output.json").read_text())
    assert written == {
        "JOB_NAME": "t-glue-write",
        "JOB_RUN_ID": out["glue_write"]["run_id"],
        "mode": "write",
        "output": str(tmp_path / "glue-output.json"),
        "message": "hello from the ASL",
    }
    # A script that raises: the run is FAILED with its error message, caught as States.TaskFailed.
    assert out["glue_error"]["Error"] == "States.TaskFailed"
    run = json.loads(out["glue_error"]["Cause"])
    assert run["JobRunState"] == "FAILED"
    assert run["ErrorMessage"] == "GlueTestFailure: job t-glue-fail failed on purpose"


def test_choice_default_branch(workflow: str, tmp_path: Path) -> None:
    status, out, _events = run_execution(workflow, _request(tmp_path, []), timeout=20, name="default-branch")

    assert status == "SUCCEEDED"
    # the execution said it ended (run_execution looked again then, not at its next poll)
    assert any(arn.endswith(":default-branch") for arn in resources._ENDED)
    assert out["decision"]["route"] == "skip"
    assert out["skipped"] is True
    assert "multiplied" not in out
    assert not (tmp_path / "flaky.count").exists()


def test_error_not_named_in_catch_fails_the_execution(workflow: str, tmp_path: Path) -> None:
    result = run_execution(workflow, _request(tmp_path, [1], boom_kind="other"), timeout=20)

    assert result.status == "FAILED"
    error, cause = result.failure()
    assert error == "KeyError"
    assert cause is not None and json.loads(cause)["errorMessage"] == "'not caught by name'"
    assert not (tmp_path / "glue-output.json").exists()


def test_lambda_and_glue_apis_called_directly(aws: EmbeddedAws, tmp_path: Path) -> None:
    create_lambda("t-boom", HANDLERS, "boom")
    lam = boto3.client("lambda", region_name=aws.region)
    response = lam.invoke(FunctionName="t-boom", Payload=json.dumps({"message": "direct"}))
    assert "FunctionError" in response
    assert json.loads(response["Payload"].read())["errorType"] == "IcelakeTestError"
    create_lambda("t-missing", HANDLERS, "no_such_function")
    response = lam.invoke(FunctionName="t-missing", Payload=b"{}")
    assert json.loads(response["Payload"].read())["errorType"] == "Runtime.HandlerNotFound"

    glue = aws.client("glue")
    job = create_glue_job("t-direct", GLUE_SCRIPT)
    out = tmp_path / "direct.json"
    run_id = glue.start_job_run(JobName=job, Arguments={"--output": str(out)})["JobRunId"]
    assert _wait_for_run(glue, job, run_id)["JobRunState"] == "SUCCEEDED"
    assert json.loads(out.read_text())["mode"] == "write"

    # A strict script rejects an unknown argument: FAILED with the reason, never a silent success.
    run_id = glue.start_job_run(JobName=job, Arguments={"--unknown": "x"})["JobRunId"]
    run = _wait_for_run(glue, job, run_id)
    assert run["JobRunState"] == "FAILED"
    assert run["ErrorMessage"] == "SystemExit: 2"

    # A job whose script is nowhere in the repo fails at once.
    glue.create_job(
        Name="t-nowhere",
        Role="arn:aws:iam::123456789012:role/x",
        Command={"Name": "glueetl", "ScriptLocation": "s3://b/no/such/script.py"},
    )
    run_id = glue.start_job_run(JobName="t-nowhere")["JobRunId"]
    run = _wait_for_run(glue, "t-nowhere", run_id)
    assert run["JobRunState"] == "FAILED"
    assert run["ErrorMessage"].startswith("ScriptResolutionError: no local script for Glue job 't-nowhere'")


def test_invocations_are_measured_against_the_function_limits(aws: EmbeddedAws) -> None:
    # Given a function of 512 MB and 60 s whose handler holds as much memory as it is asked to
    create_lambda("t-hold", HANDLERS, "hold", timeout=60, memory_mb=512)
    lam = boto3.client("lambda", region_name=aws.region)
    # When it is invoked holding 200 MiB, then holding nothing, while invocations are recorded
    with lambda_runtime.recording_invocations() as calls:
        for mib in (200, 0):
            response = lam.invoke(FunctionName="t-hold", Payload=json.dumps({"mib": mib}))
            answer = json.loads(response["Payload"].read())
            assert answer == {"held_mib": mib, "memory_limit_mb": 512}
    lam.invoke(FunctionName="t-hold", Payload=json.dumps({"mib": 1}))  # after the block: not recorded
    # Then each call is recorded with the function's limits, and its peak shows what it held
    assert [(c.function_name, c.memory_limit_mb, c.timeout_seconds, c.errored) for c in calls] == [
        ("t-hold", 512, 60.0, False)
    ] * 2
    held, idle = (c.peak_rss_mib - c.rss_before_mib for c in calls)
    assert held >= 195, calls[0]
    assert idle < 100, calls[1]  # the peak was reset between the calls
    assert calls[0].response_bytes == len(json.dumps({"held_mib": 200, "memory_limit_mb": 512}))


def test_migration_functions_get_the_limits_the_cdk_deploys(aws: EmbeddedAws) -> None:
    from icelake.constants import LAMBDA_STEPS, STEP_LIMITS
    from icelake.local.embedded import create_step_lambdas

    create_step_lambdas()
    lam = boto3.client("lambda", region_name=aws.region)
    for step, (name, _path, _placeholder) in LAMBDA_STEPS.items():
        config = lam.get_function_configuration(FunctionName=name)
        assert (config["MemorySize"], config["Timeout"]) == STEP_LIMITS[step], step


def _wait_for_run(glue: Any, job: str, run_id: str) -> dict[str, Any]:
    import time

    deadline = time.monotonic() + 20
    while True:
        run: dict[str, Any] = glue.get_job_run(JobName=job, RunId=run_id)["JobRun"]
        if run["JobRunState"] not in ("STARTING", "RUNNING") or time.monotonic() > deadline:
            return run
        time.sleep(0.05)
