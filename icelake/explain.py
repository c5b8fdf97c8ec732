"""One line for failures that are not icelake's own: the file system, AWS, the network.

icelake's own errors (`IcelakeError`) already say what to do. Everything else that a user can
meet in practice is mapped here to a sentence that names the path or object and the next step;
`explain` returns None for anything else, which the CLI then reports as unexpected.
"""

from __future__ import annotations

import errno
import os

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from icelake.errors import IcelakeError

RESUME = "a re-run resumes where this one stopped"

# errno -> what to say about {path}
_OS_ERRORS: dict[int, str] = {
    errno.ENOTDIR: "{path}: a file stands where icelake needs a directory; choose a target location "
    "that is a directory or does not exist yet",
    errno.EEXIST: "{path}: a file stands where icelake needs a directory; choose a target location "
    "that is a directory or does not exist yet",
    errno.EISDIR: "{path} is a directory; pass a file (the table's current *.metadata.json)",
    errno.EACCES: "permission denied on {path}; choose a location you may write (or read, for the "
    "source), or fix its permissions",
    errno.EROFS: "{path} is on a read-only file system; choose a writable target location",
    errno.ENOSPC: "no space left on the device holding {path}; free space or choose another target "
    f"location; {RESUME}",
    errno.ENAMETOOLONG: "{path}: the path is too long for this file system; choose a shorter location",
}
_OS_ERRORS[errno.EPERM] = _OS_ERRORS[errno.EACCES]
_OS_ERRORS[errno.EDQUOT] = _OS_ERRORS[errno.ENOSPC]

# S3/Glue/STS/KMS error code -> what to say ({op} is the API operation, {on} the object)
_ACCESS_DENIED = (
    "access denied: {op}{on}; give the role icelake uses that permission (see the source and target "
    "stacks), or pass --source-role/--target-role"
)
_AWS_CODES: dict[str, str] = {
    **dict.fromkeys(("AccessDenied", "403", "Forbidden", "AllAccessDisabled"), _ACCESS_DENIED),
    **dict.fromkeys(("AccessDeniedException", "KMS.AccessDeniedException"), _ACCESS_DENIED),
    "NoSuchBucket": "the bucket does not exist{on}; check the bucket name, account and region",
    **dict.fromkeys(
        ("ExpiredToken", "ExpiredTokenException", "RequestExpired"),
        "the AWS credentials have expired{on}; renew them (e.g. `aws sso login`) and re-run",
    ),
    **dict.fromkeys(
        ("InvalidAccessKeyId", "SignatureDoesNotMatch", "UnrecognizedClientException"),
        "AWS did not accept the credentials{on}; check AWS_PROFILE or the access keys",
    ),
}
_NO_CREDENTIALS = (
    "no AWS credentials found{on}; set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), "
    "or run `aws sso login`"
)
_UNREACHABLE = (
    "cannot reach {url}{on} after retries; check the network, a proxy or AWS_ENDPOINT_URL "
    f"(ICELAKE_AWS_MAX_ATTEMPTS sets the attempts); {RESUME}"
)


def about(exc: BaseException, uri: str) -> None:
    """Remember which object a low-level failure was about (shown by `explain`)."""
    if uri not in getattr(exc, "__notes__", ()):
        exc.add_note(uri)


def _subject(exc: BaseException) -> str:
    notes = getattr(exc, "__notes__", None)
    return f" ({notes[0]})" if notes else ""


def explain(exc: BaseException) -> str | None:
    """One line that names what failed and what to do, or None when icelake cannot tell."""
    if isinstance(exc, IcelakeError):
        return str(exc)
    if isinstance(exc, BotoCoreError | ClientError):
        return _aws_error(exc)
    if isinstance(exc, OSError):
        # A failed copy names the source first and the file it was writing second.
        written = exc.filename2 if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS) else None
        path = written or exc.filename or _subject(exc).strip(" ()") or "a path"
        if os.path.basename(path).startswith(".icelake-"):  # a temp file: its directory says more
            path = os.path.dirname(path)
        template = _OS_ERRORS.get(exc.errno or 0)
        if exc.errno == errno.EEXIST and not os.path.isfile(path):
            return None
        return template.format(path=path) if template else None
    return None


def _aws_error(exc: BotoCoreError | ClientError) -> str | None:
    on = _subject(exc)
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code, message = str(error.get("Code", "")), str(error.get("Message", ""))
        template = _AWS_CODES.get(code, "AWS refused {op}{on}: {code}: {message}")
        return template.format(op=exc.operation_name, on=on, code=code, message=message)
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return _NO_CREDENTIALS.format(on=on)
    if isinstance(exc, NoRegionError):
        return f"no AWS region is set{on}; set AWS_REGION or AWS_DEFAULT_REGION"
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError | ReadTimeoutError):
        return _UNREACHABLE.format(url=exc.kwargs.get("endpoint_url", "the AWS endpoint"), on=on)
    return None
