"""Prefix mapping matches on path boundaries only; spellings of the same place are the same."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icelake.errors import InvalidMappingError
from icelake.uris import PrefixMap, canonical, parse_map_option, source_prefixes


def test_prefix_matches_only_on_path_boundaries() -> None:
    pm = PrefixMap([("s3://b/t", "s3://x/t")])
    assert pm.map("s3://b/t/data/f.parquet") == "s3://x/t/data/f.parquet"
    assert pm.map("s3://b/t") == "s3://x/t"
    assert pm.map("s3://b/t2/data/f.parquet") is None
    assert pm.map("s3://b/tx") is None


@pytest.mark.parametrize(
    ("src", "dst"), [("s3://b/t", "s3://x/t"), ("s3://b/t/", "s3://x/t/"), ("s3://b/t//", "s3://x/t")]
)
def test_trailing_slashes_never_change_the_result(src: str, dst: str) -> None:
    assert PrefixMap([(src, dst)]).map("s3://b/t/m/v1.metadata.json") == "s3://x/t/m/v1.metadata.json"


def test_longest_prefix_wins() -> None:
    pm = PrefixMap([("s3://b/t", "s3://x/t"), ("s3://b/t/data", "s3://y/d")])
    assert pm.map("s3://b/t/data/a.parquet") == "s3://y/d/a.parquet"
    assert pm.map("s3://b/t/metadata/a.avro") == "s3://x/t/metadata/a.avro"


def test_local_spellings_are_one_place() -> None:
    assert canonical("file:/tmp/w/t") == canonical("file:///tmp/w/t") == canonical("/tmp/w/t/")
    pm = PrefixMap([("/tmp/w/t", "/tmp/new")])
    assert pm.map("file:/tmp/w/t/data/p=x%2Fy/f.parquet") == "file:///tmp/new/data/p=x%2Fy/f.parquet"


def test_s3a_and_s3_are_the_same_bucket() -> None:
    assert PrefixMap([("s3://b/t", "s3://x/t")]).map("s3a://b/t/f") == "s3://x/t/f"


def test_conflicting_mappings_are_refused() -> None:
    with pytest.raises(InvalidMappingError, match="mapped twice"):
        PrefixMap([("s3://b/t", "s3://x/t"), ("s3://b/t/", "s3://y/t")])


def test_map_option_splits_at_the_uri_boundary() -> None:
    assert parse_map_option("s3://b/p=1/x=s3://t/y") == ("s3://b/p=1/x", "s3://t/y")
    assert parse_map_option("/src/a=/dst/b") == ("/src/a", "/dst/b")
    with pytest.raises(InvalidMappingError, match="SRC=DST"):
        parse_map_option("s3://only-one")


def _canonical_reference(uri: str) -> str:
    """What `canonical` computes, without its shortcuts for already-normal local paths."""
    if uri.startswith(("s3a://", "s3n://")):
        uri = "s3://" + uri.split("://", 1)[1]
    elif uri.startswith("file:"):
        rest = uri[len("file:") :]
        if rest.startswith("//localhost/"):
            rest = rest[len("//localhost") :]
        uri = "file://" + "/" + rest.lstrip("/")
    elif "://" not in uri:
        uri = "file:///" + os.path.abspath(uri).lstrip("/")
    if uri.endswith("/") and not uri.endswith("://") and uri.count("/") > 3:
        scheme, _, rest = uri.partition("://")  # trailing slashes go, the scheme's own never
        uri = f"{scheme}://{rest.rstrip('/')}"
    return uri


SEGMENTS = st.lists(st.sampled_from(["a", "b.c", ".", "..", "", ".x", "p=1", "\u00e9"]), max_size=6)


@given(
    SEGMENTS,
    st.sampled_from(
        ["/", "//", "///", "file:", "file:/", "file://", "file:///", "file:////", "s3a://", "rel/"]
    ),
)
def test_local_shortcuts_give_what_the_full_rules_give(segments: list[str], start: str) -> None:
    uri = start + "/".join(segments)
    assert canonical(uri) == _canonical_reference(uri)
    assert canonical(canonical(uri)) == canonical(uri)  # a canonical form is its own


def test_a_canonical_local_uri_is_returned_as_it_is() -> None:
    """Not a copy: the plan keys a million files by their canonical paths, and a copy of each
    (as a directory named `.work` once caused) was 230 MB more at its peak."""
    for uri in ("file:///w/.work/t/data/a.parquet", "file:///w/t/./x", "file:///w/t/p=1/a.parquet"):
        assert canonical(uri) is uri


MAPPED_SOURCES = ["s3://b/t", "s3://b/t/a", "s3://b/", "/w", "/w/t/b.c", "file:///w/t/p=1"]


@given(
    SEGMENTS,
    st.sampled_from(["s3://b", "s3a://b", "file:", "/", "s3://b/t", "/w/t"]),
    st.lists(st.sampled_from(MAPPED_SOURCES), min_size=1),
)
def test_matching_a_canonical_path_gives_what_matching_its_spelling_gives(
    segments: list[str], start: str, sources: list[str]
) -> None:
    pm = PrefixMap([(s, f"s3://dst/{i}") for i, s in enumerate(dict.fromkeys(sources))])
    uri = start + "/" + "/".join(segments)
    assert pm.match_canonical(canonical(uri)) == pm.match(uri)


def test_a_source_tables_prefixes_are_its_directory_and_the_mapped_sources() -> None:
    assert source_prefixes("s3://b/wh/db/t/metadata/00003-x.metadata.json", ["s3://b/other/data"]) == [
        "s3://b/wh/db/t",
        "s3://b/other/data",
    ]
    assert source_prefixes("/w/t/metadata/v3.metadata.json", []) == ["/w/t"]


def test_slashes_after_the_scheme_alone_are_not_stripped_into_it() -> None:
    """`s3a:////` once became `s3:`, which a second canonical() read as a local relative path."""
    assert canonical("s3a:////") == canonical("s3:////") == "s3://"
    assert canonical(canonical("s3a:////")) == "s3://"
