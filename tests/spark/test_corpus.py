"""The corpus really contains the hard cases the migration tests claim to cover."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from icelake.aws.fileio import LocalFileIO
from icelake.uris import local_path
from tests.spark.corpus import SourceTable
from tests.verify import read_metadata_json

pytestmark = [pytest.mark.spark, pytest.mark.slow]
IO = LocalFileIO()


def _entries(meta: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for snap in meta["snapshots"]:
        for m in fastavro.reader(io.BytesIO(IO.read(snap["manifest-list"]))):
            out += list(fastavro.reader(io.BytesIO(IO.read(m["manifest_path"]))))
    return out


def test_corpus_covers_the_hard_cases(source_tables: dict[str, SourceTable]) -> None:
    meta = {k: read_metadata_json(IO, t.metadata) for k, t in source_tables.items()}
    formats = {
        k: {(e["data_file"].get("content", 0), e["data_file"]["file_format"]) for e in _entries(m)}
        for k, m in meta.items()
    }
    assert meta["v1_partitioned"]["format-version"] == 1
    assert (1, "PARQUET") in formats["v2_merge_on_read"]  # position deletes
    assert (1, "PUFFIN") in formats["v3_deletion_vectors"]  # deletion vectors
    assert meta["v3_deletion_vectors"]["format-version"] == 3
    assert meta["statistics"]["statistics"] and meta["statistics"]["partition-statistics"]
    assert {r["type"] for r in meta["history"]["refs"].values()} == {"branch", "tag"}
    assert len(meta["history"]["metadata-log"]) == 3  # truncated by previous-versions-max
    assert len(meta["evolution"]["schemas"]) > 1 and len(meta["evolution"]["partition-specs"]) > 1
    assert meta["evolution"]["sort-orders"][-1]["fields"]
    elsewhere = source_tables["data_elsewhere"]
    paths = [e["data_file"]["file_path"] for e in _entries(meta["data_elsewhere"])]
    assert paths and all(
        any(p.startswith(x) or p.startswith("file:" + x) for x in elsewhere.extra_prefixes) for p in paths
    )
    escaped = [e["data_file"]["file_path"] for e in _entries(meta["v2_merge_on_read"])]
    assert any("%2F" in p for p in escaped) and any("+" in p for p in escaped)
    assert len(meta["pyiceberg"]["snapshots"]) >= 4  # appends and a copy-on-write delete by pyiceberg


def test_corpus_covers_what_other_writers_do(source_tables: dict[str, SourceTable]) -> None:
    meta = {k: read_metadata_json(IO, t.metadata) for k, t in source_tables.items()}
    # Java's gzip-compressed metadata.json files, named as Java names them
    gz = source_tables["java_gzip_metadata"]
    assert gz.metadata.endswith(".gz.metadata.json") and IO.read(gz.metadata)[:2] == b"\x1f\x8b"
    assert all(f.endswith(".gz.metadata.json") for f in mj_log(meta["java_gzip_metadata"]))
    # pyiceberg: appends, overwrite and delete with filters, an upsert, schema and partition
    # evolution, a tag and a branch with a commit of its own
    evolution = meta["py_evolution"]
    operations = [s["summary"]["operation"] for s in evolution["snapshots"]]
    assert {"append", "overwrite", "delete"} <= set(operations)
    assert len(evolution["schemas"]) > 1 and len(evolution["partition-specs"]) > 1
    refs = evolution["refs"]
    assert refs["py-release"]["type"] == "tag" and refs["py-dev"]["type"] == "branch"
    on_branch = next(s for s in evolution["snapshots"] if s["snapshot-id"] == refs["py-dev"]["snapshot-id"])
    assert on_branch["parent-snapshot-id"] == refs["py-release"]["snapshot-id"] != refs["main"]["snapshot-id"]
    # expiry without deletion: older logged versions reach manifest lists the current one does not,
    # and they are still on disk
    expired = meta["py_expired"]
    current_lists = {s["manifest-list"] for s in expired["snapshots"]}
    older_lists = {
        s["manifest-list"] for f in mj_log(expired) for s in read_metadata_json(IO, f).get("snapshots", [])
    }
    assert older_lists - current_lists and all(IO.stat(p) for p in older_lists - current_lists)
    # the object-store layout under write.data.path, metadata under write.metadata.path, and a file
    # added from a third directory, all outside the table location
    layout = source_tables["py_layout"]
    data, metadata, foreign = (
        next(p for p, s in layout.extra_prefixes.items() if s == n)
        for n in ("py-data", "py-metadata", "py-foreign")
    )
    paths = [e["data_file"]["file_path"] for e in _entries(meta["py_layout"])]
    assert any(foreign in p for p in paths)
    hashed = [p.split(data, 1)[1] for p in paths if data in p]
    assert hashed and all(len(p.strip("/").split("/")) > 2 for p in hashed)  # hash directories
    assert metadata in layout.metadata and local_path(layout.location) not in layout.metadata


def mj_log(meta: dict[str, Any]) -> list[str]:
    return [e["metadata-file"] for e in meta.get("metadata-log", [])]
