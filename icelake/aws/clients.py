"""Every boto3 session (and so every client) icelake creates: adaptive retries and bounded waits.

botocore's defaults (legacy mode, 3 attempts) turn a few percent of S3 `503 SlowDown` answers into
failed runs; adaptive mode backs off and rate-limits the client instead. A call that hangs is cut
by the read timeout and retried, so no step waits forever on one request.
"""

from __future__ import annotations

import os
from typing import Any

import boto3
import botocore.session
from botocore.config import Config

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
        retries={"mode": "adaptive", "total_max_attempts": max_attempts()},
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
        max_pool_connections=MAX_POOL_CONNECTIONS,
    )


def configured(core: botocore.session.Session) -> botocore.session.Session:
    """`core` with icelake's client config as the default of every client it creates."""
    core.set_default_client_config(client_config())
    return core


def new_session(**kwargs: Any) -> boto3.Session:
    """A boto3.Session (same keyword arguments) whose clients all use `client_config()`."""
    core = kwargs.pop("botocore_session", None) or botocore.session.get_session()
    return boto3.Session(botocore_session=configured(core), **kwargs)


def client(service: str, **kwargs: Any) -> Any:
    """A client of the default credential chain with icelake's config (for the orchestrator's own
    resources: artifacts bucket, ledger, state machines)."""
    return new_session().client(service, **kwargs)
