"""What moto's STS recorded: every AssumeRole it answered, with the request's session name,
external id and duration (moto runs in this process, as a server or a mock)."""

from __future__ import annotations

from typing import Any


def assumed_roles(role_arn: str, session_name: str | None = None) -> list[Any]:
    """moto's AssumedRole records for `role_arn` (optionally one session name), oldest first."""
    from moto.sts.models import sts_backends

    account = role_arn.split(":")[4]
    return [
        r
        for r in sts_backends[account]["aws"].assumed_roles
        if r.role_arn == role_arn and session_name in (None, r.session_name)
    ]
