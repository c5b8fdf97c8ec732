"""The paths a metadata.json references, as the plan reads them straight from the JSON text, are
exactly those a plain walk of the parsed file finds, on every metadata file of every corpus table
(written by Iceberg's Java writer and by pyiceberg)."""

from __future__ import annotations

from typing import Any

import pytest

from icelake.aws.fileio import LocalFileIO
from icelake.migrate import metadata_json as mj
from tests.spark.corpus import SourceTable
from tests.verify import read_metadata_json

pytestmark = [pytest.mark.spark, pytest.mark.slow]
IO = LocalFileIO()


def _walked(meta: dict[str, Any]) -> list[str]:
    """The reference: every path field, by the spec's names, from `json.loads`' dict."""
    paths = [meta["location"]]
    paths += [v for k in mj.PATH_PROPERTIES if (v := meta.get("properties", {}).get(k))]
    paths += [e["metadata-file"] for e in meta.get("metadata-log", [])]
    for snap in meta.get("snapshots", []):
        paths += [snap["manifest-list"]] if "manifest-list" in snap else []
        paths += snap.get("manifests", [])
    paths += [
        s["statistics-path"] for key in ("statistics", "partition-statistics") for s in meta.get(key, [])
    ]
    return paths


def test_referenced_paths_read_from_the_text_are_those_of_the_parsed_file(
    source_tables: dict[str, SourceTable],
) -> None:
    files = statistics = 0
    for table in source_tables.values():
        current = read_metadata_json(IO, table.metadata)
        for uri in [*mj.metadata_log(current), table.metadata]:
            raw = IO.read(uri)
            meta = read_metadata_json(IO, uri)
            # When the plan's job reads the file's paths (in a worker, from its text)
            found = mj.referenced_paths_job(uri, raw)
            # Then they are the walked ones, in the same order, and so are those of the parsed dict
            assert found == _walked(meta) == mj.referenced_paths(meta), uri
            files += 1
            statistics += len(meta.get("statistics", []))
    assert files > 20 and statistics > 0  # logged files too, and a table with statistics files
