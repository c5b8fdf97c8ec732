"""Checks of single request fields that more than one model takes: a key prefix as S3 keeps it,
a principal Lake Formation grants to, a KMS key."""

from __future__ import annotations

import re

# The principals Lake Formation grants to (DataLakePrincipalIdentifier): IAM users and roles, SAML
# users and groups, IAM Identity Center users and groups, accounts, organizations and their units,
# and IAM_ALLOWED_PRINCIPALS.
PRINCIPAL = re.compile(
    r"^(\d{12}|IAM_ALLOWED_PRINCIPALS"
    r"|arn:aws[a-z-]*:iam::\d{12}:(user|role)/[\w+=,.@/-]{1,512}"
    r"|arn:aws[a-z-]*:iam::\d{12}:saml-provider/[\w.-]{1,128}:(user|group)/[^\s]{1,256}"
    r"|arn:aws[a-z-]*:identitystore:::(user|group)/[\w-]{1,64}"
    r"|arn:aws[a-z-]*:organizations::\d{12}:(organization/o-[a-z0-9]{10,32}|ou/o-[a-z0-9]{10,32}/ou-[a-z0-9-]{8,68}))$"
)
PRINCIPAL_EXAMPLE = "arn:aws:iam::222222222222:role/analyst"
_KEY_ID = r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})"
KMS_KEY = re.compile(rf"^{_KEY_ID}$")
KMS_ARN = re.compile(rf"^arn:aws[a-z-]*:kms:([a-z0-9-]+):\d{{12}}:(key/{_KEY_ID}|alias/[\w/-]{{1,250}})$")
KMS_EXAMPLE = "arn:aws:kms:eu-west-1:222222222222:key/1234abcd-12ab-34cd-56ef-1234567890ab"
# S3 keys are at most 1,024 bytes: a target key is the prefix, the longest database and table
# names Glue keeps (255 each), their slashes, and up to 200 bytes of the table's own file paths.
MAX_PREFIX_BYTES = 1024 - 2 * 255 - 3 - 200


def check_prefix(value: str, field: str, example: str) -> str:
    """A key prefix as S3 keeps it and a path resolves it alike: no '.' or '..' segment (pyarrow and
    a file system would normalise them away), no leading '/' or empty segment (another key than the
    one meant), no control character, at most MAX_PREFIX_BYTES."""
    problem = None
    segments = value.removesuffix("/").split("/") if value else []
    if value.startswith("/"):
        problem = "starts with '/'"
    elif any(s in (".", "..") for s in segments):
        problem = "has a '.' or '..' segment"
    elif any(not s for s in segments):
        problem = "has an empty segment ('//')"
    elif any(ord(c) < 32 or c in "\\\x7f" for c in value):
        problem = "has a control character or a backslash"
    elif len(value.encode()) > MAX_PREFIX_BYTES:
        problem = (
            f"is {len(value.encode()):,} bytes, more than the {MAX_PREFIX_BYTES} a table's keys leave it"
        )
    if problem:
        raise ValueError(f"{field} {value!r} {problem}: give a relative key prefix such as {example!r}")
    return value


def check_principal(value: str, field: str) -> str:
    if not PRINCIPAL.match(value):
        raise ValueError(
            f"{field} {value!r} is not a principal Lake Formation grants to (an IAM user or role ARN, a "
            "SAML or IAM Identity Center user or group ARN, an account id, an organization or unit "
            f"ARN, or IAM_ALLOWED_PRINCIPALS), such as {PRINCIPAL_EXAMPLE!r}"
        )
    return value
