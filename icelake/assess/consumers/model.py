"""rewire.json's schema (docs/assessment.md "rewire.json"): every place a consumer names a
selected table or its location, what it becomes on the target, and every consumer that could not
be read, with the permission it lacked."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1

ConsumerKind = Literal[
    "glue_job",
    "glue_crawler",
    "athena_named_query",
    "athena_prepared_statement",
    "state_machine",
    "lambda_function",
    "code_file",
]
KINDS: tuple[ConsumerKind, ...] = ConsumerKind.__args__  # type: ignore[attr-defined]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Consumer(_Frozen):
    """What reads: its kind, its name (a code file's URI), its ARN where AWS gives it one (Athena's
    named queries and prepared statements have none: their workgroup and id say which)."""

    kind: ConsumerKind
    name: str
    arn: str | None = None
    workgroup: str | None = None
    id: str | None = None  # a named query's NamedQueryId


class Reference(_Frozen):
    consumer: Consumer
    where: str  # "argument --input", "script line 12", "state ReadOrders (Parameters.QueryString)", ...
    line: int | None = None  # in a script, DAG, query or statement
    written: str  # as the consumer writes it
    refers_to: Literal["table", "location", "prefix"]
    tables: list[str]  # the selected source tables it names
    becomes: str | None  # the target name or location; None: the tables go to different prefixes
    note: str = ""


class Unread(_Frozen):
    """A consumer (or a whole listing: name "*") icelake could not read: nothing is skipped
    silently. `permission` is the action (and resource) it lacks, on AccessDenied."""

    consumer: Consumer
    what: str
    error: str
    permission: str | None = None
    message: str = ""


class KindCount(_Frozen):
    read: int = 0  # consumers of the kind read
    referencing: int = 0  # of them, those that name a selected table
    references: int = 0
    unread: int = 0


class Rewire(_Frozen):
    """rewire.json: what must change at cutover; icelake changes none of it."""

    schema_version: int = SCHEMA_VERSION
    generated_at: str
    source_account: str
    region: str | None
    tables: int  # the selected tables whose references were looked for
    code_prefixes: list[str] = []
    by_kind: dict[str, KindCount] = {}
    references: list[Reference] = []
    unread: list[Unread] = []
