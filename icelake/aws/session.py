"""boto3 sessions, optionally in another account through STS AssumeRole."""

from __future__ import annotations

import boto3

from icelake.errors import IcelakeError


def assume_role_session(
    role_arn: str | None,
    *,
    session_name: str = "icelake",
    external_id: str | None = None,
    base: boto3.Session | None = None,
) -> boto3.Session:
    """A session acting as `role_arn`, or the base/default session when no role is given."""
    base = base or boto3.Session()
    if not role_arn:
        return base
    kwargs: dict[str, str] = {"RoleArn": role_arn, "RoleSessionName": session_name[:64]}
    if external_id:
        kwargs["ExternalId"] = external_id
    try:
        creds = base.client("sts").assume_role(**kwargs)["Credentials"]
    except Exception as exc:  # botocore raises many types; all mean the same to the user
        raise IcelakeError(
            f"cannot assume role {role_arn}: {exc}; check the role's trust policy and your credentials"
        ) from exc
    return boto3.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
        region_name=base.region_name,
    )
