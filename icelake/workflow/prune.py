"""After the source expires snapshots, the target mirrors its retention.

A prune deletes a target object only when all of these hold:
- an icelake run journaled it for this table (it created the key; see journal.py), in a run whose
  sync was validated;
- it lies under the table's own target location: keys under shared `prefix_maps` targets may
  also be another table's, so they are never pruned;
- the table's current target metadata no longer reaches it (reachable.py, deliberately wide);
- it still exists (so the count is what this prune deleted).
"""

from __future__ import annotations

from collections.abc import Iterable

from icelake.aws.fileio import FileIO
from icelake.migrate.reachable import reachable_files
from icelake.uris import canonical, is_under
from icelake.workflow.journal import read_journal


def prune_target(
    dst_io: FileIO,
    artifacts_io: FileIO,
    journal_uris: Iterable[str],
    target_location: str,
    target_metadata: str,
) -> list[str]:
    """Delete what icelake wrote for the table that its current metadata no longer reaches;
    returns the deleted keys."""
    location = canonical(target_location)
    owned: set[str] = set()
    for uri in journal_uris:
        owned.update(k for k in read_journal(artifacts_io, uri) if is_under(canonical(k), location))
    keep = reachable_files(dst_io, target_metadata)
    existing = {canonical(uri) for uri, _info in dst_io.list(target_location)}
    doomed = sorted(k for k in owned if canonical(k) in existing and canonical(k) not in keep)
    dst_io.delete_many(doomed)
    return doomed
