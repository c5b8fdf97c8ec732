"""What a work item's target is and must not hold, as the Plan step checks it and an assessment
reports it: the owner mark icelake puts on the target table, the prefix maps the request gives
its files, a commit someone else made to the target since icelake last registered it, and the
target's FileIO (`target_io`: an S3 Tables table not created yet holds nothing)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.request.deps import Sessions
from icelake.request.models import WorkItem
from icelake.request.names import PENDING_SCHEME
from icelake.request.s3tables import parse_table_bucket_arn


def owner_of(item: WorkItem) -> str:
    """The owner mark icelake puts on the target table: which source table it mirrors."""
    return f"{item.request.source.account_id}:{item.source_database}.{item.source_table}"


def athena_name(item: WorkItem) -> str | None:
    """An S3 Tables target as an analyst types it in Athena (the s3tablescatalog federated
    catalog); None for a Glue target, which Athena reads by its database and table."""
    arn = item.request.target.table_bucket_arn
    if item.request.target.kind != "s3tables" or not arn:
        return None
    bucket = parse_table_bucket_arn(str(arn)).name
    return f"s3tablescatalog/{bucket}.{item.target_database}.{item.target_table}"


def prefix_maps(item: WorkItem) -> list[tuple[str, str]]:
    return [(m.source, m.target) for m in item.request.target.prefix_maps]


def foreign_commit(dst_io: FileIO, synced: dict[str, Any] | None, current: str | None) -> str | None:
    """Why the target table is no longer what icelake last registered, or None if it still is.

    A later commit by anyone else (an engine writing to the migrated table) moves the Glue
    pointer; syncing over it would silently revert that commit."""
    registered = synced.get("target_metadata") if synced else None
    if not registered or current is None or current == registered:
        return None  # never synced, dropped (to migrate again), or still ours
    try:
        updated_ms = json.loads(dst_io.read(current)).get("last-updated-ms")
        when = f"at {datetime.fromtimestamp(updated_ms / 1000, UTC).isoformat(timespec='seconds')}"
    except Exception:  # the foreign metadata may be gzipped, gone or unreadable: say so, go on
        when = "at a time its metadata does not tell"
    return (
        f"the target table was committed to by someone else {when}: its metadata is {current}, "
        f"icelake last registered {registered}; nothing was written. Keep the target's commits "
        "(stop syncing this table), or, once nothing of them is needed, drop the target table icelake "
        "created to migrate it again"
    )


class NotCreatedYet(FileIO):
    """The storage of a table a dry run would create (its location still pending): nothing is
    there, and nothing may be written there."""

    def stat(self, uri: str) -> ObjectInfo | None:
        return None

    def read(self, uri: str) -> bytes:
        raise FileNotFoundError(uri)

    def write(self, uri: str, data: bytes) -> None:
        raise PermissionError(f"{uri}: the table does not exist yet, and a dry run writes nothing")

    def create_exclusive(self, uri: str, data: bytes) -> bool:
        self.write(uri, data)
        return False

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        return iter(())

    def delete(self, uri: str) -> None:
        raise PermissionError(f"{uri}: the table does not exist yet, and a dry run deletes nothing")


def target_io(item: WorkItem, sessions: Sessions) -> FileIO:
    """The target's FileIO; for an S3 Tables table not created yet (a dry run's, an assessment's:
    its location is still pending), one that holds nothing."""
    if item.target_location.startswith(f"{PENDING_SCHEME}://"):
        return NotCreatedYet()
    return sessions.target_io()
