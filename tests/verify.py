"""Independent checks that a migrated table is the same table as its source.

Used by the tests only. Rows are read by engines that did not write the target: pyiceberg
(Python) and, where given a SparkSession, Iceberg Java through Spark.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable
from typing import Any

import fastavro
import pyarrow.parquet as pq
from pyiceberg.table import StaticTable

from icelake.aws.fileio import FileIO
from icelake.migrate.delete_files import PUFFIN_MAGIC


def load(meta: str, props: dict[str, str] | None = None) -> StaticTable:
    return StaticTable.from_metadata(meta, properties=props or {})


# Rows as sorted repr strings: exact (repr of a float round-trips its value, so -0.0 != 0.0) and
# NaN-safe (a tuple holding NaN is not == to itself), independent of icelake's own comparison.
def _rows(table: Any) -> list[str]:
    return sorted(repr(tuple(r.values())) for r in table.to_pylist())


def _spark_rows(spark: Any, meta: str, snapshot_id: int) -> list[str]:
    df = spark.read.format("iceberg").option("snapshot-id", snapshot_id).load(meta)
    return sorted(repr(tuple(r)) for r in df.collect())


def assert_same_table(
    source_meta: str,
    target_meta: str,
    *,
    spark: Any = None,
    spark_target_meta: str | None = None,
    source_props: dict[str, str] | None = None,
    target_props: dict[str, str] | None = None,
) -> int:
    """Every snapshot and ref of the target reads exactly like the source. Returns snapshots checked."""
    src, dst = load(source_meta, source_props), load(target_meta, target_props)
    sm, tm = src.metadata, dst.metadata
    assert tm.table_uuid == sm.table_uuid
    assert tm.format_version == sm.format_version
    assert getattr(tm, "last_sequence_number", 0) == getattr(sm, "last_sequence_number", 0)
    assert [s.model_dump() for s in tm.schemas] == [s.model_dump() for s in sm.schemas]
    assert [s.model_dump() for s in tm.partition_specs] == [s.model_dump() for s in sm.partition_specs]
    assert [s.model_dump() for s in tm.sort_orders] == [s.model_dump() for s in sm.sort_orders]
    assert tm.current_schema_id == sm.current_schema_id
    assert tm.default_spec_id == sm.default_spec_id
    assert tm.current_snapshot_id == sm.current_snapshot_id
    assert {k: v.model_dump() for k, v in tm.refs.items()} == {k: v.model_dump() for k, v in sm.refs.items()}
    assert [e.model_dump() for e in tm.snapshot_log] == [e.model_dump() for e in sm.snapshot_log]
    assert len(tm.snapshots) == len(sm.snapshots) > 0
    for s_snap, t_snap in zip(sm.snapshots, tm.snapshots, strict=True):
        assert t_snap.snapshot_id == s_snap.snapshot_id
        assert t_snap.parent_snapshot_id == s_snap.parent_snapshot_id
        assert t_snap.sequence_number == s_snap.sequence_number
        assert t_snap.timestamp_ms == s_snap.timestamp_ms
        assert t_snap.summary == s_snap.summary
        assert t_snap.schema_id == s_snap.schema_id
        expected = _rows(src.scan(snapshot_id=s_snap.snapshot_id).to_arrow())
        assert _rows(dst.scan(snapshot_id=t_snap.snapshot_id).to_arrow()) == expected, t_snap.snapshot_id
        if spark is not None:
            spark_meta = spark_target_meta or target_meta
            spark_expected = _spark_rows(spark, source_meta, s_snap.snapshot_id)
            assert _spark_rows(spark, spark_meta, t_snap.snapshot_id) == spark_expected
            assert len(spark_expected) == len(expected)
    return len(tm.snapshots)


def read_metadata_json(io_: FileIO, uri: str) -> dict[str, Any]:
    """A metadata.json file's content, gzip-compressed or not (Java's `*.gz.metadata.json`)."""
    data = io_.read(uri)
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)  # type: ignore[no-any-return]


def _text_of_avro(data: bytes) -> str:
    reader = fastavro.reader(io.BytesIO(data))
    return json.dumps(reader.metadata, default=str) + json.dumps(list(reader), default=repr)


def file_text(uri: str, data: bytes) -> str | None:
    """Decoded text of a metadata or delete file (compressed bytes hide paths from a grep)."""
    if uri.endswith(".avro"):
        return _text_of_avro(data)
    if ".metadata.json" in uri:
        return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()
    if data[:4] == PUFFIN_MAGIC:
        return data.decode("utf-8", "replace")
    if uri.endswith(".parquet"):
        table = pq.read_table(io.BytesIO(data))
        if "file_path" in table.column_names:
            return "\n".join(table.column("file_path").to_pylist())
        return None
    return None


def assert_no_source_paths(io_: FileIO, target_prefixes: Iterable[str], source_markers: Iterable[str]) -> int:
    """No target metadata or delete file mentions a source location. Returns files checked."""
    markers = list(source_markers)
    checked = 0
    for prefix in target_prefixes:
        for uri, _info in io_.list(prefix):
            text = file_text(uri, io_.read(uri))
            if text is None:
                continue
            checked += 1
            for marker in markers:
                assert marker not in text, f"{uri} still mentions {marker}"
    assert checked > 0
    return checked


def assert_sizes_match(io_: FileIO, target_meta: str) -> int:
    """Every size recorded in the target metadata equals the real size of the file. Returns sizes checked."""
    meta = read_metadata_json(io_, target_meta)
    checked = 0
    for stat in meta.get("statistics", []) + meta.get("partition-statistics", []):
        info = io_.stat(stat["statistics-path"])
        assert info is not None and info.size == stat["file-size-in-bytes"], stat
        checked += 1
    seen: set[str] = set()
    for snap in meta["snapshots"]:
        for entry in fastavro.reader(io.BytesIO(io_.read(snap["manifest-list"]))):
            path = entry["manifest_path"]
            info = io_.stat(path)
            assert info is not None and info.size == entry["manifest_length"], path
            checked += 1
            if path in seen:
                continue
            seen.add(path)
            for e in fastavro.reader(io.BytesIO(io_.read(path))):
                if e["status"] == 2:
                    continue
                df = e["data_file"]
                info = io_.stat(df["file_path"])
                assert info is not None, df["file_path"]
                assert info.size == df["file_size_in_bytes"], df["file_path"]
                checked += 1
    return checked
