"""An independent, plain-Python statement of the SCD2 semantics the Spark merge must produce.

It shares no code with icelake.ingest.scd2: history is a list of dicts, comparisons are Python's
`!=` (where None != None is False, which is exactly NULL-safe inequality).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

Record = dict[str, Any]


@dataclass(frozen=True)
class RefBatch:
    batch_id: str
    as_of: datetime
    ingested_at: datetime
    pages: tuple[tuple[str, tuple[Record, ...]], ...]  # (page uri, records) in landing order
    full_load: bool


def _order_value(record: Record, order_by: str | None) -> tuple[int, Any]:
    value = record.get(order_by) if order_by else None
    return (0, 0) if value is None else (1, value)  # NULL is the oldest


def reference_history(
    batches: list[RefBatch],
    *,
    key: str,
    columns: list[str],
    order_by: str | None,
    tracked: list[str],
    marker: tuple[str, Any] | None = None,
    absent_means_null: bool = True,
) -> list[Record]:
    """`marker` (column, value): a record with that value is a tombstone of its key. Unless
    `absent_means_null`, a column no record of a batch has keeps the current version's value."""
    history: list[Record] = []
    merged: set[str] = set()
    for batch in batches:
        if batch.batch_id in merged:  # a re-run of a committed batch changes nothing
            continue
        merged.add(batch.batch_id)
        latest: dict[Any, tuple[tuple[Any, ...], str, Record]] = {}
        position = 0
        for uri, records in batch.pages:
            for record in records:
                rank = (*_order_value(record, order_by), position)
                position += 1
                k = record[key]
                if k not in latest or rank > latest[k][0]:
                    latest[k] = (rank, uri, record)
        current = {row[key]: row for row in history if row["_is_current"]}
        present = {c for _uri, records in batch.pages for r in records for c in r}
        absent = set() if absent_means_null else {c for c in columns if c not in present}
        for k, (_rank, uri, record) in latest.items():
            row = current.get(k)
            if marker is not None and record.get(marker[0]) == marker[1]:
                if row is not None:
                    row["_is_current"] = False
                    row["_valid_to"] = batch.as_of
                    row["_is_deleted"] = True
                continue
            if row is not None and all(row[c] == record.get(c) for c in tracked if c not in absent):
                continue
            if row is not None:
                row["_is_current"] = False
                row["_valid_to"] = batch.as_of
            history.append(
                {
                    **{
                        c: (row[c] if row is not None else None) if c in absent else record.get(c)
                        for c in columns
                    },
                    "_source_file": uri,
                    "_ingested_at": batch.ingested_at,
                    "_is_current": True,
                    "_valid_from": batch.as_of,
                    "_valid_to": None,
                    "_is_deleted": False,
                }
            )
        if batch.full_load:
            for k, row in current.items():
                if k not in latest:
                    row["_is_current"] = False
                    row["_valid_to"] = batch.as_of
                    row["_is_deleted"] = True
    return history
