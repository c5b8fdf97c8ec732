"""Where a work item's sync starts: Plan decides it once from the ledger's last validated sync and
the target as it is (`with_sync_base`), and Copy and the Glue job plan from the same version
(`since_of`). An incremental plan reads only what the source committed since that version
(icelake.migrate.plan.incremental); anything that breaks the trust it rests on plans the whole
table, and the outcome says why."""

from __future__ import annotations

from typing import Any

from icelake.aws.fileio import FileIO
from icelake.errors import NoBase
from icelake.migrate import metadata_json as mj
from icelake.migrate.plan.since import Since, sync_base
from icelake.migrate.plan.target import table_prefix_map
from icelake.request.models import WorkItem
from icelake.request.target import prefix_maps

SYNC_MODES = ("incremental", "cutover")


def since_of(item: WorkItem) -> Since:
    """The sync's start as Plan decided it (`with_sync_base`)."""
    if item.sync_from is not None:
        return Since(source_metadata=item.sync_from)
    return Since(reason=item.sync_full_reason or _why_full(item, None, None) or "a first migration")


def with_sync_base(
    item: WorkItem,
    synced: dict[str, Any] | None,
    registered: str | None,
    meta: mj.Metadata,
    dst_io: FileIO,
    src_io: FileIO,
) -> WorkItem:
    """`item` with where its sync starts: the ledger's last synced source version when the target
    still holds it and the source continues it (checked: `since.sync_base`), else why not.
    `registered`: the target table's metadata location in its catalog now."""
    why = _why_full(item, synced, registered)
    if why is None:
        assert synced is not None
        since = Since(source_metadata=str(synced["source_metadata"]))
        prefix_map = table_prefix_map(meta, prefix_maps(item), item.target_location)
        try:
            sync_base(since, item.source_metadata_location, meta, prefix_map, dst_io, src_io)
        except NoBase as exc:
            why = str(exc)
        else:
            return item.model_copy(update={"sync_from": since.source_metadata, "sync_full_reason": ""})
    return item.model_copy(update={"sync_from": None, "sync_full_reason": why})


def _why_full(item: WorkItem, synced: dict[str, Any] | None, registered: str | None) -> str | None:
    """Why the request or the ledger rules out an incremental plan, or None."""
    request = item.request
    if request.mode not in SYNC_MODES:
        return f"mode {request.mode} plans the whole table"
    if request.options.sync == "full":
        return 'the request asks for it (options.sync "full")'
    if not synced or not synced.get("source_metadata"):
        return "the ledger has no validated sync of this target yet"
    if registered != synced.get("target_metadata"):
        return "the target table's catalog entry is not the metadata the last sync registered"
    return None
