"""API tombstones close their key; a column absent from a whole batch is not a change to NULL."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from icelake.aws.fileio import LocalFileIO
from icelake.ingest.landing import FetchedBatch, land_batch
from icelake.ingest.models import DeleteMarker, PendingBatch, Scd2Spec
from icelake.ingest.scd2 import merge_pending

pytestmark = pytest.mark.spark

T0 = datetime(2026, 5, 1, tzinfo=UTC)
_n = itertools.count()


def land(root: Path, hours: int, records: list[dict[str, Any]]) -> PendingBatch:
    return land_batch(
        LocalFileIO(),
        str(root),
        FetchedBatch(
            source="api",
            endpoint="dim",
            pages=[json.dumps({"data": records}).encode()],
            fetched_at=T0 + timedelta(hours=hours),
        ),
    )


def history(spark: Any, table: str) -> list[tuple[Any, ...]]:
    rows = spark.sql(
        f"SELECT id, name, tier, _is_current, _is_deleted, hour(_valid_from), hour(_valid_to) "
        f"FROM {table} ORDER BY id, _valid_from"
    ).collect()
    return [tuple(r) for r in rows]


def test_tombstones_close_keys_and_absent_columns_keep_their_values(
    spark: Any, ingest_catalog: str, tmp_path: Path
) -> None:
    spec = Scd2Spec(
        table=f"{ingest_catalog}.tomb.dim_{next(_n)}",
        keys=("id",),
        order_by="v",
        delete_marker=DeleteMarker(column="deleted", value=True),
    )
    io = LocalFileIO()
    batches = [
        land(
            tmp_path,
            1,
            [{"id": k, "name": f"n{k}", "tier": "gold", "v": k, "deleted": False} for k in (1, 2, 3)],
        ),
        # tier is absent from the whole batch: not a change; 2 is a tombstone; 9 a tombstone of an
        # unknown key (nothing to close); 3 is deleted and then comes back later in the same batch
        land(
            tmp_path,
            2,
            [
                {"id": 1, "name": "n1b", "v": 1},
                {"id": 2, "deleted": True, "v": 2},
                {"id": 9, "deleted": True},
                {"id": 3, "deleted": True, "v": 2},
                {"id": 3, "name": "n3", "v": 3, "deleted": False},
            ],
        ),
        land(tmp_path, 3, [{"id": 2, "name": "n2", "tier": None, "v": 4}]),  # 2 comes back; tier now present
    ]
    results = merge_pending(spark, spec, io, batches)
    assert [(r.inserted, r.closed, r.deleted) for r in results] == [(3, 0, 0), (1, 1, 1), (1, 0, 0)]
    assert "deleted" not in spark.table(spec.table).columns  # the marker is not a data column
    assert history(spark, spec.table) == [
        (1, "n1", "gold", False, False, 1, 2),
        (1, "n1b", "gold", True, False, 2, None),  # tier carried from the current version
        (2, "n2", "gold", False, True, 1, 2),
        (2, "n2", None, True, False, 3, None),
        (3, "n3", "gold", True, False, 1, None),  # the later live record won: unchanged
    ]


def test_absent_means_null_on_request(spark: Any, ingest_catalog: str, tmp_path: Path) -> None:
    spec = Scd2Spec(table=f"{ingest_catalog}.tomb.dim_{next(_n)}", keys=("id",), absent_means_null=True)
    io = LocalFileIO()
    results = merge_pending(
        spark,
        spec,
        io,
        [
            land(tmp_path, 1, [{"id": 1, "name": "a", "tier": "gold"}]),
            land(tmp_path, 2, [{"id": 1, "name": "a"}]),
        ],
    )
    assert results[1].closed == 1
    assert history(spark, spec.table) == [
        (1, "a", "gold", False, False, 1, 2),
        (1, "a", None, True, False, 2, None),
    ]
