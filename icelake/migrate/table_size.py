"""How large a table is, from its metadata.json alone: no manifest list, manifest or data file read.

Plan uses it to decide, before reading anything that grows with the table, whether the table is
one for the Glue job (which then plans it too) or small enough to plan in a Lambda. Iceberg writers
(Spark, pyiceberg, Flink, Trino) put running totals and per-commit additions in every snapshot's
summary; the estimate is an upper bound of the files all live snapshots reference: the totals of
each snapshot whose parent has expired (a lineage's oldest), plus what every other snapshot added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Metadata = dict[str, Any]
RUNNING_TOTALS = frozenset({"total-data-files", "total-files-size"})


@dataclass(frozen=True)
class TableSize:
    files: int  # data and delete files
    bytes: int


def estimate_size(meta: Metadata) -> TableSize | None:
    """An upper bound of the data and delete files (and their bytes) that the table's snapshots
    reference; None when a snapshot's summary has no running totals (the caller must plan to know).
    Writers leave out `added-*` figures that are zero, so a missing one counts 0."""
    snapshots = meta.get("snapshots") or []
    live = {s.get("snapshot-id") for s in snapshots}
    files = size = 0
    for snapshot in snapshots:
        summary = snapshot.get("summary") or {}
        if not summary.keys() >= RUNNING_TOTALS:
            return None
        if snapshot.get("parent-snapshot-id") in live:
            files += _count(summary, "added-data-files") + _count(summary, "added-delete-files")
            size += _count(summary, "added-files-size")
        else:  # the oldest live snapshot of its lineage: everything it references
            files += _count(summary, "total-data-files") + _count(summary, "total-delete-files")
            size += _count(summary, "total-files-size")
    return TableSize(files, size)


def _count(summary: dict[str, Any], key: str) -> int:
    """The summary's figure; 0 when absent (a writer omits zeros) or not a number."""
    try:
        return int(summary.get(key, 0))
    except (TypeError, ValueError):
        return 0
