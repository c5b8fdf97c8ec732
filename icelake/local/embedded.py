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
Step Functions config, the environment, sys.path. What a workflow needs in it (roles, functions,
jobs, state machines) and `run_execution` are made in `icelake.local.resources`; this module
re-exports them, so the one import above is all a caller needs.

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
6. Operations moto lacks, added from botocore's model: Lake Formation data cells filters
   (`data_filters`), Athena's BatchGetNamedQuery and ListPreparedStatements (`athena_saved`);
   S3 Tables' maintenance settings, tags and policies, and the limits of a table bucket's storage
   (`s3tables`, which every embedded AWS of moto_server.py installs too).
7. What moto recomputes for every request (its backends' modules) and every execution (the
   definition parsed), kept: `icelake.local.moto_server.kept`, which every embedded AWS's server
   holds too.
8. `moto.stepfunctions.parser.asl.component.common.retry.retrier_decl.time`: a Retry's wait is
   moto's `time.sleep(interval)`, as long as AWS waits. `ICELAKE_LOCAL_RETRY_WAIT_SCALE` (a factor,
   default 1) shortens it where only what the retry does matters: the test suite sets 0.05, so the
   ingest workflow's retried merge waits 1.5 s instead of its 30.
9. `moto.stepfunctions.parser.backend.execution.BaseExecutionWorkerCommunication.terminated`
   (wrapped): an execution that ends says so to `run_execution` (`resources.execution_ended`),
   which then looks at once instead of at its next poll, up to half a second later.
10. `os.environ.copy`, `.items` and `.values` (the `os._Environ` class): read in one step, not key
   by key, while the Lambda runtime sets and removes a handler's variables (`lambda_runtime`) in
   other threads. The original lists the keys and then looks each up; a key removed between the
   two was a KeyError in the reading thread. Every botocore request reads `os.environ.items()`
   twice (urllib's proxy settings), so the race failed a Step Functions task now and then.
11. Not a patch: moto's process-wide config `stepfunctions.execute_state_machine=True` (POSTed to
   /moto-api/config); without it executions stay RUNNING with canned output. Restored on exit.

Limits of this runtime (see the runtime modules): Lambda handlers run one at a time (os.environ is
process-wide); Glue scripts run one at a time; the state machine itself must live in moto's
default account 123456789012 (handlers assume roles into other accounts themselves).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, ItemsView, Iterator, Mapping, ValuesView
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icelake.aws import warm
from icelake.constants import ORCHESTRATOR_ACCOUNT_LOCAL, REGION_LOCAL
from icelake.local import (
    athena_saved,
    data_filters,
    glue_runtime,
    glue_views,
    lambda_runtime,
    resources,
    s3tables,
)
from icelake.local.lambda_runtime import register_handler
from icelake.local.moto_server import acquire_kept, embedded_aws, release_kept
from icelake.local.patching import Patches
from icelake.local.resources import (
    ExecutionResult,
    create_glue_job,
    create_lambda,
    create_state_machine,
    create_step_lambdas,
    ensure_role,
    render_asl,
    run_execution,
)

__all__ = [
    "ENV_RETRY_WAIT_SCALE",
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
    "retry_wait_scale",
    "run_execution",
    "start_embedded_aws",
    "uninstall_patches",
]

ENV_RETRY_WAIT_SCALE = "ICELAKE_LOCAL_RETRY_WAIT_SCALE"


def retry_wait_scale() -> float:
    """The factor of ICELAKE_LOCAL_RETRY_WAIT_SCALE applied to every Retry's wait (1: as AWS waits)."""
    raw = os.environ.get(ENV_RETRY_WAIT_SCALE, "").strip()
    if not raw:
        return 1.0
    try:
        scale = float(raw)
    except ValueError:
        scale = -1.0
    if not 0 < scale <= 1:
        raise ValueError(
            f"{ENV_RETRY_WAIT_SCALE}={raw!r}: give a factor above 0 and at most 1 (1: as AWS waits)"
        )
    return scale


class _ScaledRetryWaits:
    """The `time` of moto's retrier module: its one call, `sleep(interval)`, scaled."""

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds * retry_wait_scale())


MOTO_VERSION = "5.2.5"

# ---------------------------------------------------------------------------------------- patches

_PATCHES = Patches()


