"""What a process keeps between the steps it runs, as a warm Lambda container keeps its
module-level state between invocations.

A tiny table's step used to spend most of its time making sessions: the orchestrator's, then the
source and target roles' (an STS AssumeRole each), on every invocation. A kept session is as good
as a new one: an assumed role's credentials renew themselves before they expire
(`RefreshableCredentials`, icelake.aws.session), and a session made under other credentials, another
endpoint or another region (the AWS_* environment) is never handed out for this one. A kept
session keeps its clients too (botocore clients are thread-safe), except S3's: each step counts its
own S3 requests on the S3 clients it makes.

The embedded AWS forgets everything kept when it starts or stops (`forget`): its accounts, roles
and credentials start empty each time, as new containers would meet them.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import boto3

from icelake.aws.clients import new_session
from icelake.aws.session import AssumedRole

T = TypeVar("T")
_ENV_PREFIXES = ("AWS_", "ICELAKE_AWS_")
_MAX_KEPT = 16  # entries kept at once; a process rarely sees more than a few environments or sides

_lock = threading.RLock()  # `kept` makers may take what is kept themselves
_kept: dict[Hashable, Any] = {}
_sides: weakref.WeakKeyDictionary[boto3.Session, dict[tuple[AssumedRole | None, str | None], boto3.Session]]
_sides = weakref.WeakKeyDictionary()


def environment_key() -> tuple[tuple[str, str], ...]:
    """What of the environment shapes a session: credentials, endpoint, region, profile, retries
    (in a Lambda, also the function's name: one container per function)."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)))


def kept(key: Hashable, make: Callable[[], T]) -> T:
    """What `make` made the first time it was asked for under `key` (and this environment)."""
    full = (key, environment_key())
    with _lock:
        if full not in _kept:
            if len(_kept) >= _MAX_KEPT:
                _kept.clear()
            _kept[full] = make()
        value: T = _kept[full]
        return value


def keeping_clients(session: boto3.Session) -> boto3.Session:
    """`session`, its clients kept: one per service and region, made on first use (S3's, and any
    asked for with more than a region, are made each time)."""
    make = session.client
    clients: dict[tuple[str, str | None], Any] = {}
    lock = threading.Lock()

    def client(service_name: str, region_name: str | None = None, **more: Any) -> Any:
        if service_name == "s3" or more:
            return make(service_name, region_name=region_name, **more)
        with lock:
            key = (service_name, region_name)
            if key not in clients:
                clients[key] = make(service_name, region_name=region_name)
            return clients[key]

    session.client = client  # this session only: warm made it
    return session


def orchestrator_session() -> boto3.Session:
    """The default credential chain's session, made once per environment."""
    return kept("orchestrator", lambda: keeping_clients(new_session()))


def side_session(base: boto3.Session, role: AssumedRole | None, region: str | None) -> boto3.Session:
    """`base`'s credentials in `region`, acting as `role` when one is given: made (and the role
    assumed) once per base session, role and region."""
    with _lock:
        sides = _sides.setdefault(base, {})
        session = sides.get((role, region))
        if session is None:
            if len(sides) >= _MAX_KEPT:
                sides.clear()
            same = base if region == base.region_name else keeping_clients(new_session(region_name=region))
            session = sides[(role, region)] = keeping_clients(role.session(same)) if role else same
        return session


def forget() -> None:
    """Drop everything kept (the embedded AWS starts or stops: its credentials mean nothing now)."""
    with _lock:
        _kept.clear()
        _sides.clear()
