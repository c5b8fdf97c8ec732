"""In-process Lambda runtime for embedded AWS: moto's Lambda functions run the repo's handler files.

Why: moto runs Lambda code only inside Docker, which the laptops and CI machines here do not have
(and `lambda.use_docker: False` makes moto return canned output without calling any code). The
Step Functions interpreter of moto invokes Lambda through the Lambda API, which ends in
`moto.awslambda.models.LambdaFunction._invoke_lambda(self, event) -> (payload_json, errored, logs)`.
`icelake.local.embedded` replaces that method with `invoke_in_process` below; nothing else in moto
changes, so Invoke, its FunctionError header, the interpreter's Retry/Catch by error name, and event
source mappings all keep moto's own behaviour.

How a function finds its code (first match wins):
1. an explicit registration: `register_handler(function_name, "lambdas/fetch/handler.py")`
   (`icelake.local.embedded.create_lambda` registers every function it creates);
2. the function's tag `icelake:local-handler` (a repo-relative or absolute path);
3. `icelake.constants.LAMBDA_STEPS` (the migration workflow's functions, by function name).
The function's `Handler` string names the callable after its last dot: "handler.handler" calls
`handler`, "handler.complete_handler" calls `complete_handler`.

Like a warm Lambda container, a handler file is imported once per function (module-level state,
`functools.cache`d settings and Powertools objects survive between invocations); it is re-imported
when the file changes on disk. Files are imported by path (`lambdas/<step>/` is not a package); the
repo root must be importable (it is put on sys.path by `configure`).

During a call the function's Environment variables, plus the variables Lambda itself sets
(AWS_LAMBDA_FUNCTION_NAME, AWS_REGION, ...), are placed in os.environ and removed afterwards.
os.environ belongs to the whole process, so handler calls are serialised by one lock: concurrent Map
iterations run one handler at a time. Consequence: a handler that synchronously invokes another
Lambda through the API would deadlock; none of ours does.

Errors are returned the way Lambda returns them, `{"errorType": <exception class name>,
"errorMessage": str(exc), "stackTrace": [...]}` with errored=True, so an ASL `Catch`/`Retry` on the
exception's class name works. Like the real runtime: Runtime.ImportModuleError,
Runtime.HandlerNotFound, Runtime.MarshalError (result not JSON-serialisable), Runtime.ExitError.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from icelake.errors import HandlerResolutionError
from icelake.local import process_memory

HANDLER_TAG = "icelake:local-handler"

_CALL_LOCK = threading.Lock()  # one handler at a time: os.environ is process-wide
_STATE_LOCK = threading.Lock()
_registry: dict[str, str] = {}
_modules: dict[tuple[str, Path], tuple[float, ModuleType]] = {}
_root: dict[str, Path] = {}  # "repo": the directory relative handler paths resolve against


@dataclass
class LambdaContext:
    """The attributes of the Lambda runtime's context object that handlers and Powertools read."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = ""
    timeout_seconds: float = 900.0
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        left = self.timeout_seconds - (time.monotonic() - self.started)
        return max(0, int(left * 1000))


def configure(repo_root: str | Path) -> None:
    """Set the directory that relative handler paths are resolved against (and make it importable)."""
    root = Path(repo_root).resolve()
    with _STATE_LOCK:
        _root["repo"] = root
    if str(root) not in sys.path:
        sys.path.append(str(root))


def repo_root() -> Path:
    return _root.get("repo") or Path.cwd()


def register_handler(function_name: str, handler_file: str | Path) -> None:
    """Route invocations of `function_name` to `handler_file` (repo-relative or absolute)."""
    with _STATE_LOCK:
        _registry[function_name] = str(handler_file)


def unregister_handler(function_name: str) -> None:
    with _STATE_LOCK:
        _registry.pop(function_name, None)


def reset() -> None:
    """Forget registrations and imported handler modules (a 'cold start' for every function)."""
    with _STATE_LOCK:
        _registry.clear()
        for _key, (_mtime, module) in _modules.items():
            sys.modules.pop(module.__name__, None)
        _modules.clear()


def resolve_handler_file(function_name: str, tags: Mapping[str, str] | None = None) -> Path:
    from icelake.constants import LAMBDA_STEPS

    with _STATE_LOCK:
        given = _registry.get(function_name)
    if given is None and tags:
        given = tags.get(HANDLER_TAG)
    if given is None:
        given = next((path for name, path, _ph in LAMBDA_STEPS.values() if name == function_name), None)
    if given is None:
        raise HandlerResolutionError(
            f"no handler file known for Lambda function {function_name!r}: register it "
            f"(icelake.local.embedded.create_lambda / register_handler) or tag it {HANDLER_TAG}"
        )
    path = Path(given)
    return path if path.is_absolute() else repo_root() / path


def _module_for(function_name: str, path: Path) -> ModuleType:
    """Import `path` once per function; re-import when the file changed. Caller holds _CALL_LOCK."""
    mtime = path.stat().st_mtime
    key = (function_name, path)
    cached = _modules.get(key)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    safe = "".join(c if c.isalnum() else "_" for c in f"{function_name}_{path.parent.name}")
    name = f"_icelake_lambda_{safe}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic/dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    with _STATE_LOCK:
        _modules[key] = (mtime, module)
    return module


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _error(error_type: str, message: str, exc: BaseException | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"errorType": error_type, "errorMessage": message}
    if exc is not None:
        out["stackTrace"] = traceback.format_exception(exc)
    return out


