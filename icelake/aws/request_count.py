"""S3 requests counted by kind on the clients a run (or an assessment) makes, as S3 bills them.

Each HTTP attempt is one request (botocore's `before-send` event fires once per attempt, so a
retried request counts again, as it is billed again). The kinds are those an estimate predicts and
the price table prices (`icelake.assess.estimate.prices.REQUEST_KINDS`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

REQUEST_KINDS: tuple[str, ...] = ("copy", "list", "head", "get", "put", "delete")

# S3 operation -> kind. Anything unnamed here is billed with GET ("all other requests").
_KIND_OF: dict[str, str] = {
    "CopyObject": "copy",
    "UploadPartCopy": "copy",
    "ListObjectsV2": "list",
    "ListObjects": "list",
    "ListObjectVersions": "list",
    "ListMultipartUploads": "list",
    "ListParts": "list",
    "HeadObject": "head",
    "HeadBucket": "head",
    "PutObject": "put",
    "CreateMultipartUpload": "put",
    "CompleteMultipartUpload": "put",
    "UploadPart": "put",
    "DeleteObject": "delete",
    "DeleteObjects": "delete",
    "AbortMultipartUpload": "delete",
}


def kind_of(operation: str) -> str:
    return _KIND_OF.get(operation, "get")


def zero() -> dict[str, int]:
    return dict.fromkeys(REQUEST_KINDS, 0)


def added(*counts: Mapping[str, int]) -> dict[str, int]:
    """The sum of request counts, with every kind present."""
    total = zero()
    for count in counts:
        for kind, n in count.items():
            total[kind] = total.get(kind, 0) + n
    return total


def subtracted(after: Mapping[str, int], before: Mapping[str, int]) -> dict[str, int]:
    """The requests counted between two readings of a count."""
    return {kind: after.get(kind, 0) - before.get(kind, 0) for kind in REQUEST_KINDS}


class RequestCount:
    """Counts the S3 requests of every client it is attached to (thread-safe: a plan and a copy
    send from many threads)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def attach(self, client: Any) -> Any:
        """Count `client`'s S3 requests from now on; returns the client."""
        client.meta.events.register("before-send.s3", self._sent)
        return client

    def attach_io(self, io: Any) -> None:
        """Count every S3 request of an `S3FileIO`, its other regions' clients too."""
        self.attach(io.client)
        io.on_new_client = self.attach

    def detach_io(self, io: Any) -> None:
        """Stop counting an `S3FileIO`'s requests: its clients outlive it when they are lent to one
        table after another (an estate's assessment), and each table counts only its own."""
        for client in io.clients():
            client.meta.events.unregister("before-send.s3", self._sent)
        io.on_new_client = None

    def _sent(self, event_name: str = "", **_: Any) -> None:
        kind = kind_of(event_name.rsplit(".", 1)[-1])
        with self._lock:
            self._counts[kind] += 1

    def counts(self) -> dict[str, int]:
        with self._lock:
            return added(self._counts)

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())