def _check_moto_version() -> None:
    import moto

    if moto.__version__ != MOTO_VERSION:
        raise RuntimeError(
            f"icelake's embedded AWS patches moto internals verified on moto=={MOTO_VERSION}; "
            f"installed: {moto.__version__}. Re-check the patch points in {__name__} before changing the pin."
        )


def _apply_patches() -> None:
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

    acquire_kept()  # what moto recomputes for every request and execution, kept
    _PATCHES.undo.append(release_kept)
    _PATCHES.replace(LambdaFunction, "_invoke_lambda", _invoke_lambda)
    _PATCHES.replace(sfn_glue.StateTaskServiceGlue, "_eval_integration_pattern", _eval_integration_pattern)
    _PATCHES.replace(sfn_glue.StateTaskServiceGlue, "_sync_to_start_job_run", _sync_to_start_job_run)
    _PATCHES.replace(FakeJob, "start_job_run", start_job_run)
    _PATCHES.replace(FakeJobRun, "as_dict", as_dict)
    _runtime_patches()
    data_filters.install(_PATCHES.replace)  # Lake Formation data cells filters, which moto lacks
    glue_views.install(_PATCHES.replace)  # Glue multi-dialect views in the model's shapes
    athena_saved.install(_PATCHES.replace)  # BatchGetNamedQuery, ListPreparedStatements
    _PATCHES.undo.append(s3tables.acquired())  # S3 Tables' settings, tags, policies; its storage's limits

    patterns: set[Any] = sfn_glue._SUPPORTED_INTEGRATION_PATTERNS  # the set every Glue task shares
    if ResourceCondition.WaitForTaskToken not in patterns:
        patterns.add(ResourceCondition.WaitForTaskToken)
        _PATCHES.undo.append(lambda: patterns.discard(ResourceCondition.WaitForTaskToken))


def _environ_copy(self: Any) -> dict[str, str]:
    """`os.environ.copy()` in one step: the in-process Lambda runtime sets and removes a handler's
    variables while other threads run, and the original copies key by key (botocore's credential
    resolver copies the environment: a key removed meanwhile was a KeyError in a Glue job's thread)."""
    return {self.decodekey(k): self.decodevalue(v) for k, v in list(self._data.items())}


def _environ_items(self: Any) -> ItemsView[str, str]:
    """`os.environ.items()` over a one-step copy: urllib's `getproxies_environment`, which botocore
    calls for every request, and pyiceberg's config iterate it while a handler's variables come and
    go (a Step Functions task once failed with KeyError('AWS_LAMBDA_FUNCTION_NAME'))."""
    return _environ_copy(self).items()


def _environ_values(self: Any) -> ValuesView[str]:
    """`os.environ.values()` over a one-step copy, for the same reason as `_environ_items`."""
    return _environ_copy(self).values()


def _runtime_patches() -> None:
    """Patches 8 to 10: a Retry's wait scaled, an execution's end said to `run_execution`, and
    `os.environ` copied and iterated in one step."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication as Comm

    _PATCHES.replace(retrier_decl, "time", _ScaledRetryWaits)  # ICELAKE_LOCAL_RETRY_WAIT_SCALE
    _PATCHES.replace(type(os.environ), "copy", _environ_copy)
    _PATCHES.replace(type(os.environ), "items", _environ_items)
    _PATCHES.replace(type(os.environ), "values", _environ_values)

    original = Comm.__dict__["terminated"]

    def terminated(self: Any) -> None:
        original(self)  # the execution's status, output or error set
        resources.execution_ended(self.execution.exec_arn)

    _PATCHES.replace(Comm, "terminated", terminated)


def install_patches(repo_root: str | Path = ".") -> None:
    """Install the moto patches (idempotent, reference-counted) and resolve handlers under repo_root."""
    with _PATCHES.lock:
        lambda_runtime.configure(repo_root)
        if _PATCHES.holders == 0:
            warm.forget()  # a new embedded AWS: nothing kept from before holds its credentials
            _check_moto_version()
            retry_wait_scale()  # a bad factor stops here, not in the first Retry of a run
        _PATCHES.acquire(_apply_patches)


def uninstall_patches() -> None:
    """Undo one install_patches; the last one restores moto exactly."""
    with _PATCHES.lock:
        if _PATCHES.release():
            warm.forget()


def patches_installed() -> bool:
    return _PATCHES.held()


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