def _parse_event(event: Any) -> Any:
    if event is None:
        return {}
    if isinstance(event, bytes | bytearray):
        event = event.decode("utf-8")
    if isinstance(event, str):
        try:
            return json.loads(event) if event else {}
        except json.JSONDecodeError:
            return event
    return event


@dataclass(frozen=True)
class FunctionConfig:
    """What an invocation knows of its Lambda function: its name and ARN, its handler string, its
    Environment variables and its limits (what moto's LambdaFunction holds, as plain data)."""

    function_name: str
    function_arn: str
    handler: str
    environment: Mapping[str, str]
    memory_mb: int = 128
    timeout_seconds: float = 900.0
    region: str = "us-east-1"
    version: str = "$LATEST"


def call_handler(*, function: FunctionConfig, handler_file: Path, event: Any) -> tuple[Any, bool]:
    """Run one invocation in-process; returns (result or Lambda error document, errored)."""
    attr = function.handler.rsplit(".", 1)[-1] if function.handler else ""
    env = {
        "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
        "AWS_LAMBDA_FUNCTION_VERSION": function.version,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.function_name}",
        "AWS_REGION": function.region,
        "AWS_DEFAULT_REGION": function.region,
        "_HANDLER": function.handler,
        **{str(k): str(v) for k, v in function.environment.items()},
    }
    context = LambdaContext(
        function_name=function.function_name,
        invoked_function_arn=function.function_arn,
        memory_limit_in_mb=int(function.memory_mb),
        function_version=function.version,
        log_group_name=f"/aws/lambda/{function.function_name}",
        timeout_seconds=float(function.timeout_seconds),
    )
    with _CALL_LOCK, _environment(env):
        if not _recorders:
            return _call(handler_file, attr, event, context)
        process_memory.reset_peak()
        before = process_memory.rss_mib()
        started = time.monotonic()
        outcome = _call(handler_file, attr, event, context)
        measured = Invocation(
            function_name=function.function_name,
            seconds=time.monotonic() - started,
            memory_limit_mb=int(function.memory_mb),
            timeout_seconds=float(function.timeout_seconds),
            rss_before_mib=before,
            peak_rss_mib=process_memory.peak_rss_mib(),
            errored=outcome[1],
            response_bytes=len(json.dumps(outcome[0], default=str).encode()),
        )
        for calls in _recorders:
            calls.append(measured)
        return outcome


def _call(handler_file: Path, attr: str, event: Any, context: LambdaContext) -> tuple[Any, bool]:
    try:
        module = _module_for(context.function_name, handler_file)
    except Exception as exc:
        return _error("Runtime.ImportModuleError", f"Unable to import {handler_file}: {exc}", exc), True
    fn: Callable[[Any, LambdaContext], Any] | None = getattr(module, attr, None) if attr else None
    if not callable(fn):
        return _error("Runtime.HandlerNotFound", f"Handler {attr!r} missing in {handler_file}"), True
    try:
        return fn(_parse_event(event), context), False
    except SystemExit as exc:
        return _error("Runtime.ExitError", f"handler exited: {exc.code}", exc), True
    except Exception as exc:
        return _error(type(exc).__name__, str(exc), exc), True


@dataclass(frozen=True)
class Invocation:
    """One handler call, measured as Lambda limits it: its duration, and the peak resident memory
    of the process while it ran (an upper bound of the handler's own: the embedded services that
    answer its requests share the process)."""

    function_name: str
    seconds: float
    memory_limit_mb: int
    timeout_seconds: float
    rss_before_mib: float
    peak_rss_mib: float
    errored: bool
    response_bytes: int  # the result as JSON: what the next state is passed (at most 256 KiB)


_recorders: list[list[Invocation]] = []


@contextmanager
def recording_invocations() -> Iterator[list[Invocation]]:
    """The handler calls made while the block runs, each measured (see `Invocation`). Measuring
    resets the process's high-water mark of resident memory (`process_memory.reset_peak`)."""
    calls: list[Invocation] = []
    with _STATE_LOCK:
        _recorders.append(calls)
    try:
        yield calls
    finally:
        with _STATE_LOCK:
            _recorders.remove(calls)


def invoke_in_process(fn: Any, event: Any = None) -> tuple[str, bool, str]:
    """Drop-in body for `moto.awslambda.models.LambdaFunction._invoke_lambda` (moto 5.2.5)."""
    try:
        handler_file = resolve_handler_file(fn.function_name, getattr(fn, "tags", None))
    except HandlerResolutionError as exc:
        doc, errored = _error("Runtime.HandlerNotFound", str(exc)), True
    else:
        function = FunctionConfig(
            function_name=fn.function_name,
            handler=fn.handler or "",
            environment=dict(fn.environment_vars or {}),
            function_arn=fn.function_arn,
            memory_mb=int(fn.memory_size or 128),
            timeout_seconds=float(fn.timeout or 3),
            region=fn.region,
            version=str(getattr(fn, "version", "$LATEST")),
        )
        doc, errored = call_handler(function=function, handler_file=handler_file, event=event)
    try:
        payload = json.dumps(doc)
    except (TypeError, ValueError) as exc:
        doc, errored = _error("Runtime.MarshalError", f"Unable to marshal response: {exc}"), True
        payload = json.dumps(doc)
    logs = ""
    if errored:
        logs = "".join(doc.get("stackTrace") or [f"{doc['errorType']}: {doc['errorMessage']}\n"])
        try:  # CloudWatch Logs like the real runtime; best effort
            fn.logs_backend.ensure_log_group(fn.logs_group_name)
            fn.save_logs(logs)
        except Exception:  # pragma: no cover - logging must never change the outcome
            pass
    return payload, errored, logs
