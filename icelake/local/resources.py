"""The pieces of a workflow in the embedded AWS, created from the repo's files as the CDK app
creates them in AWS: an IAM role moto's services accept, Lambda functions whose invocations run a
repo handler in-process, Glue jobs whose runs call a repo script, state machines from the ASL
files with every ${Name} substituted; and an execution of a state machine run to its end
(`run_execution`). `icelake.local.embedded` re-exports all of it beside the server and patches."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import threading
import time
import uuid
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from icelake.aws import warm
from icelake.constants import LAMBDA_STEPS, REGION_LOCAL, STEP_LIMITS
from icelake.local import glue_runtime, lambda_runtime
from icelake.local.glue_runtime import LOCAL_SCRIPT_ARG
from icelake.local.lambda_runtime import HANDLER_TAG, register_handler

LOCAL_ROLE = "icelake-local-execution"
POLL_CAP = 0.5  # seconds between two looks at a running execution, at most
_TRUST_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com", "glue.amazonaws.com"]},
            "Action": "sts:AssumeRole",
        }
    ],
}
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.:-]+)\}")


def _client(service: str) -> Any:
    """A client of the embedded AWS, kept (`warm.kept`) per service, region and AWS_* environment:
    deploying a workflow and running its executions asked for one per call, 10 ms each (botocore
    clients are thread-safe; another endpoint or credentials get a client of their own, and an
    embedded AWS that starts or stops drops them all)."""
    import boto3

    region = os.environ.get("AWS_DEFAULT_REGION", REGION_LOCAL)
    return warm.kept(("local-client", service, region), lambda: boto3.client(service, region_name=region))


def _resolve(path: str | Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else lambda_runtime.repo_root() / p


def ensure_role(name: str = LOCAL_ROLE) -> str:
    """An IAM role in the current account (moto's Lambda refuses roles that do not exist)."""
    iam = _client("iam")
    try:
        return str(iam.get_role(RoleName=name)["Role"]["Arn"])
    except iam.exceptions.NoSuchEntityException:
        doc = json.dumps(_TRUST_POLICY)
        return str(iam.create_role(RoleName=name, AssumeRolePolicyDocument=doc)["Role"]["Arn"])


def render_asl(asl_path: str | Path, substitutions: Mapping[str, str]) -> str:
    """The ASL text with every ${Name} replaced; raises ValueError if any is left or JSON breaks."""
    text = _resolve(asl_path).read_text(encoding="utf-8")
    missing = sorted({m.group(1) for m in _PLACEHOLDER.finditer(text)} - set(substitutions))
    if missing:
        raise ValueError(f"{asl_path}: no substitution for placeholder(s) {', '.join(missing)}")
    rendered = _PLACEHOLDER.sub(lambda m: str(substitutions[m.group(1)]), text)
    try:
        json.loads(rendered)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{asl_path}: not valid JSON after substitution: {exc}") from exc
    return rendered


def create_state_machine(
    asl_path: str | Path, substitutions: Mapping[str, str], name: str, role_arn: str | None = None
) -> str:
    """Create (or update, same name) a state machine from an ASL file; returns its ARN."""
    definition = render_asl(asl_path, substitutions)
    role_arn = role_arn or ensure_role()
    sfn = _client("stepfunctions")
    for page in sfn.get_paginator("list_state_machines").paginate():
        for machine in page["stateMachines"]:
            if machine["name"] == name:
                arn = str(machine["stateMachineArn"])
                sfn.update_state_machine(stateMachineArn=arn, definition=definition, roleArn=role_arn)
                return arn
    return str(
        sfn.create_state_machine(name=name, definition=definition, roleArn=role_arn)["stateMachineArn"]
    )


def _stub_zip(handler_file: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("README.txt", f"icelake embedded AWS: this function runs {handler_file} in-process.\n")
    return buf.getvalue()


def create_lambda(
    name: str,
    repo_handler_path: str | Path,
    handler_name: str = "handler",
    env: Mapping[str, str] | None = None,
    *,
    role_arn: str | None = None,
    timeout: int = 900,
    memory_mb: int = 1024,
) -> str:
    """Create (or update) Lambda `name` whose invocations call `handler_name` in `repo_handler_path`."""
    handler_file = str(repo_handler_path)
    register_handler(name, handler_file)
    handler = f"{Path(handler_file).stem}.{handler_name}"
    variables = {str(k): str(v) for k, v in (env or {}).items()}
    lam = _client("lambda")
    try:
        fn = lam.get_function(FunctionName=name)["Configuration"]
    except lam.exceptions.ResourceNotFoundException:
        fn = lam.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role_arn or ensure_role(),
            Handler=handler,
            Code={"ZipFile": _stub_zip(handler_file)},
            Timeout=timeout,
            MemorySize=memory_mb,
            Environment={"Variables": variables},
            Tags={HANDLER_TAG: handler_file},
        )
    else:
        fn = lam.update_function_configuration(
            FunctionName=name,
            Handler=handler,
            Timeout=timeout,
            MemorySize=memory_mb,
            Environment={"Variables": variables},
        )
        lam.tag_resource(Resource=fn["FunctionArn"], Tags={HANDLER_TAG: handler_file})
    return str(fn["FunctionArn"])


def create_step_lambdas(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The migration workflow's functions from constants.LAMBDA_STEPS, with the memory and timeout
    the CDK deploys (constants.STEP_LIMITS); returns {step: function ARN}."""
    arns = {}
    for step, (name, path, _) in LAMBDA_STEPS.items():
        memory_mb, timeout = STEP_LIMITS[step]
        arns[step] = create_lambda(name, path, "handler", env, timeout=timeout, memory_mb=memory_mb)
    return arns


def create_glue_job(
    name: str,
    repo_script: str | Path,
    default_args: Mapping[str, str] | None = None,
    *,
    role_arn: str | None = None,
    max_concurrent_runs: int = 16,
    run_queuing: bool = False,
    timeout_minutes: int = 2880,
) -> str:
    """Create (or re-create) Glue job `name` whose runs call `main(argv)` of `repo_script`.
    `run_queuing` is Glue's JobRunQueuingEnabled: runs beyond the slots wait instead of failing."""
    script = str(repo_script)
    glue = _client("glue")
    with contextlib.suppress(glue.exceptions.EntityNotFoundException):
        glue.delete_job(JobName=name)  # moto has no UpdateJob: re-create
    glue.create_job(
        Name=name,
        Role=role_arn or ensure_role(),
        Command={
            "Name": "glueetl",
            "ScriptLocation": f"s3://icelake-local-assets/{script}",
            "PythonVersion": "3",
        },
        DefaultArguments={
            **{str(k): str(v) for k, v in (default_args or {}).items()},
            LOCAL_SCRIPT_ARG: script,
        },
        ExecutionProperty={"MaxConcurrentRuns": max_concurrent_runs},
        GlueVersion="5.0",
        JobRunQueuingEnabled=run_queuing,
        Timeout=timeout_minutes,
    )
    if run_queuing:
        glue_runtime.enable_run_queuing(name, max_concurrent_runs)
    else:
        glue_runtime.disable_run_queuing(name)
    return name


class ExecutionResult(NamedTuple):
    """(status, output, events) of a finished execution; unpacks like a tuple."""

    status: str
    output: dict[str, Any]
    events: list[dict[str, Any]]

    def failure(self) -> tuple[str | None, str | None]:
        """(error, cause) of a failed execution, from its ExecutionFailed event."""
        for event in reversed(self.events):
            details = event.get("executionFailedEventDetails")
            if details is not None:
                return details.get("error"), details.get("cause")
        return None, None


# How many times moto ended each execution ARN (bounded, newest last). A count, not a flag: an
# ARN comes back whenever a run of the same name starts in a later embedded AWS (a test's second
# "full-1"), and a flag left by the earlier run would end every wait of the later one at once.
_ENDED: dict[str, int] = {}
_ENDED_CHANGED = threading.Condition()
_MAX_ENDED = 256


def execution_ended(arn: str) -> None:
    """Called by the embedded AWS as moto ends an execution (its status already set): a
    `run_execution` waiting on it looks again at once instead of at its next poll."""
    with _ENDED_CHANGED:
        _ENDED[arn] = _ENDED.pop(arn, 0) + 1
        while len(_ENDED) > _MAX_ENDED:
            del _ENDED[next(iter(_ENDED))]
        _ENDED_CHANGED.notify_all()


def _ends(arn: str) -> int:
    with _ENDED_CHANGED:
        return _ENDED.get(arn, 0)


def _wait_for_end(arn: str, ends_seen: int, seconds: float) -> None:
    """Up to `seconds`, less if moto ends the execution meanwhile: its count of ends moves past
    `ends_seen` (a server without the embedded AWS's patches never says so: the wait is the poll's)."""
    with _ENDED_CHANGED:
        _ENDED_CHANGED.wait_for(lambda: _ENDED.get(arn, 0) != ends_seen, timeout=seconds)


def run_execution(
    state_machine_arn: str,
    input: Mapping[str, Any] | str | None = None,
    timeout: float = 120.0,
    *,
    name: str | None = None,
    poll: float = 0.1,
) -> ExecutionResult:
    """Start an execution, wait until it ends; TimeoutError (after stopping it) if it takes too long.
    The wait between two looks starts at `poll` and grows by half up to POLL_CAP: a describe costs
    the embedded AWS milliseconds of CPU, which a ten-per-second poll took from the run itself. The
    embedded AWS ends a wait as the execution ends (`execution_ended`), so a run is not seen up to
    POLL_CAP after it finished."""
    sfn = _client("stepfunctions")
    body = input if isinstance(input, str) else json.dumps(dict(input or {}))
    # moto 5.2.5 quirk: with real execution on, an execution started without a name is named "None"
    # (so a second one fails with ExecutionAlreadyExists). Always give one, like the console does.
    name = name or f"run-{uuid.uuid4().hex}"
    arn = sfn.start_execution(stateMachineArn=state_machine_arn, name=name, input=body)["executionArn"]
    ends_seen = _ends(arn)  # an end after this wakes the wait; one before it, the next describe sees
    deadline = time.monotonic() + timeout
    wait = poll
    while True:
        desc = sfn.describe_execution(executionArn=arn)
        if desc["status"] != "RUNNING":
            break
        if time.monotonic() > deadline:
            sfn.stop_execution(executionArn=arn, error="Timeout", cause=f"run_execution: over {timeout}s")
            raise TimeoutError(f"execution {arn} still RUNNING after {timeout}s")
        _wait_for_end(arn, ends_seen, wait)
        wait = min(wait * 1.5, max(poll, POLL_CAP))
    events: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = sfn.get_execution_history(
            executionArn=arn, maxResults=1000, **({"nextToken": token} if token else {})
        )
        events.extend(page["events"])
        token = page.get("nextToken")
        if not token:
            break
    output = json.loads(desc["output"]) if desc.get("output") else {}
    return ExecutionResult(
        str(desc["status"]), output if isinstance(output, dict) else {"value": output}, events
    )
