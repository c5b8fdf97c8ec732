"""Every boto3 session (and so every client) icelake creates: retries, S3 paced per prefix, and
bounded waits.

botocore's defaults (legacy mode, 3 attempts) turn a few percent of S3 `503 SlowDown` answers into
failed runs. Its adaptive mode is no better for S3: it slows the whole client on one prefix's
SlowDown, and each client (each Spark task) learns alone. So clients retry in standard mode
(exponential backoff, 10 attempts), and S3 requests are paced per prefix by `icelake.aws.pacing`,
which also retries a SlowDown for as long as the prefix answers others. A call that hangs is cut
by the read timeout and retried, so no step waits forever on one request.
"""

from __future__ import annotations

import copy
import functools
import os
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import boto3
import botocore.handlers
import botocore.hooks
import botocore.loaders
import botocore.session
import botocore.utils
from botocore.config import Config

from icelake.aws import pacing

ENV_MAX_ATTEMPTS = "ICELAKE_AWS_MAX_ATTEMPTS"
DEFAULT_MAX_ATTEMPTS = 10
CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_S = 120  # a CopyObject of a 5 GiB part answers within this on S3
MAX_POOL_CONNECTIONS = 64  # plan and copy run up to this many requests at once per client


def max_attempts() -> int:
    raw = os.environ.get(ENV_MAX_ATTEMPTS, "")
    if not raw:
        return DEFAULT_MAX_ATTEMPTS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{ENV_MAX_ATTEMPTS}={raw!r}: give a whole number of attempts, 1 or more")
    return value


def client_config() -> Config:
    return Config(
        # total_max_attempts counts the first try too, as AWS_MAX_ATTEMPTS does.
        retries={"mode": "standard", "total_max_attempts": max_attempts()},
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
        max_pool_connections=MAX_POOL_CONNECTIONS,
    )


# Test-only observers of every API call made through icelake's sessions (the IAM evaluation test
# records calls with them). Each gets (core session, operation model, params) before the call is sent.
CallHook = Callable[[botocore.session.Session, Any, dict[str, Any]], None]
# ... and (operation model, HTTP status) after the answer arrived, on the same thread.
AnswerHook = Callable[[Any, int], None]
_CALL_HOOKS: list[CallHook] = []
_ANSWER_HOOKS: list[AnswerHook] = []
_HOOKS_LOCK = threading.Lock()
H = TypeVar("H", CallHook, AnswerHook)
ROLE_ATTR = "_icelake_role_arn"  # set on a core session acting as an assumed role


def _hooked(hooks: list[H], hook: H, on: bool) -> None:
    """`hook` added to `hooks` (`on`), or taken out if it is there."""
    with _HOOKS_LOCK:
        if on:
            hooks.append(hook)
        elif hook in hooks:
            hooks.remove(hook)


def add_call_hook(hook: CallHook) -> None:
    _hooked(_CALL_HOOKS, hook, True)


def remove_call_hook(hook: CallHook) -> None:
    _hooked(_CALL_HOOKS, hook, False)


def add_answer_hook(hook: AnswerHook) -> None:
    _hooked(_ANSWER_HOOKS, hook, True)


def remove_answer_hook(hook: AnswerHook) -> None:
    _hooked(_ANSWER_HOOKS, hook, False)


def _observe(core: botocore.session.Session) -> None:
    def before_call(model: Any, params: dict[str, Any], **_: Any) -> None:
        with _HOOKS_LOCK:
            hooks = list(_CALL_HOOKS)
        for hook in hooks:
            hook(core, model, params)

    def after_call(model: Any, http_response: Any, **_: Any) -> None:
        with _HOOKS_LOCK:
            hooks = list(_ANSWER_HOOKS)
        for hook in hooks:
            hook(model, http_response.status_code)

    core.register("before-parameter-build", before_call, unique_id="icelake-call-hooks")
    core.register("after-call", after_call, unique_id="icelake-answer-hooks")


def parse_timestamp(value: Any) -> datetime:
    """botocore's timestamp parser, with a fast path for the ISO 8601 form with a zone that S3's
    XML answers carry (every CopyObject's LastModified): dateutil's general parser spent about
    0.1 ms of a copy's CPU on it."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed
    stamp: datetime = botocore.utils.parse_timestamp(value)
    return stamp


class _Paths(list[str]):
    """A shared loader's search paths: boto3 appends its own data directory for every session it
    wraps, which would otherwise grow the list by one entry per session."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)


_LOADERS: dict[str, botocore.loaders.Loader] = {}
_LOADERS_LOCK = threading.Lock()


def shared_loader(core: botocore.session.Session) -> botocore.loaders.Loader:
    """One botocore data loader per data path for the whole process. A session's own loader reads
    and parses every service's JSON model again (about 0.4 s for S3's on a loaded two-core
    machine), which was most of a tiny table's step; the loader only caches read-only models, so
    sessions can share it."""
    data_path = core.get_config_variable("data_path") or ""
    with _LOADERS_LOCK:
        loader = _LOADERS.get(data_path)
        if loader is None:
            loader = botocore.loaders.create_loader(data_path or None)
            loader._search_paths = _Paths(loader.search_paths)  # boto3 appends to it: see _Paths
            _LOADERS[data_path] = loader
        return loader


def configured(core: botocore.session.Session) -> botocore.session.Session:
    """`core` with icelake's client config as the default of every client it creates, and the
    process's shared data loader."""
    core.register_component("data_loader", shared_loader(core))
    core.set_default_client_config(client_config())
    core.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=parse_timestamp)
    _observe(core)
    pacing.install(core)
    return core


@functools.lru_cache(maxsize=4)
def _builtin_events(specs: tuple[tuple[Any, ...], ...]) -> botocore.hooks.HierarchicalEmitter:
    """An emitter holding the built-in handlers `specs` (never changed after: each session gets a
    copy)."""
    events = botocore.hooks.HierarchicalEmitter()
    botocore.session.Session(event_hooks=events)  # registers botocore.handlers.BUILTIN_HANDLERS on it
    return events


def core_session() -> botocore.session.Session:
    """A new botocore session, as `botocore.session.Session()` makes it, but its built-in event
    handlers copied from an emitter that holds them: registering them (a few hundred, each event
    name aliased) took 12 ms a session, a copy 0.9 ms, and a step makes one for each role it
    assumes. botocore copies a session's emitter the same way for each client it creates. The
    emitter is made again when the built-in handlers change (moto's mock adds one when imported)."""
    events = copy.copy(_builtin_events(tuple(botocore.handlers.BUILTIN_HANDLERS)))
    return botocore.session.Session(event_hooks=events, include_builtin_handlers=False)


def new_session(**kwargs: Any) -> boto3.Session:
    """A boto3.Session (same keyword arguments) whose clients all use `client_config()`."""
    core = kwargs.pop("botocore_session", None) or core_session()
    return boto3.Session(botocore_session=configured(core), **kwargs)


def client(service: str, **kwargs: Any) -> Any:
    """A client of the default credential chain with icelake's config (for the orchestrator's own
    resources: artifacts bucket, ledger, state machines)."""
    return new_session().client(service, **kwargs)
