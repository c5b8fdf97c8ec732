"""What every reader of consumers shares: the source session's clients, the selected tables, and
one place to put what was found, what was read and what could not be (AccessDenied with the
permission it lacks, any other refusal with its code); threads add to it under one lock."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from botocore.config import Config
from botocore.exceptions import ClientError

from icelake.assess.consumers.model import Consumer, Reference, Unread
from icelake.assess.consumers.refs import Lines, Selected

T = TypeVar("T")
DENIED = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "Forbidden", "403"})
# botocore's standard retries: a throttled listing is retried, not reported unread.
_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=16)


class Listing(NamedTuple):
    """A listing call: what it lists (for an unread entry), the permission it needs, and where the
    items are (service, operation, the pages' key)."""

    what: str
    permission: str
    service: str
    operation: str
    key: str


@dataclass
class ScanContext:
    session: Any  # boto3.Session of the source's read role
    account: str
    region: str
    selected: Selected
    workers: int = 8
    references: list[Reference] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    read: Counter[str] = field(default_factory=Counter)  # consumers read, by kind
    _clients: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, service: str) -> Any:
        with self._lock:
            if service not in self._clients:
                self._clients[service] = self.session.client(service, config=_CONFIG)
            return self._clients[service]

    def arn(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{self.account}:{resource}"

    def counted(self, consumer: Consumer) -> None:
        with self._lock:
            self.read[consumer.kind] += 1

    def scan(self, consumer: Consumer, where: str, text: str, *, lines: bool = False) -> None:
        """The references in one text of a consumer; with `lines`, each placed at its line."""
        numbers = Lines(text) if lines else None
        found = []
        for f in self.selected.find(text):
            line = numbers.of(f.start) if numbers else None
            found.append(
                Reference(
                    consumer=consumer,
                    where=f"{where} line {line}" if line else where,
                    line=line,
                    written=f.written,
                    refers_to=f.refers_to,
                    tables=list(f.tables),
                    becomes=f.becomes,
                    note="" if f.becomes is not None else _SPLIT,
                )
            )
        if found:
            with self._lock:
                self.references.extend(found)

    def catalog_table(self, consumer: Consumer, where: str, database: str, table: str) -> None:
        """A table named by its parts (a crawler's catalog target, a Glue Studio node)."""
        self.scan(consumer, where, f"{database}.{table}")

    def attempt(self, consumer: Consumer, what: str, permission: str, call: Callable[[], T]) -> T | None:
        """`call()`, or None with the consumer listed unread: AccessDenied names `permission`,
        any other refusal its code and message."""
        try:
            return call()
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode"))
            denied = code in DENIED
            entry = Unread(
                consumer=consumer,
                what=what,
                error="AccessDenied" if denied else code,
                permission=permission if denied else None,
                message=str(error.get("Message") or exc),
            )
            self.not_read(entry)
            return None

    def listed(self, consumer: Consumer, listing: Listing, **kwargs: Any) -> list[Any]:
        """The items of every page of `listing` (records, or ids), or none with `consumer` listed
        unread as `attempt` says."""
        client = self.client(listing.service)
        pages = self.attempt(
            consumer, listing.what, listing.permission, lambda: all_pages(client, listing.operation, **kwargs)
        )
        return [item for page in pages or [] for item in page.get(listing.key, [])]

    def not_read(self, entry: Unread) -> None:
        with self._lock:
            self.unread.append(entry)

    def each(self, items: list[T], work: Callable[[T], None]) -> None:
        """`work` on every item, `workers` at a time (each item a request or a few)."""
        if len(items) <= 1:
            for item in items:
                work(item)
            return
        with ThreadPoolExecutor(min(self.workers, len(items)), "icelake-consumers") as pool:
            for done in [pool.submit(work, item) for item in items]:
                done.result()


_SPLIT = "the prefix holds selected tables that go to different target prefixes: rewire each table's path"


def all_pages(client: Any, operation: str, **kwargs: Any) -> list[dict[str, Any]]:
    """Every page of a listing: by botocore's paginator, or by NextToken where botocore has none
    (Athena's ListWorkGroups and ListPreparedStatements)."""
    if client.can_paginate(operation):
        return list(client.get_paginator(operation).paginate(**kwargs))
    call, found, token = getattr(client, operation), [], None
    while True:
        page = call(**kwargs, **({"NextToken": token} if token else {}))
        found.append(page)
        token = page.get("NextToken")
        if not token:
            return found


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, text) of every string in a JSON value, its path as `A.B[0].C`."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}[{i}]")
