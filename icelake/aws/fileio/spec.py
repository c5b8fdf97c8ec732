"""Which FileIO a URI gets (`io_for`), and how another process opens the same one
(`FileIOSpec`: it pickles where a boto3 client does not, and each process builds its FileIO once,
assuming the role itself when it has one)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

import boto3

from icelake.aws.clients import new_session
from icelake.aws.fileio.base import FileIO
from icelake.aws.fileio.local import LocalFileIO
from icelake.aws.fileio.s3 import S3FileIO
from icelake.aws.request_count import RequestCount
from icelake.aws.session import AssumedRole
from icelake.uris import canonical, is_local


def io_for(uri: str, session: boto3.Session | None = None, kms_key_id: str | None = None) -> FileIO:
    """The FileIO for a URI's scheme; S3 clients honour AWS_ENDPOINT_URL (moto locally)."""
    if is_local(uri):
        return LocalFileIO()
    if canonical(uri).startswith("s3://"):
        session = session or new_session()
        return S3FileIO(session.client("s3"), kms_key_id=kms_key_id)
    raise ValueError(f"unsupported URI scheme in {uri}: use s3://, file:// or a local path")


@dataclass(frozen=True)
class FileIOSpec:
    """How to open the same FileIO in another process (a Spark executor): unlike a boto3 client,
    this pickles. `open()` builds the FileIO once per process and spec and reuses it.

    With `role`, the process that opens the spec assumes the role itself and assumes it again
    before the credentials expire, so a task that runs for hours never holds expired ones; it
    assumes it with its own credentials (in Glue, the job's role, which the roles' trust policies
    name). `credentials` (boto3.Session keyword arguments) are what the process starts from: None
    for its default credential chain; without a role, the temporary credentials of a role the
    driver assumed; with a role, the driver's own credentials, carried only when it talks to an
    endpoint override (an emulator: executors need not share the driver's environment, which is
    also why the endpoint is carried).
    """

    scheme: str  # "s3" or "file"
    credentials: dict[str, str] | None = field(default=None, repr=False, hash=False)
    kms_key_id: str | None = None
    endpoint_url: str | None = None
    region: str | None = None
    role: AssumedRole | None = None
    regional: bool = False  # each bucket's requests to its own region (S3FileIO's `regions`)

    @classmethod
    def for_uri(
        cls,
        uri: str,
        session: boto3.Session | None = None,
        kms_key_id: str | None = None,
        *,
        role: AssumedRole | None = None,
        regional: bool = False,
    ) -> FileIOSpec:
        """The spec for a URI's scheme. Pass `role` to have each process assume it, or `session`
        only when it is an assumed role's (its current credentials are shipped, and expire)."""
        if is_local(uri):
            return cls("file")
        if not canonical(uri).startswith("s3://"):
            raise ValueError(f"unsupported URI scheme in {uri}: use s3://, file:// or a local path")
        if role is not None and session is not None:
            raise ValueError("pass either an assumed role's session or a role to assume, not both")
        endpoint_url = os.environ.get("AWS_ENDPOINT_URL") or None
        credentials = None
        if session is not None:
            credentials = _session_kwargs(session)
        elif role is not None and endpoint_url:
            credentials = _session_kwargs(new_session())
        return cls(
            "s3",
            credentials=credentials,
            kms_key_id=kms_key_id,
            endpoint_url=endpoint_url,
            region=(session or new_session()).region_name,
            role=role,
            regional=regional,
        )

    def open(self) -> FileIO:
        with _OPENED_LOCK:
            io = _OPENED.get(self)
            if io is None:
                io = _OPENED[self] = self._build()
            return io

    def session(self) -> boto3.Session:
        """The boto3 session this spec's S3 FileIO signs with (the role's, when it has one)."""
        session = new_session(**(self.credentials or {}), region_name=self.region)
        return self.role.session(session, self.endpoint_url) if self.role is not None else session

    def _build(self) -> FileIO:
        if self.scheme == "file":
            return LocalFileIO()
        if self.scheme != "s3":
            raise ValueError(f"unsupported FileIO scheme {self.scheme!r}: use s3 or file")
        session = self.session()
        client = session.client("s3", endpoint_url=self.endpoint_url)
        io = S3FileIO(client, kms_key_id=self.kms_key_id, regions=session if self.regional else None)
        OPENED_REQUESTS.attach_io(io)
        return io


def _session_kwargs(session: boto3.Session) -> dict[str, str] | None:
    """The session's current credentials as boto3.Session keyword arguments (None if it has none)."""
    credentials = session.get_credentials()
    if credentials is None:
        return None
    frozen = credentials.get_frozen_credentials()
    kwargs = {"aws_access_key_id": frozen.access_key, "aws_secret_access_key": frozen.secret_key}
    if frozen.token:
        kwargs["aws_session_token"] = frozen.token
    return kwargs


_OPENED: dict[FileIOSpec, FileIO] = {}
_OPENED_LOCK = threading.Lock()
# The S3 requests of every FileIO the specs open in this process: a Spark task adds what its slice
# sent to its job's count (icelake.migrate.copy.distributed), as a Lambda's sessions count their own.
OPENED_REQUESTS = RequestCount()
