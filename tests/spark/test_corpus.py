"""The corpus really contains the hard cases the migration tests claim to cover."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from icelake.aws.fileio import LocalFileIO
from tests.spark.corpus import SourceTable

pytestmark = [pytest.mark.spark, pytest.mark.slow]
IO = LocalFileIO()


def _entries(meta: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for snap in meta["snapshots"]:
        for m in fastavro.reader(io.BytesIO(IO.read(snap["manifest-list"]))):
            out += list(fastavro.reader(io.BytesIO(IO.read(m["manifest_path"]))))
    return out


def test_corpus_covers_the_hard_cases(source_tables: dict[str, SourceTable]) -> None:
    meta = {k: json.loads(IO.read(t.metadata)) for k, t in source_tables.items()}
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
