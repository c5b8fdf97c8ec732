"""A table bucket's prefix map (issue 61): the prefixes a source table keeps outside its location map
under the table's own location by themselves, the same way every time; a Glue target's map is the
request's, and refuses what no mapping moves."""

from __future__ import annotations

from typing import Any

import pytest

from icelake.errors import UnmappedPrefixesError, UnsafeTargetError
from icelake.migrate.plan.target import (
    TableBucketMap,
    external_mapped,
    external_target,
    table_prefix_map,
    with_found_prefixes,
)

WAREHOUSE = "s3://0a1b2c3d-feed-beef-1234-abcdef012345--table-s3"
META: dict[str, Any] = {
    "location": "s3://source-lake/lake/sales/orders",
    "properties": {
        "write.data.path": "s3://source-lake/elsewhere/orders/data",
        "write.metadata.path": "s3://other-lake/meta/orders",
    },
}
FOREIGN = "s3://third/added/f.parquet"
PATHS = [
    "s3://source-lake/lake/sales/orders/data/a.parquet",
    "s3://source-lake/elsewhere/orders/data/0101/b.parquet",
    "s3://other-lake/meta/orders/00001-x.metadata.json",
    FOREIGN,
]


def test_a_table_bucket_maps_the_write_paths_under_the_location() -> None:
    mapped = table_prefix_map(META, (), WAREHOUSE)
    assert isinstance(mapped, TableBucketMap)
    assert mapped.map(PATHS[0]) == f"{WAREHOUSE}/data/a.parquet"
    assert mapped.map(PATHS[1]) == f"{WAREHOUSE}/external/s3/source-lake/elsewhere/orders/data/0101/b.parquet"
    assert mapped.map(PATHS[2]) == f"{WAREHOUSE}/metadata/00001-x.metadata.json"
    assert mapped.map(FOREIGN) is None  # found by the walk: `with_found_prefixes`
    assert table_prefix_map(META, (), WAREHOUSE).mappings == mapped.mappings  # the same every time


def test_the_prefixes_found_outside_map_by_the_path_alone_and_are_said() -> None:
    grown, counts = with_found_prefixes([PATHS], table_prefix_map(META, (), WAREHOUSE), set())
    assert (
        grown.map(FOREIGN)
        == external_target(FOREIGN, WAREHOUSE)
        == f"{WAREHOUSE}/external/s3/third/added/f.parquet"
    )
    assert sum(counts.values()) == len(PATHS)
    said = external_mapped(grown)
    assert len(said) == 3  # write.data.path, write.metadata.path, the added file's directory
    assert "s3://third/added lies outside the source table's location" in said[2]
    assert said[2].endswith(f"mapped to {WAREHOUSE}/external/s3/third/added")


def test_a_path_meeting_a_key_of_the_tables_own_is_refused() -> None:
    own = f"{META['location']}/external/s3/third/added/f.parquet"
    with pytest.raises(UnsafeTargetError, match="two source files"):
        with_found_prefixes([[own, FOREIGN]], table_prefix_map(META, (), WAREHOUSE), set())


def test_a_glue_target_is_refused_what_no_mapping_moves() -> None:
    mapped = table_prefix_map(META, (), "s3://target-lake/lake/sales/orders")
    assert not isinstance(mapped, TableBucketMap)
    assert len(mapped.mappings) == 1 and external_mapped(mapped) == []
    with pytest.raises(UnmappedPrefixesError):
        with_found_prefixes([PATHS], mapped, set())
