"""After the source expires snapshots, the target mirrors its retention.

A prune deletes a target object only when all of these hold:
- an icelake run journaled it for this table (it created the key; see journal.py), in a run whose
  sync was validated;
- it lies under the table's own target location: keys under shared `prefix_maps` targets may
  also be another table's, so they are never pruned;
- the table's current target metadata no longer reaches it (reachable.py, deliberately wide), nor,
  under `history: all`, any version its metadata-log lists (history.py);
- it still exists (so the count is what this prune deleted).

On S3 Tables' storage nothing is deleted: it takes no DeleteObject, and the table bucket's
unreferenced-file removal takes what no snapshot reaches (`not_pruned` says so, for the outcome).
"""

from __future__ import annotations

from collections.abc import Iterable

from icelake.aws.fileio import FileIO
from icelake.migrate.check.reachable import reachable_files
from icelake.migrate.copy.table_storage import NO_DELETE, is_table_storage
from icelake.migrate.history import reached_by_history
from icelake.migrate.inventory import stat_by_listing
from icelake.migrate.journal import read_journal
from icelake.uris import canonical, is_under


def prune_requests(manifest_lists: int, manifests: int) -> dict[str, int]:
    """The S3 requests `prune_target` sends after a first sync (no key of an earlier run to ask
    about): the target's metadata.json, manifest lists and manifests read. Estimates use it."""
    return {"get": 1 + manifest_lists + manifests}


def not_pruned(target_location: str) -> str | None:
    """Why a target is never pruned (S3 Tables' storage), or None when it is pruned."""
    return NO_DELETE if is_table_storage(target_location) else None


def prune_target(
    dst_io: FileIO,
    artifacts_io: FileIO,
    journal_uris: Iterable[str],
    target_location: str,
    target_metadata: str,
    workers: int = 16,
    *,
    keep_history: bool = False,
) -> list[str]:
    """Delete what icelake wrote for the table that its current metadata no longer reaches;
    returns the deleted keys.

    Its work grows with the table once: one read of each manifest (the plan's skippers) and the
    set of reachable paths. The journals are streamed against that set, and only the candidates
    they leave are asked whether they still exist (a listing of the location only when there are
    many of them, bounded by their number: see inventory.stat_by_listing), so a table of a million
    files whose source expired a thousand is not listed whole. On S3 Tables' storage it deletes
    nothing and reads nothing (`not_pruned`: no DeleteObject there)."""
    if not_pruned(target_location):
        return []
    candidates = unreached(
        dst_io, artifacts_io, journal_uris, target_location, target_metadata, keep_history=keep_history
    )
    present = stat_by_listing(dst_io, candidates, [target_location], workers)
    doomed = sorted(key for key, info in present.items() if info is not None)
    dst_io.delete_many(doomed)
    return doomed


def unreached(
    dst_io: FileIO,
    artifacts_io: FileIO,
    journal_uris: Iterable[str],
    target_location: str,
    target_metadata: str,
    *,
    keep_history: bool = False,
) -> list[str]:
    """The keys icelake journaled under the table's location that its current metadata (and,
    with `keep_history`, any logged version) no longer reaches, as journaled: what a prune may
    delete if they still exist. An S3 Tables target deletes none of them (its bucket's
    unreferenced-file removal does): the outcome counts them instead."""
    location = canonical(target_location)
    keep = reachable_files(dst_io, target_metadata)
    if keep_history:  # history all: what any logged version reaches stays too
        keep |= reached_by_history(dst_io, target_metadata)
    candidates: dict[str, str] = {}  # canonical -> as journaled
    for uri in journal_uris:
        for key in read_journal(artifacts_io, uri):
            c = canonical(key)
            if is_under(c, location) and c not in keep:
                candidates.setdefault(c, key)
    return list(candidates.values())
