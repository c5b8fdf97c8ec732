"""The manifest entries a table's commits write: what an incremental sync of them reads and
rewrites, besides the files they add.

A commit's new manifests are new metadata files with absolute paths inside, so a sync reads every
entry of them (Plan, again in the Copy's plan, and Validate's check of the new files) and rewrites
them. How many entries that is depends on the writer, not on the files the commit added: Iceberg's
Java merge append (Spark's default, `commit.manifest.min-count-to-merge` 100) folds the table's
small manifests into the one it writes, so an append of ten files can carry every EXISTING entry of
a 100,000-file table; pyiceberg's fast append writes the new files' entries only.

Counted from the manifest lists of the snapshots the commit rates count (the last 30 days,
commits.py), the newest `SAMPLE` of them: the added, existing and deleted counts of the manifests
each snapshot added (`added_snapshot_id`), one GET a snapshot; a table that did not commit in the
window costs none. A list without the counts (optional in format v1) counts the snapshot's added
files instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from icelake.assess.gather.commits import WINDOW, added_files
from icelake.aws.fileio import FileIO
from icelake.errors import IcelakeError
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import read_avro

SAMPLE = 5  # the most recent snapshots read: the commits the next syncs meet are like them
# v2 names first, then v1's (the spec renamed them; the field ids are the same)
COUNTS = (
    ("added_files_count", "added_data_files_count"),
    ("existing_files_count", "existing_data_files_count"),
    ("deleted_files_count", "deleted_data_files_count"),
)


def entries_per_commit(meta: mj.Metadata, io: FileIO, now: datetime, sample: int = SAMPLE) -> float | None:
    """The mean number of manifest entries the `sample` newest snapshots of the last 30 days
    wrote, or None for a table that did not commit in them. A list that cannot be read is left
    out of the mean (the plan reports an unreadable list as its blocker)."""
    since = (now - WINDOW).timestamp() * 1000
    snapshots = [s for s in meta.get("snapshots") or [] if int(s.get("timestamp-ms", 0)) >= since]
    recent = sorted(snapshots, key=lambda s: int(s.get("timestamp-ms", 0)))[-sample:]
    counted = [n for s in recent if (n := _written(s, io)) is not None]
    return round(sum(counted) / len(counted), 1) if counted else None


def _written(snapshot: dict[str, Any], io: FileIO) -> int | None:
    """The entries of the manifests `snapshot` added, from its manifest list."""
    uri = snapshot.get("manifest-list")
    if not uri:  # a v1 snapshot with its manifests inline: their counts are not at hand
        return added_files(snapshot)
    try:
        records = read_avro(uri, io.read(uri)).records
    except (IcelakeError, ClientError, OSError):
        return None
    own = snapshot.get("snapshot-id")
    total = 0
    for record in records:
        if record.get("added_snapshot_id") != own:
            continue
        counts = [_first(record, names) for names in COUNTS]
        if any(c is None for c in counts):
            return added_files(snapshot)
        total += sum(c for c in counts if c is not None)
    return total


def _first(record: dict[str, Any], names: tuple[str, ...]) -> int | None:
    for name in names:
        if record.get(name) is not None:
            return int(record[name])
    return None
