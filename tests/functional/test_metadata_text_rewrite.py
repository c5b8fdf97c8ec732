"""A migration rewrites every metadata.json, the logged ones in worker processes and the current
one last, in the source file's own text: the target's files are the source's with the paths
mapped, and a re-run finds them identical."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws.fileio import LocalFileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate import migrate_table
from icelake.migrate.copy.cpu_pool import MIN_MANIFESTS_FOR_PROCESSES
from icelake.migrate.settings import EngineSettings
from icelake.uris import PrefixMap, local_path
from tests.verify import assert_same_table

IO = LocalFileIO()


def _indented_table(root: Path, commits: int) -> str:
    """A table of `commits` appends whose metadata.json files are all re-spelled indented (same
    content: nothing records their bytes), a spelling the structural rewrite never writes."""
    root.mkdir()
    catalog = SqlCatalog("c", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    catalog.create_namespace("db")
    rows = pa.table({"id": pa.array([0], pa.int64())})
    table = catalog.create_table("db.t", schema=rows.schema)
    for _ in range(commits):
        table.append(rows)
    for path in root.rglob("*.metadata.json"):
        path.write_text(json.dumps(json.loads(path.read_bytes()), indent=2))
    return catalog.load_table("db.t").metadata_location


@pytest.mark.slow
def test_every_metadata_file_keeps_its_text_with_the_paths_mapped(tmp_path: Path) -> None:
    # Given a table whose logged metadata files are enough for worker processes
    current = _indented_table(tmp_path / "src", MIN_MANIFESTS_FOR_PROCESSES + 2)
    target = tmp_path / "dst"
    # When it is migrated with worker processes
    result = migrate_table(
        current,
        str(target),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(processes=2),
    )
    # Then each target metadata.json is its source file, indented as it was, with the paths mapped
    source_files = sorted((tmp_path / "src").rglob("*.metadata.json"))
    assert result.metadata_files == len(source_files) == MIN_MANIFESTS_FOR_PROCESSES + 3
    location = mj.parse_metadata(current, IO.read(current))[0]["location"]
    prefix_map = PrefixMap([(location, str(target))])
    for path in source_files:
        meta, _gz = mj.parse_metadata(str(path), path.read_bytes())
        expected = mj.rewrite_metadata(meta, prefix_map.require, lambda _uri: True)
        written = Path(local_path(prefix_map.require(f"file://{path}"))).read_bytes()
        assert written == json.dumps(expected, indent=2).encode(), path.name
    assert_same_table(current, result.target_metadata_location)
    # And a re-run writes nothing: it rewrites each file to the bytes already there
    again = migrate_table(
        current,
        str(target),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(processes=2),
    )
    assert again.files_rewritten == 0 and again.files_copied == 0
