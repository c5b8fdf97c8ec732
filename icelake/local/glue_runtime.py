"""In-process Glue runtime for embedded AWS: a moto Glue job run executes the repo's Glue script.

Why: moto's Glue keeps job runs as bookkeeping only (a run goes STARTING -> RUNNING -> SUCCEEDED by
moto's state manager, no code runs). `icelake.local.embedded` wraps
`moto.glue.models.FakeJob.start_job_run` so that, after moto has recorded the run, `launch` below
pins the run at RUNNING and runs the job's script in a background thread; the thread sets the run to
SUCCEEDED, or FAILED with an ErrorMessage (`FakeJobRun.as_dict` is wrapped to report it, plus the real
CompletedOn/ExecutionTime). Returning at once and finishing later is what a Glue run does; it is what
the interpreter's `glue:startJobRun.sync` expects (it polls GetJobRun every 0.5 s) and it keeps the
StartJobRun HTTP request short. moto's MaxConcurrentRuns check stays in force (runs are RUNNING
until their script ends), so jobs used from a Map must allow enough concurrent runs.

Which script (first match wins):
1. the run's argument `--icelake-local-script` (repo-relative or absolute path; normally a
   DefaultArgument set by `icelake.local.embedded.create_glue_job`);
2. an explicit `register_script(job_name, path)`;
3. the job's Command.ScriptLocation when it is a local path, or an s3:// location whose key ends
   with a repo path (s3://assets/x/glue_jobs/migrate_table.py -> glue_jobs/migrate_table.py).
A run whose script cannot be found FAILS (it never silently succeeds).

The script is imported fresh for every run (a Glue run is a new process) and its `main(argv)` is
called with argv as Glue builds it: `--JOB_NAME <job> --JOB_RUN_ID <run id>` then every argument of
the run (DefaultArguments, overridden by the run's Arguments, then NonOverridableArguments) as
`--key value` pairs; the local plumbing arguments `--icelake-local-*` are left out. A return (or
SystemExit(0)) means SUCCEEDED; an exception or a non-zero exit means FAILED with
"<ExceptionClass>: <message>". Runs are serialised by one lock: scripts share the process and its
SparkSession.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icelake.errors import ScriptResolutionError

LOCAL_SCRIPT_ARG = "--icelake-local-script"
_LOCAL_ARG_PREFIX = "--icelake-local-"
ERROR_ATTR = "_icelake_error_message"

_RUN_LOCK = threading.Lock()
_STATE_LOCK = threading.Lock()
_registry: dict[str, str] = {}
_threads: set[threading.Thread] = set()
# Jobs with job run queuing (JobRunQueuingEnabled, which moto ignores): a run beyond the job's
# MaxConcurrentRuns is accepted and WAITING until a slot frees, as in AWS, instead of refused.
_queuing: dict[str, threading.Semaphore] = {}
# StartJobRun calls refused for lack of a slot, per job (what a test asks: did any table wait by
# retrying instead of queuing?)
refused_starts: dict[str, int] = {}


def enable_run_queuing(job_name: str, max_concurrent_runs: int) -> None:
    with _STATE_LOCK:
        _queuing[job_name] = threading.Semaphore(max_concurrent_runs)
        refused_starts.pop(job_name, None)  # a (re-)created job has no history


def count_refusal(job_name: str) -> None:
    with _STATE_LOCK:
        refused_starts[job_name] = refused_starts.get(job_name, 0) + 1


def disable_run_queuing(job_name: str) -> None:
    with _STATE_LOCK:
        _queuing.pop(job_name, None)
        refused_starts.pop(job_name, None)  # a (re-)created job has no history


def queues_runs(job_name: str) -> bool:
    with _STATE_LOCK:
        return job_name in _queuing


def register_script(job_name: str, script: str | Path) -> None:
    with _STATE_LOCK:
        _registry[job_name] = str(script)


def reset() -> None:
    with _STATE_LOCK:
        _registry.clear()
        _queuing.clear()
        refused_starts.clear()


def _repo_root() -> Path:
    from icelake.local.lambda_runtime import repo_root

    return repo_root()


def _existing(given: str) -> Path | None:
    path = Path(given)
    path = path if path.is_absolute() else _repo_root() / path
    return path if path.is_file() else None


def resolve_script(job_name: str, arguments: dict[str, str], script_location: str | None) -> Path:
    candidates: list[str] = []
    if arguments.get(LOCAL_SCRIPT_ARG):
        candidates.append(arguments[LOCAL_SCRIPT_ARG])
    with _STATE_LOCK:
        if job_name in _registry:
            candidates.append(_registry[job_name])
    if script_location:
        if script_location.startswith("s3://"):
            parts = script_location[len("s3://") :].split("/")[1:]  # the key, without the bucket
            candidates.extend("/".join(parts[i:]) for i in range(len(parts)))
        else:
            candidates.append(script_location.removeprefix("file://"))
    for given in candidates:
        found = _existing(given)
        if found is not None:
            return found
    raise ScriptResolutionError(
        f"no local script for Glue job {job_name!r} (tried {candidates or 'nothing'}); "
        f"set {LOCAL_SCRIPT_ARG} or use icelake.local.embedded.create_glue_job"
    )


def build_argv(job_name: str, run_id: str, arguments: dict[str, str]) -> list[str]:
    argv = ["--JOB_NAME", job_name, "--JOB_RUN_ID", run_id]
    for key, value in arguments.items():
        if key.startswith(_LOCAL_ARG_PREFIX) or key in ("--JOB_NAME", "--JOB_RUN_ID"):
            continue
        argv += [key if key.startswith("--") else f"--{key}", str(value)]
    return argv


def run_script(script: Path, argv: Sequence[str]) -> None:
    """Import `script` fresh and call its main(argv); raises what the script raises."""
    name = f"_icelake_glue_{script.stem}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, script)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {script}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        main = getattr(module, "main", None)
        if not callable(main):
            raise AttributeError(f"{script} has no main(argv)")
        main(list(argv))
    finally:
        sys.modules.pop(name, None)


def _finish(run: Any, state: str, error: str | None) -> None:
    from moto.core.utils import utcnow  # naive UTC, like the run's started_on

    now = utcnow()
    run.completed_on = now
    run.modified_on = now
    setattr(run, ERROR_ATTR, error)
    run.status = state


def _execute(job_name: str, run: Any, script: Path, argv: list[str]) -> None:
    with _STATE_LOCK:
        slots = _queuing.get(job_name)
    try:
        if slots is not None:
            if not slots.acquire(blocking=False):
                run.status = "WAITING"  # queued: every slot of the job is taken
                slots.acquire()
            run.status = "RUNNING"
        try:
            with _RUN_LOCK:
                run_script(script, argv)
        finally:
            if slots is not None:
                slots.release()
    except SystemExit as exc:
        if exc.code in (None, 0):
            _finish(run, "SUCCEEDED", None)
        else:
            _finish(run, "FAILED", f"SystemExit: {exc.code}")
    except BaseException as exc:  # everything a script can raise ends the run, never the thread
        traceback.print_exception(exc, file=sys.stderr)
        _finish(run, "FAILED", f"{type(exc).__name__}: {exc}")
    else:
        _finish(run, "SUCCEEDED", None)
    finally:
        with _STATE_LOCK:
            _threads.discard(threading.current_thread())


def launch(job: Any, run: Any) -> None:
    """Called right after moto recorded `run` of `job` (moto 5.2.5 FakeJob / FakeJobRun)."""
    run._transitions = [("RUNNING", "RUNNING")]  # moto's state manager must not advance it
    run.status = "RUNNING"
    setattr(run, ERROR_ATTR, None)
    arguments = dict(run.arguments or {})
    try:
        script = resolve_script(job.name, arguments, (job.command or {}).get("ScriptLocation"))
    except ScriptResolutionError as exc:
        _finish(run, "FAILED", f"{type(exc).__name__}: {exc}")
        return
    argv = build_argv(job.name, run.job_run_id, arguments)
    thread = threading.Thread(
        target=_execute, args=(job.name, run, script, argv), name=f"glue-{job.name}", daemon=True
    )
    with _STATE_LOCK:
        _threads.add(thread)
    thread.start()


def job_run_as_dict(original: Any, run: Any) -> dict[str, Any]:
    """FakeJobRun.as_dict plus what a finished local run knows: ErrorMessage, CompletedOn, time."""
    out: dict[str, Any] = original(run)
    if hasattr(run, ERROR_ATTR):
        error = getattr(run, ERROR_ATTR)
        if error:
            out["ErrorMessage"] = error
        if out.get("JobRunState") in ("SUCCEEDED", "FAILED", "STOPPED", "TIMEOUT", "ERROR"):
            out["ExecutionTime"] = max(0, int((run.completed_on - run.started_on).total_seconds()))
        else:
            out.pop("CompletedOn", None)
    return out


def jsonable(value: Any) -> Any:
    """boto3's parsed GetJobRun with datetimes as epoch milliseconds, as Step Functions shows them."""
    if isinstance(value, datetime):
        when = value if value.tzinfo else value.replace(tzinfo=UTC)
        return int(when.timestamp() * 1000)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


def wait_for_runs(timeout: float = 60.0) -> bool:
    """Wait until every launched run has ended; False if some are still running after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        with _STATE_LOCK:
            pending = list(_threads)
        if not pending:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        pending[0].join(left)
