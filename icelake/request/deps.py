"""What a step needs from the outside, passed in rather than created inside: the settings its
Lambda reads from the environment, the orchestrator's own boto3 session (artifacts bucket, ledger,
events, Step Functions) and the request's source and target sessions (assumed roles). An estate's
assessment (`icelake assess --request`, the Assess step) reads its tables through the same."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import boto3
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from icelake.aws.clients import new_session
from icelake.aws.fileio import FileIO, S3FileIO
from icelake.aws.ledger import Ledger
from icelake.aws.request_count import RequestCount
from icelake.aws.session import AssumedRole
from icelake.aws.warm import kept, orchestrator_session, side_session
from icelake.constants import ENV_ARTIFACTS_BUCKET, ENV_EVENT_BUS, ENV_LEDGER_TABLE
from icelake.request.models import MigrationRequest


class WorkflowEnv(BaseSettings):
    """What every step Lambda reads from its environment (names from
    `icelake.workflow.wiring.migrate_lambda_environment`)."""

    model_config = SettingsConfigDict(frozen=True, populate_by_name=True)

    ledger_table: str = Field(validation_alias=ENV_LEDGER_TABLE)
    artifacts_bucket: str = Field(validation_alias=ENV_ARTIFACTS_BUCKET)
    event_bus: str = Field(default="default", validation_alias=ENV_EVENT_BUS)

    @classmethod
    def from_environ(cls) -> WorkflowEnv:
        return cls()  # type: ignore[call-arg]  # pydantic-settings fills the fields from os.environ


@dataclass
class Sessions:
    """The request's two sides: the source (read) and target (write) roles it names, assumed
    lazily; a side without a role uses the orchestrator's own credentials."""

    request: MigrationRequest
    orchestrator: boto3.Session = field(default_factory=new_session)
    # The S3 requests of both sides' clients (the step's own account of what it sent).
    requests: RequestCount = field(default_factory=RequestCount)
    _s3_clients: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def role(self, side: Literal["src", "dst"]) -> AssumedRole | None:
        """The source (read) or target (write) role as this request assumes it, if it names one."""
        spec = self.request.source if side == "src" else self.request.target
        if not spec.role_arn:
            return None
        return AssumedRole(
            spec.role_arn,
            external_id=spec.external_id,
            session_name=f"icelake-{side}-{self.request.run_id}",
            duration_seconds=self.request.options.session_duration_seconds,
        )

    def region(self, side: Literal["src", "dst"]) -> str | None:
        """The side's region: the request's, else the workflow's own."""
        spec = self.request.source if side == "src" else self.request.target
        return spec.region or self.orchestrator.region_name

    def _session(self, side: Literal["src", "dst"]) -> boto3.Session:
        # Kept across the steps of a process (a warm Lambda): the role is assumed once, and the
        # session renews its credentials itself.
        return side_session(self.orchestrator, self.role(side), self.region(side))

    @cached_property
    def source(self) -> boto3.Session:
        return self._session("src")

    @cached_property
    def target(self) -> boto3.Session:
        return self._session("dst")

    def source_io(self) -> FileIO:
        """S3 as the source role, each bucket's requests sent to that bucket's region."""
        return self._counted(S3FileIO(self._s3("src"), regions=self.source))

    def target_io(self) -> FileIO:
        """S3 as the target role, each bucket's requests (copies too) sent to its region. An S3
        Tables target's storage is in the table bucket's region (the target's), and answers no
        GetBucketLocation: every request goes to that region's client."""
        if self.request.target.kind == "s3tables":
            return self._counted(S3FileIO(self._s3("dst")))
        return self._counted(S3FileIO(self._s3("dst"), self.request.target.kms_key_id, regions=self.target))

    def _s3(self, side: Literal["src", "dst"]) -> Any:
        """The side's S3 client, one for all of this step's IOs (a step asks for them several
        times, and a client takes longer to make than a tiny table's requests), counted once."""
        with self._lock:
            if side not in self._s3_clients:
                session = self.source if side == "src" else self.target
                self._s3_clients[side] = self.requests.attach(session.client("s3"))
            return self._s3_clients[side]

    def _counted(self, io: S3FileIO) -> S3FileIO:
        io.on_new_client = self.requests.attach  # its clients for buckets in other regions
        return io


@dataclass
class Artifacts:
    """The run's files in the artifacts bucket (worklist, journals, copy results, reports), read
    and written with the orchestrator's credentials."""

    bucket: str
    io: FileIO

    @staticmethod
    def key(run_id: str, table: str, name: str) -> str:
        return f"runs/{run_id}/{table}/{name}"

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def put_json(self, key: str, value: Any) -> None:
        self.io.write(self.uri(key), json.dumps(value).encode())

    def read_json(self, key: str, bucket: str | None = None) -> Any:
        return json.loads(self.io.read(f"s3://{bucket or self.bucket}/{key}"))


@dataclass
class Deps:
    """Everything a step touches besides its input. Lambdas build it from their environment;
    tests build it around moto's sessions."""

    env: WorkflowEnv
    orchestrator: boto3.Session = field(default_factory=new_session)

    @classmethod
    def from_environ(cls) -> Deps:
        """The step Lambdas' dependencies, kept between invocations of a warm container while its
        environment stays the same: the orchestrator's session and its ledger and artifacts clients
        are made once, as real Lambdas make them at module level."""
        env = WorkflowEnv.from_environ()
        return kept(("deps", env), lambda: cls(env, orchestrator_session()))

    def sessions(self, request: MigrationRequest) -> Sessions:
        return Sessions(request, self.orchestrator)

    @cached_property
    def ledger(self) -> Ledger:
        return Ledger(self.orchestrator.client("dynamodb"), self.env.ledger_table)

    @cached_property
    def artifacts(self) -> Artifacts:
        return Artifacts(self.env.artifacts_bucket, S3FileIO(self.orchestrator.client("s3")))

    def client(self, service: str) -> Any:
        """A client of the orchestrator's own credentials (events, Step Functions)."""
        return self.orchestrator.client(service)
