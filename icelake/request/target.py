"""What a work item's target is and must not hold, as the Plan step checks it and an assessment
reports it: the owner mark icelake puts on the target table, the prefix maps the request gives
its files, and a commit someone else made to the target since icelake last registered it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from icelake.aws.fileio import FileIO
from icelake.request.models import WorkItem


def owner_of(item: WorkItem) -> str:
    """The owner mark icelake puts on the target table: which source table it mirrors."""
    return f"{item.request.source.account_id}:{item.source_database}.{item.source_table}"


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
