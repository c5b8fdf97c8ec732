"""The sessions and clients an estate's assessment reads with, made once per account and region and
lent to one table at a time (`icelake assess --request` assesses tables side by side).

Making them is most of a small table's assessment: every boto3 session loads botocore's service
models again (tens of milliseconds of JSON each), and every assumed role is an STS call. So each
side's role is assumed once, the Glue and S3 Tables clients are shared (botocore clients are
thread-safe), and a table borrows one S3 client per side for as long as it is assessed: each table
counts its own S3 requests on the clients it holds (icelake/assess/gather/assessment.py attaches and
detaches its count), so an S3 client serves one table at a time, and at most as many exist as
tables run at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, cast

import boto3

from icelake.aws.fileio import FileIO, S3FileIO
from icelake.request.deps import Deps, Sessions
from icelake.request.models import MigrationRequest

Side = Literal["src", "dst"]


class _Serialized:
    """A shared session whose clients are made one at a time (boto3 sessions are not thread-safe);
    S3FileIO asks it for a client of another region than its own."""

    def __init__(self, session: boto3.Session, lock: threading.Lock) -> None:
        self._session, self._lock = session, lock
        self.region_name = session.region_name

    def client(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._session.client(*args, **kwargs)


@dataclass(frozen=True)
class Lent:
    """What one table is read with while it is assessed: fresh IOs (their per-table state: the
    buckets' regions, the objects observed) around the S3 clients it holds, and the shared target
    Glue client."""

    source_io: FileIO
    target_io: FileIO
    target_glue: Any
    findings_io: FileIO  # the target read for what the Plan step checks, apart from what is counted
    target_tables: Any = None  # the target's S3 Tables client (target.kind s3tables)


class EstateClients:
    """Sessions and clients per account and region, shared by the tables of an assessment."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self._lock = threading.Lock()
        self._sessions: dict[str, Sessions] = {}
        self._idle: dict[tuple[str, Side], list[Any]] = {}
        self._glue: dict[str, Any] = {}
        self._tables: dict[str, Any] = {}
        _ = deps.ledger  # made here, on the caller's thread (a cached property of Deps)

    def _key(self, request: MigrationRequest) -> str:
        # The two sides as the request names them (accounts, roles, regions): every table of one
        # request shares them, whatever else differs between its work items.
        return request.source.model_dump_json() + request.target.model_dump_json()

    def sessions(self, request: MigrationRequest) -> Sessions:
        key = self._key(request)
        with self._lock:
            if key not in self._sessions:
                sessions = self.deps.sessions(request)
                _ = sessions.source, sessions.target  # each role assumed once, here
                self._sessions[key] = sessions
                self._glue[key] = sessions.target.client("glue")
                if request.target.kind == "s3tables":
                    self._tables[key] = sessions.target.client("s3tables")
            return self._sessions[key]

    def _take(self, key: str, side: Side, session: boto3.Session) -> Any:
        with self._lock:
            idle = self._idle.setdefault((key, side), [])
            return idle.pop() if idle else session.client("s3")

    def _give_back(self, key: str, side: Side, client: Any) -> None:
        with self._lock:
            self._idle[(key, side)].append(client)

    @contextmanager
    def lent(self, request: MigrationRequest) -> Iterator[Lent]:
        """One table's IOs and clients, given back when it is done."""
        sessions = self.sessions(request)
        key = self._key(request)
        src = self._take(key, "src", sessions.source)
        dst = self._take(key, "dst", sessions.target)
        regions = (
            cast(boto3.Session, _Serialized(sessions.source, self._lock)),
            cast(boto3.Session, _Serialized(sessions.target, self._lock)),
        )
        try:
            yield Lent(
                source_io=S3FileIO(src, regions=regions[0]),
                target_io=S3FileIO(dst, request.target.kms_key_id, regions=regions[1]),
                target_glue=self._glue[key],
                findings_io=S3FileIO(dst, request.target.kms_key_id, regions=regions[1]),
                target_tables=self._tables.get(key),
            )
        finally:
            self._give_back(key, "src", src)
            self._give_back(key, "dst", dst)
