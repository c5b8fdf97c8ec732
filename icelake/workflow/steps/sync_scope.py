"""What Validate checks after an incremental sync (icelake.migrate.check.since): the new
snapshots at the request's tier, the older ones proven untouched, and the files the sync added.
None when the copy was full, or the request asks for every snapshot
(`options.validation_scope: "all"`)."""

from __future__ import annotations

from dataclasses import dataclass

from icelake.migrate import metadata_json as mj
from icelake.migrate.check.since import (
    checked_new_files,
    new_snapshots,
    removed_since,
    untouched_problems,
)
from icelake.migrate.models import FilesCheck, MigrationResult
from icelake.request.deps import Deps, Sessions
from icelake.workflow.models import PlanResult
from icelake.workflow.steps.shared import source_prefixes


@dataclass(frozen=True)
class SyncScope:
    new: set[int]  # the snapshots validated one by one
    untouched: list[str]  # how the older snapshots changed since the last sync (nothing, when well)
    files: FilesCheck  # the files the sync added
    # the source expired a snapshot or dropped a logged version since: the prune has work
    removed: bool

    @property
    def note(self) -> str:
        return (
            f"; incremental: {len(self.new)} new snapshot(s) at this tier, the older ones proven "
            f"untouched, {self.files.files} new file(s) checked"
        )

    @classmethod
    def of(
        cls, planned: PlanResult, copied: MigrationResult, deps: Deps, sessions: Sessions
    ) -> SyncScope | None:
        item = planned.item
        if copied.sync != "incremental" or item.request.options.validation_scope == "all":
            return None
        synced = deps.ledger.last_synced(item.target_location) or {}
        base_uri = synced.get("target_metadata")
        if not base_uri:
            return None
        dst_io = sessions.target_io()
        base, _gz = mj.parse_metadata(base_uri, dst_io.read(base_uri))
        target, _gz = mj.parse_metadata(
            planned.target_metadata_location, dst_io.read(planned.target_metadata_location)
        )
        files = checked_new_files(dst_io, planned.target_metadata_location, base, source_prefixes(item))
        removed = removed_since(target, base, base_uri)
        return cls(new_snapshots(target, base), untouched_problems(target, base), files, removed)
