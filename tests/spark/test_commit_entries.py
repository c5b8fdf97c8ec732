"""The manifest entries a commit writes (icelake/assess/gather/commit_entries.py), against what Spark's
own `manifests` metadata table says of the same table: Iceberg's Java merge append folds the
table's manifests into the one it writes, so its commits carry many more entries than files."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from icelake.assess.estimate.sync_window import sync_entries
from icelake.assess.gather.commit_entries import entries_per_commit
from icelake.aws.fileio import LocalFileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate.plan.build import build_plan
from icelake.migrate.progress import NoProgress
from icelake.migrate.settings import EngineSettings
from tests.spark.corpus import current_metadata

COMMITS = 5  # the 3rd and 5th merge the manifests before them


def _metadata(uri: str) -> mj.Metadata:
    return mj.parse_metadata(uri, LocalFileIO().read(uri))[0]


def _merging_table(spark: Any, catalog: str) -> str:
    """A table Spark appended `COMMITS` rows to, one file a commit, merging its manifests once
    there are 3 (the 3rd and 5th commits merge); its identifier."""
    ident = f"{catalog}.db.merged"
    spark.sql(
        f"CREATE TABLE {ident} (id BIGINT) USING iceberg "
        "TBLPROPERTIES ('format-version'='2', 'commit.manifest.min-count-to-merge'='3')"
    )
    for i in range(COMMITS):
        spark.sql(f"INSERT INTO {ident} VALUES ({i})")
    return ident


def _spark_entries(spark: Any, ident: str, snapshot_id: int) -> int:
    """The entries of the manifests `snapshot_id` added, as Spark's metadata table counts them."""
    (row,) = spark.sql(
        "SELECT sum(added_data_files_count + existing_data_files_count + deleted_data_files_count) "
        f"FROM {ident}.all_manifests WHERE added_snapshot_id = {snapshot_id} "
        f"AND reference_snapshot_id = {snapshot_id}"
    ).collect()
    return int(row[0])


def test_a_merging_writer_s_commits_are_counted_by_the_entries_they_wrote(
    spark: Any, hadoop_catalog: Callable[[str], str]
) -> None:
    # Given a table Spark appends to one file at a time, merging its manifests once there are 3
    ident = _merging_table(spark, hadoop_catalog("commit_entries"))
    meta = _metadata(current_metadata(spark, ident))
    snapshots = sorted(meta["snapshots"], key=lambda s: s["timestamp-ms"])

    # When the assessment counts what the last commit, and the last four, wrote
    now = datetime.now(UTC)
    last = entries_per_commit(meta, LocalFileIO(), now, sample=1)
    recent = entries_per_commit(meta, LocalFileIO(), now, sample=4)

    # Then it counts what Spark's metadata says, which is more than the one file each added
    by_spark = [_spark_entries(spark, ident, int(s["snapshot-id"])) for s in snapshots]
    assert last == by_spark[-1] and last > 1, by_spark
    assert recent == pytest.approx(sum(by_spark[-4:]) / 4, abs=0.05), by_spark
    # ... and a sync of the last commit walks its entries, not its one file
    assert sync_entries(1, 1, last) == by_spark[-1]

    # ... and a table that committed more than 30 days ago has no recent commit to count
    assert entries_per_commit(meta, LocalFileIO(), datetime(2100, 1, 1, tzinfo=UTC)) is None


def test_a_plan_counts_the_entries_of_every_manifest_it_read(
    spark: Any, hadoop_catalog: Callable[[str], str], tmp_path: Path
) -> None:
    # Given a table Spark appended to one file at a time, merging its manifests once there are 3:
    # the merged manifests repeat the entries of the files before them
    ident = _merging_table(spark, hadoop_catalog("plan_entries"))
    metadata = current_metadata(spark, ident)
    location = _metadata(metadata)["location"]

    # When the table is planned (what each pass of a full copy over its manifests decodes)
    plan = build_plan(
        metadata,
        str(tmp_path / "target"),
        [(location, str(tmp_path / "target"))],
        LocalFileIO(),
        LocalFileIO(),
        settings=EngineSettings(overwrite=False, workers=2, progress=NoProgress()),
    )

    # Then it counts the entries of every manifest any snapshot reaches, as Spark's metadata
    # table does, which is more than the table's live files
    (row,) = spark.sql(
        "SELECT sum(n) FROM (SELECT DISTINCT path, added_data_files_count + existing_data_files_count "
        f"+ deleted_data_files_count AS n FROM {ident}.all_manifests)"
    ).collect()
    assert plan.manifest_entries() == int(row[0]) > COMMITS


def test_a_fast_append_writes_one_entry_a_file(tmp_path: Path) -> None:
    # Given a table pyiceberg appended to three times, two rows (one file) a commit
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("entries", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    table = catalog.create_table("db.t", rows.schema, properties={"format-version": "2"})
    for _ in range(3):
        table.append(rows)

    # When the assessment counts the entries its commits wrote
    meta = _metadata(table.metadata_location)
    entries = entries_per_commit(meta, LocalFileIO(), datetime.now(UTC))

    # Then each wrote one: its file's (pyiceberg's fast append does not merge manifests)
    assert entries == 1.0
