"""Embedded AWS that executes the repo's workflows: moto's Step Functions interpreter runs the real
ASL files, Lambda tasks run the repo's handlers in-process, Glue tasks run the repo's Glue scripts.

    from icelake.local.embedded import start_embedded_aws, create_lambda, create_glue_job, ...

    with start_embedded_aws(repo_root) as aws:          # moto server on 127.0.0.1:<free port>
        arn = create_lambda("icelake-plan", "lambdas/plan/handler.py", "handler", env={...})
        create_glue_job("icelake-migrate-table", "glue_jobs/migrate_table.py", {"--x": "1"})
        sm = create_state_machine("statemachines/migrate_tables.asl.json", {"PlanFunctionArn": arn, ...},
                                  "icelake-migrate-tables")
        result = run_execution(sm, {...}, timeout=300)   # (status, output, history events)

`start_embedded_aws` composes `icelake.local.moto_server.embedded_aws` (server, AWS_ENDPOINT_URL,
MOTO_PORT, local credentials) with real ASL execution and the patches below. Everything is undone on
exit: the patches (reference-counted, so nesting and repeated installs are harmless), moto's
Step Functions config, the environment, sys.path.

Patch points (moto internals, verified on moto==5.2.5 only: `install_patches` refuses other
versions rather than misbehave):

1. `moto.awslambda.models.LambdaFunction._invoke_lambda(self, event) -> (payload, errored, logs)`
   -> `lambda_runtime.invoke_in_process`. moto runs Lambda code only in Docker (absent here); this is
   the narrowest point below the Invoke API, so the interpreter's `lambda:invoke` and plain Lambda
   ARNs, boto3 `invoke`, FunctionError and Catch/Retry by `errorType` all keep moto's behaviour.
2. `moto.glue.models.FakeJob.start_job_run` (wrapped) -> `glue_runtime.launch`: moto records the run,
   then the repo script runs in a thread and sets SUCCEEDED/FAILED. Without it moto's runs succeed
   without running anything.
3. `moto.glue.models.FakeJobRun.as_dict` (wrapped): adds ErrorMessage (and real CompletedOn and
   ExecutionTime) so a failed run explains itself in GetJobRun and in the Step Functions Cause.
4. `_SUPPORTED_INTEGRATION_PATTERNS` of `moto.stepfunctions.parser.asl.component.state.exec.
   state_task.service.state_task_service_glue` gets `ResourceCondition.WaitForTaskToken` added.
   moto 5.2.5 bug: `StateTaskServiceCallback._eval_integration_pattern` only creates a callback
   endpoint when WaitForTaskToken is a supported pattern, but calls `callback_endpoint.interrupt_all()`
   unconditionally in `finally`, so every `glue:startJobRun.sync` fails with "'NoneType' object has no
   attribute 'interrupt_all'". With the pattern listed, an endpoint exists (a task token is minted and
   an idle waiter thread is interrupted when the task ends); `.sync` then works as in AWS.
   `StateTaskServiceGlue._eval_integration_pattern` (overridden) mints a fresh token and endpoint
   per attempt, as AWS does: a Retry re-enters there, and would otherwise wait on the endpoint the
   failed attempt interrupted and time out (States.Timeout) at once.
5. `StateTaskServiceGlue._sync_to_start_job_run` (same module; wrapped): the `.sync` result is
   boto3's parsed GetJobRun, whose StartedOn/CompletedOn/LastModifiedOn are datetime objects; moto
   stores them in the state output as they are and then fails DescribeExecution with HTTP 500
   ("Object of type datetime is not JSON serializable") as soon as they reach the execution output.
   They become epoch milliseconds, which is how Step Functions shows them.
6. Not a patch: moto's process-wide config `stepfunctions.execute_state_machine=True` (POSTed to
   /moto-api/config); without it executions stay RUNNING with canned output. Restored on exit.

Limits of this runtime (see the runtime modules): Lambda handlers run one at a time (os.environ is
process-wide); Glue scripts run one at a time; the state machine itself must live in moto's
default account 123456789012 (handlers assume roles into other accounts themselves).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from icelake.constants import LAMBDA_STEPS, ORCHESTRATOR_ACCOUNT_LOCAL, REGION_LOCAL, STEP_LIMITS
from icelake.local import glue_runtime, lambda_runtime
from icelake.local.glue_runtime import LOCAL_SCRIPT_ARG
from icelake.local.lambda_runtime import HANDLER_TAG, register_handler
from icelake.local.moto_server import embedded_aws

__all__ = [
    "EmbeddedAws",
    "ExecutionResult",
    "create_glue_job",
    "create_lambda",
    "create_state_machine",
    "create_step_lambdas",
    "ensure_role",
    "install_patches",
    "moto_patches",
    "patches_installed",
    "register_handler",
    "render_asl",
    "run_execution",
    "start_embedded_aws",
    "uninstall_patches",
]

MOTO_VERSION = "5.2.5"
LOCAL_ROLE = "icelake-local-execution"
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

# ---------------------------------------------------------------------------------------- patches

_PATCH_LOCK = threading.RLock()
_undo: list[Callable[[], None]] = []  # inverse operations, applied last-first


class _Installed:
    depth = 0  # install_patches calls not yet undone


def _check_moto_version() -> None:
    import moto

    if moto.__version__ != MOTO_VERSION:
        raise RuntimeError(
            f"icelake's embedded AWS patches moto internals verified on moto=={MOTO_VERSION}; "
            f"installed: {moto.__version__}. Re-check the patch points in {__name__} before changing the pin."
        )


def _replace(owner: Any, name: str, value: Any) -> None:
    """Set owner.name; undo restores the class's own attribute, or removes an inherited one's override."""
    if name in owner.__dict__:
        original = owner.__dict__[name]
        _undo.append(lambda: setattr(owner, name, original))
    else:
        _undo.append(lambda: delattr(owner, name))
    setattr(owner, name, value)


def _apply_patches() -> None:
    from moto import backends as moto_backends
    from moto.awslambda.models import LambdaFunction
    from moto.glue.exceptions import ConcurrentRunsExceededException
    from moto.glue.models import FakeJob, FakeJobRun
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_glue as sfn_glue,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import (
        ResourceCondition,
    )

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        return lambda_runtime.invoke_in_process(self, event)

    original_start = FakeJob.__dict__["start_job_run"]

    def start_job_run(self: Any, *args: Any, **kwargs: Any) -> str:
        if glue_runtime.queues_runs(self.name):  # job run queuing: no refusal, the run waits
            limit = self.execution_property.get("MaxConcurrentRuns", 1)
            self.execution_property = {**self.execution_property, "MaxConcurrentRuns": 1 << 30}
            try:
                run_id: str = original_start(self, *args, **kwargs)
            finally:
                self.execution_property = {**self.execution_property, "MaxConcurrentRuns": limit}
        else:
            try:
                run_id = original_start(self, *args, **kwargs)
            except ConcurrentRunsExceededException:
                glue_runtime.count_refusal(self.name)
                raise
        run = next(r for r in self.job_runs if r.job_run_id == run_id)
        glue_runtime.launch(self, run)
        return run_id

    original_as_dict = FakeJobRun.__dict__["as_dict"]

    def as_dict(self: Any) -> dict[str, Any]:
        return glue_runtime.job_run_as_dict(original_as_dict, self)

    original_sync = sfn_glue.StateTaskServiceGlue.__dict__["_sync_to_start_job_run"]

    def _sync_to_start_job_run(self: Any, *args: Any, **kwargs: Any) -> Callable[[], Any] | None:
        resolver = original_sync(self, *args, **kwargs)
        if resolver is None:  # pragma: no cover - moto always builds one
            return None
        return lambda: glue_runtime.jsonable(resolver())

    inherited_eval = sfn_glue.StateTaskServiceGlue._eval_integration_pattern

    def _eval_integration_pattern(self: Any, env: Any, *args: Any, **kwargs: Any) -> None:
        # A Retry re-runs this, not `_eval_body` which mints the task token: without a fresh token
        # the attempt would wait on the endpoint the last attempt interrupted, and time out at once.
        env.callback_pool_manager.add(env.states.context_object.update_task_token())
        inherited_eval(self, env, *args, **kwargs)

    # moto's server looks for the backend of every request by listing its own package directory
    # (about 170 stat calls, twice, under a global lock): 1.5-2 ms of the 8-10 ms a request costs
    # here. The directory does not change while the process runs; the answer is kept.
    modules = tuple(moto_backends.list_of_moto_modules())
    _replace(moto_backends, "list_of_moto_modules", lambda: iter(modules))
    _replace(LambdaFunction, "_invoke_lambda", _invoke_lambda)
    _replace(sfn_glue.StateTaskServiceGlue, "_eval_integration_pattern", _eval_integration_pattern)
    _replace(sfn_glue.StateTaskServiceGlue, "_sync_to_start_job_run", _sync_to_start_job_run)
    _replace(FakeJob, "start_job_run", start_job_run)
    _replace(FakeJobRun, "as_dict", as_dict)

    patterns: set[Any] = sfn_glue._SUPPORTED_INTEGRATION_PATTERNS  # the set every Glue task shares
    if ResourceCondition.WaitForTaskToken not in patterns:
        patterns.add(ResourceCondition.WaitForTaskToken)
        _undo.append(lambda: patterns.discard(ResourceCondition.WaitForTaskToken))


def install_patches(repo_root: str | Path = ".") -> None:
    """Install the moto patches (idempotent, reference-counted) and resolve handlers under repo_root."""
    with _PATCH_LOCK:
        lambda_runtime.configure(repo_root)
        if _Installed.depth == 0:
            _check_moto_version()
            try:
                _apply_patches()
            except BaseException:
                _undo_all()
                raise
        _Installed.depth += 1


def _undo_all() -> None:
    while _undo:
        _undo.pop()()


def uninstall_patches() -> None:
    """Undo one install_patches; the last one restores moto exactly."""
    with _PATCH_LOCK:
        if _Installed.depth == 0:
            return
        _Installed.depth -= 1
        if _Installed.depth == 0:
            _undo_all()


def patches_installed() -> bool:
    with _PATCH_LOCK:
        return _Installed.depth > 0


@contextmanager
def moto_patches(repo_root: str | Path = ".") -> Iterator[None]:
    """The patches without a server, e.g. around `mock_aws(config={"stepfunctions": {...}})`."""
    install_patches(repo_root)
    try:
        yield
    finally:
        uninstall_patches()


# ---------------------------------------------------------------------------------------- server


@dataclass(frozen=True)
class EmbeddedAws:
    endpoint: str
    port: int
    repo_root: Path
    region: str = REGION_LOCAL
    account_id: str = ORCHESTRATOR_ACCOUNT_LOCAL

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=self.region, endpoint_url=self.endpoint)


def _post(endpoint: str, path: str, body: Mapping[str, Any] | None = None) -> None:
    import requests

    response = requests.post(f"{endpoint}{path}", json=dict(body or {}), timeout=30)
    response.raise_for_status()


@contextmanager
def start_embedded_aws(
    repo_root: str | Path = ".", *, port: int | None = None, reset: bool = True, glue_grace: float = 60.0
) -> Iterator[EmbeddedAws]:
    """moto server on 127.0.0.1 with real ASL execution and in-process Lambda and Glue.

    `reset` clears moto's (process-wide) backends first. On exit: waits up to `glue_grace` seconds
    for Glue runs still going, stops the server, restores config, patches and environment.
    """
    from moto.core.config import default_user_config

    root = Path(repo_root).resolve()
    added_path = str(root) not in sys.path
    saved_sfn_config = default_user_config.get("stepfunctions")
    with moto_patches(root), embedded_aws(port) as endpoint:
        try:
            if reset:
                _post(endpoint, "/moto-api/reset")
            _post(endpoint, "/moto-api/config", {"stepfunctions": {"execute_state_machine": True}})
            yield EmbeddedAws(endpoint=endpoint, port=int(os.environ["MOTO_PORT"]), repo_root=root)
        finally:
            glue_runtime.wait_for_runs(glue_grace)
            if saved_sfn_config is None:
                default_user_config.pop("stepfunctions", None)
            else:
                default_user_config["stepfunctions"] = saved_sfn_config
    if added_path and str(root) in sys.path:
        sys.path.remove(str(root))


# ---------------------------------------------------------------------------------------- helpers


def _client(service: str) -> Any:
    import boto3

    return boto3.client(service, region_name=os.environ.get("AWS_DEFAULT_REGION", REGION_LOCAL))


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


def run_execution(
    state_machine_arn: str,
    input: Mapping[str, Any] | str | None = None,
    timeout: float = 120.0,
    *,
    name: str | None = None,
    poll: float = 0.1,
) -> ExecutionResult:
    """Start an execution, wait until it ends; TimeoutError (after stopping it) if it takes too long."""
    sfn = _client("stepfunctions")
    body = input if isinstance(input, str) else json.dumps(dict(input or {}))
    # moto 5.2.5 quirk: with real execution on, an execution started without a name is named "None"
    # (so a second one fails with ExecutionAlreadyExists). Always give one, like the console does.
    name = name or f"run-{uuid.uuid4().hex}"
    arn = sfn.start_execution(stateMachineArn=state_machine_arn, name=name, input=body)["executionArn"]
    deadline = time.monotonic() + timeout
    while True:
        desc = sfn.describe_execution(executionArn=arn)
        if desc["status"] != "RUNNING":
            break
        if time.monotonic() > deadline:
            sfn.stop_execution(executionArn=arn, error="Timeout", cause=f"run_execution: over {timeout}s")
            raise TimeoutError(f"execution {arn} still RUNNING after {timeout}s")
        time.sleep(poll)
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
