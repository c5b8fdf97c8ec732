"""Commits made to a source table after its cutover promoted the target (stranded commits): which
they are, read from two metadata.json documents, and which of them a carry-over has brought over.

A promoted table's target is its home; a writer that still commits to the old table strands that
commit there (the runbook tells owners to decommission the source). Every run that meets a
promoted table compares the source's current metadata with the version that was promoted.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

# The summary key of a carry-over's snapshot on the target: the source snapshot ids it carries,
# comma-separated (icelake/migrate/cutover/carry.py writes it; a later run reads it back).
CARRIED_FROM = "icelake.carried-from"


class StrandedCommit(BaseModel):
    """One source snapshot made after promotion, as its summary tells it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    snapshot_id: int
    committed_at: str  # ISO 8601, UTC
    operation: str  # append, overwrite, delete, replace (the summary's operation)
    added_files: int = 0
    removed_files: int = 0
    added_records: int = 0
    removed_records: int = 0
    added_delete_files: int = 0
    removed_delete_files: int = 0
    schema_id: int | None = None
    on_main: bool = True  # in the source's main branch history (what a carry-over can bring)

    def line(self) -> str:
        """The commit in a person's words (the outcome's message)."""
        text = (
            f"{self.snapshot_id} ({self.operation} at {self.committed_at}: +{self.added_files} files "
            f"+{self.added_records} records, -{self.removed_files} files -{self.removed_records} records"
        )
        if self.added_delete_files or self.removed_delete_files:
            text += f", +{self.added_delete_files} -{self.removed_delete_files} delete files"
        return text + ("" if self.on_main else ", not on the main branch") + ")"


def _count(summary: dict[str, Any], key: str) -> int:
    try:
        return int(summary.get(key, 0))
    except (TypeError, ValueError):
        return 0


def commit_of(snapshot: dict[str, Any], on_main: bool = True) -> StrandedCommit:
    """A metadata.json snapshot entry as a StrandedCommit."""
    summary = snapshot.get("summary") or {}
    millis = int(snapshot.get("timestamp-ms", 0))
    return StrandedCommit(
        snapshot_id=int(snapshot["snapshot-id"]),
        committed_at=datetime.fromtimestamp(millis / 1000, UTC).isoformat(timespec="seconds"),
        operation=str(summary.get("operation", "unknown")),
        added_files=_count(summary, "added-data-files"),
        removed_files=_count(summary, "deleted-data-files"),
        added_records=_count(summary, "added-records"),
        removed_records=_count(summary, "deleted-records"),
        added_delete_files=_count(summary, "added-delete-files"),
        removed_delete_files=_count(summary, "removed-delete-files"),
        schema_id=snapshot.get("schema-id"),
        on_main=on_main,
    )


def main_lineage(meta: dict[str, Any]) -> set[int]:
    """The snapshot ids of the main branch's history (current snapshot and its ancestors)."""
    by_id = {int(s["snapshot-id"]): s for s in meta.get("snapshots", [])}
    main = (meta.get("refs") or {}).get("main", {}).get("snapshot-id", meta.get("current-snapshot-id"))
    lineage: set[int] = set()
    current = int(main) if main not in (None, -1) else None
    while current is not None and current in by_id and current not in lineage:
        lineage.add(current)
        parent = by_id[current].get("parent-snapshot-id")
        current = int(parent) if parent is not None else None
    return lineage


def commits_after(
    promoted: dict[str, Any] | None, current: dict[str, Any], promoted_at: str, carried: set[int]
) -> list[StrandedCommit]:
    """The snapshots of `current` (the source now) that `promoted` (the source's metadata as it was
    promoted) did not have, oldest first, less those a carry-over brought over (`carried`). Without
    the promoted metadata (deleted at the source since), those committed after `promoted_at`."""
    if promoted is not None:
        known = {int(s["snapshot-id"]) for s in promoted.get("snapshots", [])}
        new = [s for s in current.get("snapshots", []) if int(s["snapshot-id"]) not in known]
    else:
        since = datetime.fromisoformat(promoted_at).timestamp() * 1000
        new = [s for s in current.get("snapshots", []) if int(s.get("timestamp-ms", 0)) > since]
    new = [s for s in new if int(s["snapshot-id"]) not in carried]
    main = main_lineage(current)
    ordered = sorted(new, key=lambda s: (int(s.get("sequence-number", 0)), int(s.get("timestamp-ms", 0))))
    return [commit_of(s, int(s["snapshot-id"]) in main) for s in ordered]


def carried_ids(meta: dict[str, Any]) -> set[int]:
    """Source snapshot ids that carry-overs brought to this (target) table, from its snapshots'
    summaries."""
    ids: set[int] = set()
    for snapshot in meta.get("snapshots", []):
        value = (snapshot.get("summary") or {}).get(CARRIED_FROM, "")
        ids |= {int(part) for part in str(value).split(",") if part.strip().lstrip("-").isdigit()}
    return ids


def stranded_message(name: str, target: str, promoted_at: str, commits: list[StrandedCommit]) -> str:
    """Why a promoted table is stranded, naming each commit (the first 20 and a count)."""
    shown = "; ".join(c.line() for c in commits[:20])
    more = f"; and {len(commits) - 20} more (report.json lists them all)" if len(commits) > 20 else ""
    return (
        f"{len(commits)} commit(s) were made to the source {name} after {target} was promoted at "
        f"{promoted_at}; the target does not have them: {shown}{more}"
    )
