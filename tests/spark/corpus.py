"""Source tables written by Iceberg's Java writer (Spark) and by pyiceberg, one per hard case."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The Spark catalog the corpus is written through: a Hadoop catalog the `source_tables` fixture
# registers over the run's shared corpus directory (tests/spark/conftest.py).
CATALOG = "corpus"


@dataclass(frozen=True)
class SourceTable:
    name: str
    metadata: str  # current metadata file
    location: str
    extra_prefixes: dict[str, str] = field(default_factory=dict)  # source prefix -> target suffix

    def maps_under(self, target_root: Path) -> list[tuple[str, str]]:
        """Prefix maps that move the extra prefixes under `target_root` (the table location is
        mapped by the target location itself)."""
        return [(src, str(target_root / suffix)) for src, suffix in self.extra_prefixes.items()]


def current_metadata(spark: Any, ident: str) -> str:
    row = spark.sql(
        f"SELECT file FROM {ident}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
    ).collect()
    return str(row[0][0])


def location_of(spark: Any, ident: str) -> str:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {ident}").collect()
    return next(str(r[1]) for r in rows if r[0] == "Location")


def _table(spark: Any, name: str, extra: dict[str, str] | None = None) -> SourceTable:
    ident = f"{CATALOG}.db.{name}"
    return SourceTable(name, current_metadata(spark, ident), location_of(spark, ident), extra or {})


MOR = (
    "'write.delete.mode'='merge-on-read','write.update.mode'='merge-on-read',"
    "'write.merge.mode'='merge-on-read'"
)


def v1_partitioned(spark: Any) -> SourceTable:
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.v1_part (id bigint, ts timestamp, v double) USING iceberg "
        "PARTITIONED BY (bucket(4, id), days(ts)) TBLPROPERTIES ('format-version'='1')"
    )
    for day in (1, 2, 3):
        spark.sql(
            f"INSERT INTO {CATALOG}.db.v1_part SELECT id, timestamp'2026-01-0{day} 10:00:00', id * 1.5 "
            f"FROM range({day * 10}, {day * 10 + 10})"
        )
    spark.sql(f"DELETE FROM {CATALOG}.db.v1_part WHERE id % 7 = 0")
    spark.sql(f"INSERT OVERWRITE {CATALOG}.db.v1_part SELECT * FROM {CATALOG}.db.v1_part WHERE id > 15")
    return _table(spark, "v1_part")


def v2_merge_on_read(spark: Any) -> SourceTable:
    """Position deletes at the default granularity, partition values that need escaping."""
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.v2_mor (id bigint, name string, p string) USING iceberg "
        "PARTITIONED BY (p) "
        f"TBLPROPERTIES ('format-version'='2',{MOR})"
    )
    values = ", ".join(
        f"({i}, 'n{i}', '{p}')" for i, p in enumerate(["x/y", "z w", "a=b%c", "é ü", "x/y", "z w"] * 4)
    )
    spark.sql(f"INSERT INTO {CATALOG}.db.v2_mor VALUES {values}")
    spark.sql(f"DELETE FROM {CATALOG}.db.v2_mor WHERE id % 5 = 0")
    spark.sql(f"UPDATE {CATALOG}.db.v2_mor SET name = concat(name, '-u') WHERE id % 3 = 0")
    spark.sql(
        f"MERGE INTO {CATALOG}.db.v2_mor t "
        "USING (SELECT id, 'merged' AS name, 'x/y' AS p FROM range(20, 30)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.name = s.name WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql(f"DELETE FROM {CATALOG}.db.v2_mor WHERE name = 'n7'")
    return _table(spark, "v2_mor")


def evolution(spark: Any) -> SourceTable:
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.evolve (id bigint, a string, b int) USING iceberg PARTITIONED BY (b) "
        "TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(f"INSERT INTO {CATALOG}.db.evolve VALUES (1, 'a', 1), (2, 'b', 2)")
    spark.sql(f"ALTER TABLE {CATALOG}.db.evolve ADD COLUMN c date")
    spark.sql(f"ALTER TABLE {CATALOG}.db.evolve RENAME COLUMN a TO a2")
    spark.sql(f"INSERT INTO {CATALOG}.db.evolve VALUES (3, 'c', 1, date'2026-02-01')")
    spark.sql(f"ALTER TABLE {CATALOG}.db.evolve ADD PARTITION FIELD months(c)")
    spark.sql(f"ALTER TABLE {CATALOG}.db.evolve DROP PARTITION FIELD b")
    spark.sql(f"ALTER TABLE {CATALOG}.db.evolve WRITE ORDERED BY id")
    spark.sql(f"INSERT INTO {CATALOG}.db.evolve VALUES (4, 'd', 9, date'2026-03-01'), (5, NULL, NULL, NULL)")
    spark.sql(f"ALTER TABLE {CATALOG}.db.evolve DROP COLUMN b")
    spark.sql(f"INSERT INTO {CATALOG}.db.evolve VALUES (6, 'f', date'2026-04-01')")
    return _table(spark, "evolve")


def history(spark: Any) -> SourceTable:
    """Branches, tags, expired snapshots and a truncated metadata log (old files deleted)."""
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.history (id bigint, v string) USING iceberg TBLPROPERTIES ("
        "'format-version'='2','write.metadata.previous-versions-max'='3',"
        "'write.metadata.delete-after-commit.enabled'='true')"
    )
    for i in range(5):
        spark.sql(f"INSERT INTO {CATALOG}.db.history VALUES ({i}, 'v{i}')")
    spark.sql(f"ALTER TABLE {CATALOG}.db.history CREATE TAG `release-1`")
    spark.sql(f"ALTER TABLE {CATALOG}.db.history CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {CATALOG}.db.history.branch_audit VALUES (100, 'on-branch')")
    spark.sql(f"DELETE FROM {CATALOG}.db.history WHERE id = 1")
    spark.sql(f"INSERT INTO {CATALOG}.db.history VALUES (5, 'v5')")
    spark.sql(
        f"CALL {CATALOG}.system.expire_snapshots(table => 'db.history', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 2)"
    )
    return _table(spark, "history")


def data_elsewhere(spark: Any, warehouse: Path) -> SourceTable:
    """Data under a second prefix (write.data.path) in the object-storage layout."""
    elsewhere = str(warehouse / "elsewhere" / "data")
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.elsewhere (id bigint, p int) USING iceberg PARTITIONED BY (p) "
        "TBLPROPERTIES ("
        f"'format-version'='2','write.data.path'='{elsewhere}','write.object-storage.enabled'='true',{MOR})"
    )
    spark.sql(f"INSERT INTO {CATALOG}.db.elsewhere SELECT id, CAST(id % 3 AS INT) FROM range(0, 30)")
    spark.sql(f"DELETE FROM {CATALOG}.db.elsewhere WHERE id % 4 = 0")
    spark.sql(f"INSERT INTO {CATALOG}.db.elsewhere SELECT id, CAST(id % 3 AS INT) FROM range(30, 40)")
    return _table(spark, "elsewhere", {elsewhere: "elsewhere-data"})


def v3_deletion_vectors(spark: Any) -> SourceTable:
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.v3_dv (id bigint, s string) USING iceberg "
        f"TBLPROPERTIES ('format-version'='3',{MOR})"
    )
    spark.sql(f"INSERT INTO {CATALOG}.db.v3_dv SELECT id, CAST(id AS STRING) FROM range(0, 40)")
    spark.sql(f"DELETE FROM {CATALOG}.db.v3_dv WHERE id % 3 = 0")
    spark.sql(f"UPDATE {CATALOG}.db.v3_dv SET s = 'u' WHERE id % 5 = 1")
    spark.sql(f"DELETE FROM {CATALOG}.db.v3_dv WHERE id = 2")
    return _table(spark, "v3_dv")


def statistics(spark: Any) -> SourceTable:
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.stats (id bigint, p int) USING iceberg PARTITIONED BY (p) "
        "TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(f"INSERT INTO {CATALOG}.db.stats SELECT id, CAST(id % 2 AS INT) FROM range(0, 50)")
    spark.sql(f"CALL {CATALOG}.system.compute_table_stats('db.stats')")
    spark.sql(f"CALL {CATALOG}.system.compute_partition_stats('db.stats')")
    return _table(spark, "stats")


def float_specials(spark: Any) -> SourceTable:
    """NaN, +-infinity, -0.0 and NULL in a double column and in a double partition column."""
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.floats (id bigint, f double, p double) USING iceberg PARTITIONED BY (p) "
        "TBLPROPERTIES ('format-version'='2')"
    )
    specials = [
        "CAST('NaN' AS DOUBLE)",
        "CAST('Infinity' AS DOUBLE)",
        "CAST('-Infinity' AS DOUBLE)",
        "CAST('-0.0' AS DOUBLE)",
        "CAST(0.0 AS DOUBLE)",
        "CAST(NULL AS DOUBLE)",
        "CAST(1.5 AS DOUBLE)",
    ]
    rows = ", ".join(f"({i}, {v}, {specials[(i + 3) % len(specials)]})" for i, v in enumerate(specials))
    spark.sql(f"INSERT INTO {CATALOG}.db.floats VALUES {rows}")
    spark.sql(f"INSERT INTO {CATALOG}.db.floats VALUES (100, CAST('NaN' AS DOUBLE), CAST('NaN' AS DOUBLE))")
    spark.sql(f"DELETE FROM {CATALOG}.db.floats WHERE id = 6")
    return _table(spark, "floats")


def java_gzip_metadata(spark: Any) -> SourceTable:
    """metadata.json files gzip-compressed by Iceberg Java (named `*.gz.metadata.json`)."""
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.java_gz (id bigint, s string) USING iceberg TBLPROPERTIES ("
        f"'format-version'='2','write.metadata.compression-codec'='gzip',{MOR})"
    )
    spark.sql(f"INSERT INTO {CATALOG}.db.java_gz SELECT id, CAST(id AS STRING) FROM range(0, 12)")
    spark.sql(f"DELETE FROM {CATALOG}.db.java_gz WHERE id % 4 = 0")
    spark.sql(f"INSERT INTO {CATALOG}.db.java_gz VALUES (100, 'late')")
    return _table(spark, "java_gz")


SPARK_CASES = {
    "v1_partitioned": v1_partitioned,
    "v2_merge_on_read": v2_merge_on_read,
    "evolution": evolution,
    "history": history,
    "v3_deletion_vectors": v3_deletion_vectors,
    "statistics": statistics,
    "float_specials": float_specials,
    "java_gzip_metadata": java_gzip_metadata,
}


# The tables pyiceberg writes (`pyiceberg_tables`), each a habit of its writer.
PYICEBERG_CASES = ("pyiceberg", "py_evolution", "py_expired", "py_layout")

# Every table of the `source_tables` fixture (tests/spark/conftest.py).
ALL_CASES = (*SPARK_CASES, "data_elsewhere", *PYICEBERG_CASES)


def pyiceberg_tables(warehouse: Path) -> dict[str, SourceTable]:
    """The tables pyiceberg writes (its own Avro encoder, manifests, defaults and location
    provider), in one SQL catalog under `warehouse`. Few rows and files each."""
    from pyiceberg.catalog.sql import SqlCatalog

    os.makedirs(warehouse, exist_ok=True)
    catalog = SqlCatalog("py", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    catalog.create_namespace("db")
    return {
        "pyiceberg": _py_written(catalog),
        "py_evolution": _py_evolution(catalog),
        "py_expired": expired_without_deletion(catalog),
        "py_layout": _py_layout(catalog, warehouse),
    }


def _py_source(catalog: Any, name: str, extra: dict[str, str] | None = None) -> SourceTable:
    table = catalog.load_table(f"db.{name}")
    return SourceTable(name, table.metadata_location, table.metadata.location, extra or {})


def _py_written(catalog: Any) -> SourceTable:
    """Appends and a copy-on-write delete."""
    import pyarrow as pa
    from pyiceberg.expressions import EqualTo

    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", None], pa.string())})
    table = catalog.create_table("db.py_written", schema=data.schema)
    table.append(data)
    table.append(pa.table({"id": pa.array([4], pa.int64()), "name": pa.array(["d"], pa.string())}))
    table.delete(EqualTo("id", 2))
    table.append(pa.table({"id": pa.array([5], pa.int64()), "name": pa.array(["e"], pa.string())}))
    return _py_source(catalog, "py_written")


def _py_evolution(catalog: Any) -> SourceTable:
    """Append, overwrite and delete with filters, schema evolution (add, rename, widen),
    partition evolution, a tag, a branch with its own commit, and an upsert."""
    import pyarrow as pa
    from pyiceberg.expressions import EqualTo, LessThan
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType

    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "n", IntegerType()),
        NestedField(4, "cat", StringType()),
        identifier_field_ids=[1],
    )
    spec = PartitionSpec(PartitionField(4, 1000, IdentityTransform(), "cat"))
    table = catalog.create_table("db.py_evolution", schema=schema, partition_spec=spec)

    def rows(ids: list[int], cat: str, **extra: list[Any]) -> pa.Table:
        arrow = table.schema().as_arrow()
        columns = {
            "id": ids,
            "name": [f"n{i}" for i in ids],
            "n": [i * 10 for i in ids],
            "cat": [cat] * len(ids),
            **extra,
        }
        return pa.Table.from_pydict({f.name: columns.get(f.name) or [None] * len(ids) for f in arrow}, arrow)

    table.append(rows([1, 2, 3], "a"))
    table.append(rows([4, 5], "b"))
    table.overwrite(rows([6, 7], "a"), overwrite_filter=EqualTo("cat", "a"))
    table.delete(LessThan("id", 5))
    with table.update_schema() as update:
        update.add_column("extra", StringType())
        update.rename_column("name", "label")
        update.update_column("n", LongType())
    table.append(rows([8], "c", extra=["x"]))
    with table.update_spec() as update:
        update.add_identity("extra")  # bucket and truncate need pyiceberg-core, not installed
    table.append(rows([9, 10], "c", extra=["y", None]))
    tagged = table.current_snapshot()
    assert tagged is not None
    table.manage_snapshots().create_tag(tagged.snapshot_id, "py-release").create_branch(
        tagged.snapshot_id, "py-dev"
    ).commit()
    table.append(rows([11], "d", extra=["on-branch"]), branch="py-dev")
    table.upsert(rows([9, 12], "c", extra=["upserted", "new"]), join_cols=["id"])
    return _py_source(catalog, "py_evolution")


def expired_without_deletion(catalog: Any) -> SourceTable:
    """Expiry without deletion (what pyiceberg's expire_snapshots does): the snapshots before a
    full overwrite are expired, their manifest lists, manifests and data files stay on disk, and
    the metadata-log still lists the versions that reach them."""
    import pyarrow as pa

    def rows(ids: list[int]) -> pa.Table:
        return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([f"v{i}" for i in ids], pa.string())})

    table = catalog.create_table("db.py_expired", schema=rows([]).schema)
    table.append(rows([1, 2]))
    table.append(rows([3]))
    table.overwrite(rows([10, 11]))
    table.append(rows([12]))
    current = table.current_snapshot()
    assert current is not None
    older = [s.snapshot_id for s in table.snapshots() if s.snapshot_id != current.snapshot_id]
    table.maintenance.expire_snapshots().by_ids(older).commit()
    return _py_source(catalog, "py_expired")


def _py_layout(catalog: Any, warehouse: Path) -> SourceTable:
    """The object-store location provider, `write.data.path` and `write.metadata.path` outside
    the table location, and `add_files` of a Parquet file written in a third directory."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    data_path, metadata_path, foreign = (warehouse / d for d in ("py-data", "py-metadata", "py-foreign"))
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "p", StringType()))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p"))
    table = catalog.create_table(
        "db.py_layout",
        schema=schema,
        partition_spec=spec,
        properties={
            "write.object-storage.enabled": "true",
            "write.data.path": f"file://{data_path}",
            "write.metadata.path": f"file://{metadata_path}",
        },
    )
    arrow = table.schema().as_arrow()
    table.append(pa.Table.from_pydict({"id": [1, 2, 3], "p": ["x", "y", "x"]}, arrow))
    os.makedirs(foreign, exist_ok=True)
    pq.write_table(pa.Table.from_pydict({"id": [20, 21], "p": ["z", "z"]}, arrow), foreign / "added.parquet")
    table.add_files([f"file://{foreign}/added.parquet"])
    table.append(pa.Table.from_pydict({"id": [4], "p": ["y"]}, arrow))
    extra = {str(data_path): "py-data", str(metadata_path): "py-metadata", str(foreign): "py-foreign"}
    return _py_source(catalog, "py_layout", extra)
