"""boto3 sessions, optionally in another account through STS AssumeRole.

An assumed role's session refreshes its own credentials (botocore `RefreshableCredentials` calling
AssumeRole again before they expire), so a copy that runs longer than one STS session never
fails half-way on expired credentials.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.credentials import CredentialProvider, CredentialResolver, RefreshableCredentials

from icelake.aws.clients import ROLE_ATTR, core_session, new_session
from icelake.errors import IcelakeError, SessionDurationError

MIN_SESSION_SECONDS = 900  # STS's minimum DurationSeconds
# icelake assumes the source and target roles from credentials that are themselves a role session
# (a Lambda's or Glue job's role, an SSO login): that is role chaining, which AWS caps at one hour
# whatever the role's MaxSessionDuration, and AssumeRole fails for anything longer. Sessions renew
# themselves before they expire, so a long copy never needs more.
MAX_SESSION_SECONDS = 3_600
DEFAULT_SESSION_SECONDS = 3_600


def check_session_duration(seconds: int, option: str = "session_duration_seconds") -> int:
    """`seconds` if STS accepts it as DurationSeconds for the icelake roles, else a clear error."""
    if not MIN_SESSION_SECONDS <= seconds <= MAX_SESSION_SECONDS:
        raise SessionDurationError(
            f"{option} must be between {MIN_SESSION_SECONDS} and {MAX_SESSION_SECONDS} seconds, got "
            f"{seconds}: icelake assumes its roles from a role session (Lambda, Glue, SSO), and AWS caps "
            "such chained sessions at one hour; sessions renew themselves, so long copies need no more"
        )
    return seconds


def refresh_windows(duration_seconds: int) -> tuple[int, int]:
    """(advisory, mandatory) seconds before expiry at which credentials are refreshed.

    botocore's defaults (15 and 10 minutes) would call AssumeRole before every request when a
    session lasts 15 minutes; scaled down, a short session is still used for most of its life.
    """
    return min(15 * 60, duration_seconds // 4), min(10 * 60, duration_seconds // 6)


class _Fixed(CredentialProvider):  # type: ignore[misc]  # botocore is untyped
    METHOD = "icelake-assume-role"

    def __init__(self, credentials: RefreshableCredentials) -> None:
        super().__init__()
        self.credentials = credentials

    def load(self) -> RefreshableCredentials:
        return self.credentials


def assume_role_session(
    role_arn: str | None,
    *,
    session_name: str = "icelake",
    external_id: str | None = None,
    duration_seconds: int = DEFAULT_SESSION_SECONDS,
    base: boto3.Session | None = None,
    endpoint_url: str | None = None,
) -> boto3.Session:
    """A session acting as `role_arn`, or the base/default session when no role is given.

    The role is assumed at once (a trust problem fails here, not at the first request), then again
    whenever the credentials come near their expiry, with the same session name and external id.
    `endpoint_url` is STS's (default: AWS_ENDPOINT_URL or the real service).
    """
    check_session_duration(duration_seconds)
    base = base or new_session()
    if not role_arn:
        return base
    kwargs: dict[str, Any] = {
        "RoleArn": role_arn,
        "RoleSessionName": session_name[:64],
        "DurationSeconds": duration_seconds,
    }
    if external_id:
        kwargs["ExternalId"] = external_id
    sts = base.client("sts", endpoint_url=endpoint_url)

    def fetch() -> dict[str, str]:
        try:
            creds = sts.assume_role(**kwargs)["Credentials"]
        except Exception as exc:  # botocore raises many types; all mean the same to the user
            raise IcelakeError(
                f"cannot assume role {role_arn}: {exc}; check the role's trust policy, its maximum "
                "session duration and your credentials"
            ) from exc
        return {
            "access_key": creds["AccessKeyId"],
            "secret_key": creds["SecretAccessKey"],
            "token": creds["SessionToken"],
            "expiry_time": creds["Expiration"].isoformat(),
        }

    advisory, mandatory = refresh_windows(duration_seconds)
    credentials = RefreshableCredentials.create_from_metadata(
        metadata=fetch(),
        refresh_using=fetch,
        method=_Fixed.METHOD,
        advisory_timeout=advisory,
        mandatory_timeout=mandatory,
    )
    core = core_session()
    core.register_component("credential_provider", CredentialResolver([_Fixed(credentials)]))
    setattr(core, ROLE_ATTR, role_arn)  # who signs this session's calls (read by call hooks)
    return new_session(botocore_session=core, region_name=base.region_name)


@dataclass(frozen=True)
class AssumedRole:
    """A role to act as and how to assume it: all a process (a Lambda, the Glue driver, a Spark
    executor) needs to assume it itself and to assume it again when the credentials near expiry.
    Plain data, so it pickles."""

    role_arn: str
    external_id: str | None = field(default=None, repr=False)
    session_name: str = "icelake"
    duration_seconds: int = DEFAULT_SESSION_SECONDS

    def __post_init__(self) -> None:
        check_session_duration(self.duration_seconds)

    def session(self, base: boto3.Session | None = None, endpoint_url: str | None = None) -> boto3.Session:
        return assume_role_session(
            self.role_arn,
            session_name=self.session_name,
            external_id=self.external_id,
            duration_seconds=self.duration_seconds,
            base=base,
            endpoint_url=endpoint_url,
        )


def pyiceberg_props(session: boto3.Session) -> dict[str, str]:
    """pyiceberg FileIO properties that sign as `session` (its current credentials; with
    AWS_ENDPOINT_URL set, that endpoint, as for every client icelake makes)."""
    creds = session.get_credentials().get_frozen_credentials()
    props = {
        "s3.access-key-id": creds.access_key,
        "s3.secret-access-key": creds.secret_key,
        "s3.region": session.region_name or "us-east-1",
    }
    if creds.token:
        props["s3.session-token"] = creds.token
    if os.environ.get("AWS_ENDPOINT_URL"):
        props["s3.endpoint"] = os.environ["AWS_ENDPOINT_URL"]
    return props
