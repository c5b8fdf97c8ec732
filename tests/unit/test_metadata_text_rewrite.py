"""A metadata.json is rewritten by replacing the location's prefix in its own text when that is
provably exact, and by the structural rewrite (parse, map each path field, dump) otherwise: both
give the same table metadata, and the text keeps the source's formatting."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import pytest

from icelake.errors import NotAMetadataFileError, UnmappedPrefixesError
from icelake.migrate import metadata_json as mj
from icelake.uris import PrefixMap

SRC = "s3://src-bucket/wh/db/t"
DST = "s3://dst-bucket/lake/db/t"
MAP = PrefixMap([(SRC, DST)])
SNAPSHOTS = 300


def _keep_all(_uri: str) -> bool:
    return True


def _metadata(location: str = SRC, snapshots: int = SNAPSHOTS) -> dict[str, Any]:
    """A v2 table metadata of `snapshots` appends, shaped as Iceberg writes it."""
    snaps = [
        {
            "snapshot-id": 1000 + i,
            **({"parent-snapshot-id": 999 + i} if i else {}),
            "sequence-number": i + 1,
            "timestamp-ms": 1_700_000_000_000 + i,
            "summary": {"operation": "append", "added-data-files": "1", "total-records": str(i + 1)},
            "manifest-list": f"{location}/metadata/snap-{1000 + i}-1-abc.avro",
            "schema-id": 0,
        }
        for i in range(snapshots)
    ]
    return {
        "format-version": 2,
        "table-uuid": "7f71db62-d662-43fd-8f5d-1c0e81424b91",
        "location": location,
        "last-sequence-number": snapshots,
        "last-updated-ms": 1_700_000_000_000 + snapshots,
        "last-column-id": 2,
        "current-schema-id": 0,
        "schemas": [
            {
                "type": "struct",
                "schema-id": 0,
                "fields": [
                    {"id": 1, "name": "id", "required": False, "type": "long"},
                    {"id": 2, "name": "ratio", "required": False, "type": "double", "doc": "café ≥ 1"},
                ],
            }
        ],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {
            "write.data.path": f"{location}/data",
            "write.metadata.path": f"{location}/metadata",
            "owner": "etl",
        },
        "current-snapshot-id": 999 + snapshots,
        "refs": {"main": {"snapshot-id": 999 + snapshots, "type": "branch"}},
        "snapshots": snaps,
        "statistics": [
            {
                "snapshot-id": 999 + snapshots,
                "statistics-path": f"{location}/metadata/stats-1.puffin",
                "file-size-in-bytes": 413,
                "file-footer-size-in-bytes": 100,
                "blob-metadata": [],
            }
        ],
        "partition-statistics": [
            {
                "snapshot-id": 999 + snapshots,
                "statistics-path": f"{location}/metadata/partition-stats-1.parquet",
                "file-size-in-bytes": 99,
            }
        ],
        "snapshot-log": [{"timestamp-ms": s["timestamp-ms"], "snapshot-id": s["snapshot-id"]} for s in snaps],
        "metadata-log": [
            {
                "timestamp-ms": 1_700_000_000_000 + i,
                "metadata-file": f"{location}/metadata/v{i + 1}.metadata.json",
            }
            for i in range(snapshots)
        ],
    }


def _indented(meta: dict[str, Any]) -> bytes:
    """A spelling `serialize_metadata` never produces, so the output shows which path was taken."""
    return json.dumps(meta, indent=2, ensure_ascii=False).encode()


def _structural(
    raw: bytes, map_path: Callable[[str], str] = MAP.require, keep: Callable[[str], bool] = _keep_all
) -> bytes:
    """What icelake wrote before the text rewrite: parse, map each path field, dump."""
    meta, gz = mj.parse_metadata("v.metadata.json", raw)
    return mj.serialize_metadata(mj.rewrite_metadata(meta, map_path, keep), gz)


def _rewrite(
    raw: bytes, map_path: Callable[[str], str] = MAP.require, keep: Callable[[str], bool] = _keep_all
) -> bytes:
    return mj.rewrite_metadata_bytes("v.metadata.json", raw, map_path, keep)


def test_a_long_history_is_rewritten_in_its_own_text_to_the_structural_result() -> None:
    # Given a metadata.json of many snapshots, indented, with non-ASCII text and every path field
    raw = _indented(_metadata())
    # When it is rewritten
    out = _rewrite(raw)
    # Then it holds what the structural rewrite gives, every path mapped...
    expected = json.loads(_structural(raw))
    assert json.loads(out) == expected
    assert sorted(mj.referenced_paths(expected)) == sorted(
        MAP.require(p) for p in mj.referenced_paths(json.loads(raw))
    )
    # ...spelled as the source was: only the path fields' bytes changed
    assert out == _indented(expected)
    assert out != _structural(raw)


def test_the_text_rewrite_keeps_spellings_a_json_round_trip_would_change() -> None:
    # Given a source whose formatting and number spellings json.dumps would not reproduce
    raw = (
        _indented(_metadata(snapshots=3))
        .replace(b'"last-column-id": 2', b'"last-column-id" :2')
        .replace(b'"format-version": 2,', b'"format-version": 2, "x-ratio": 1.50, "x-big": 1E3,')
    )
    # When it is rewritten; Then those bytes are untouched (the text path was taken)
    out = _rewrite(raw)
    assert b'"last-column-id" :2' in out and b'"x-ratio": 1.50' in out and b'"x-big": 1E3' in out
    assert json.loads(out) == json.loads(_structural(raw))
    assert out == raw.replace(b'"' + SRC.encode(), b'"' + DST.encode())


def test_a_gzipped_file_is_rewritten_in_its_text_and_gzipped_deterministically() -> None:
    # Given a gzip-compressed, indented metadata.json
    text = _indented(_metadata(snapshots=20))
    raw = gzip.compress(text, mtime=1_700_000_000)
    # When it is rewritten
    out = _rewrite(raw)
    # Then the output is gzip with mtime 0 (a re-run gives the same bytes) of the rewritten text
    assert out[:2] == b"\x1f\x8b" and out[4:8] == b"\x00\x00\x00\x00"
    assert gzip.decompress(out) == _indented(json.loads(gzip.decompress(_structural(raw))))
    assert out == _rewrite(raw)


def _with_summary_at_location(meta: dict[str, Any]) -> None:
    meta["snapshots"][5]["summary"]["source-table"] = f"{SRC}/elsewhere"


def _with_property_at_location(meta: dict[str, Any]) -> None:
    meta["properties"]["backup-of"] = SRC


def _with_key_at_location(meta: dict[str, Any]) -> None:
    meta["properties"][f"{SRC}/note"] = "a key, not a path"


def _with_quoted_location_in_a_value(meta: dict[str, Any]) -> None:
    meta["snapshots"][0]["summary"]["note"] = f'copied from "{SRC}/x"'


def _with_quoted_location_in_a_path(meta: dict[str, Any]) -> None:
    meta["snapshots"][0]["manifest-list"] = f'{SRC}/metadata/odd"{SRC}/snap.avro'


def _with_file_url_spelled_two_ways(meta: dict[str, Any]) -> None:
    meta["snapshots"][1]["manifest-list"] = meta["snapshots"][1]["manifest-list"].replace(
        SRC, "s3a://src-bucket/wh/db/t"
    )


def _with_a_path_outside_the_location(meta: dict[str, Any]) -> None:
    meta["properties"]["write.data.path"] = "s3://src-bucket/wh/db/t-data"


FALLBACKS = {
    "a snapshot summary starts with the location": _with_summary_at_location,
    "a non-path property value is the location": _with_property_at_location,
    "a key starts with the location": _with_key_at_location,
    "an escaped quote before the location in a value": _with_quoted_location_in_a_value,
    "an escaped quote before the location in a path": _with_quoted_location_in_a_path,
    "a path spelled s3a:// under an s3:// location": _with_file_url_spelled_two_ways,
    "a path outside the location, mapped by another mapping": _with_a_path_outside_the_location,
}


@pytest.mark.parametrize("edit", FALLBACKS.values(), ids=FALLBACKS.keys())
def test_a_file_the_text_rewrite_cannot_prove_is_rewritten_structurally(
    edit: Callable[[dict[str, Any]], None],
) -> None:
    # Given an indented metadata.json with something a prefix replacement could get wrong
    meta = _metadata(snapshots=12)
    edit(meta)
    raw = _indented(meta)
    prefix_map = PrefixMap([(SRC, DST), ("s3://src-bucket/wh/db/t-data", "s3://dst-bucket/data")])
    # When it is rewritten; Then it is exactly the structural rewrite (compact, not indented)
    out = _rewrite(raw, prefix_map.require)
    assert out == _structural(raw, prefix_map.require)
    assert json.loads(out)["location"] == DST


def test_local_paths_spelled_two_ways_are_rewritten_structurally() -> None:
    # Given a local table whose location is file:/x but whose paths are file:///x/... (both
    # writers' spellings of one place)
    meta = _metadata(location="file:/wh/db/t", snapshots=5)
    meta["snapshots"][2]["manifest-list"] = "file:///wh/db/t/metadata/snap-2.avro"
    raw = _indented(meta)
    prefix_map = PrefixMap([("/wh/db/t", "/new/db/t")])
    # When it is rewritten; Then every path maps to the target's one spelling, structurally
    out = _rewrite(raw, prefix_map.require)
    assert out == _structural(raw, prefix_map.require)
    assert json.loads(out)["snapshots"][2]["manifest-list"] == "file:///new/db/t/metadata/snap-2.avro"
    assert json.loads(out)["location"] == "file:///new/db/t"


def test_a_location_spelled_with_escapes_is_rewritten_structurally() -> None:
    # Given a file whose location is spelled with JSON escapes (`\/`, valid JSON) and a
    # summary value that starts with the location literally: the count of literal occurrences
    # equals the number of path fields, but they are not the path fields
    meta = _metadata(snapshots=4)
    meta["snapshots"][0]["summary"]["note"] = f"{SRC}/elsewhere"
    raw = _indented(meta).replace(
        f'"location": "{SRC}"'.encode(), b'"location": "' + SRC.replace("/", "\\/").encode() + b'"'
    )
    assert json.loads(raw)["location"] == SRC
    # When it is rewritten; Then the location is mapped and the summary left alone
    out = _rewrite(raw)
    assert out == _structural(raw)
    assert json.loads(out)["location"] == DST
    assert json.loads(out)["snapshots"][0]["summary"]["note"] == f"{SRC}/elsewhere"


def test_a_dropped_log_entry_is_rewritten_structurally() -> None:
    # Given a log one of whose files is gone
    raw = _indented(_metadata(snapshots=8))
    gone = f"{SRC}/metadata/v3.metadata.json"

    def keep(uri: str) -> bool:
        return uri != gone

    # When it is rewritten; Then that entry is dropped, as the structural rewrite drops it
    out = _rewrite(raw, keep=keep)
    assert out == _structural(raw, keep=keep)
    logged = [e["metadata-file"] for e in json.loads(out)["metadata-log"]]
    assert len(logged) == 7 and MAP.require(gone) not in logged


def test_a_non_ascii_target_is_rewritten_structurally() -> None:
    raw = _indented(_metadata(snapshots=3))
    prefix_map = PrefixMap([(SRC, "s3://dst-bucket/café/t")])
    out = _rewrite(raw, prefix_map.require)
    assert out == _structural(raw, prefix_map.require)
    assert json.loads(out)["location"] == "s3://dst-bucket/café/t"


def test_a_gzipped_file_that_falls_back_is_the_structural_gzip() -> None:
    meta = _metadata(snapshots=6)
    _with_summary_at_location(meta)
    raw = gzip.compress(_indented(meta), mtime=1_700_000_000)
    out = _rewrite(raw)
    assert out == _structural(raw)
    assert out[4:8] == b"\x00\x00\x00\x00"


@pytest.mark.parametrize("where", ["manifest-list", "write.data.path", "empty write.data.path"])
def test_an_unmapped_path_raises_as_the_structural_rewrite_does(where: str) -> None:
    # Given a path no mapping covers
    meta = _metadata(snapshots=4)
    if where == "manifest-list":
        meta["snapshots"][3]["manifest-list"] = "s3://other-bucket/lists/snap.avro"
    else:
        meta["properties"]["write.data.path"] = "" if where.startswith("empty") else "s3://other-bucket/data"
    raw = _indented(meta)
    # When it is rewritten; Then the same error names the same path
    with pytest.raises(UnmappedPrefixesError) as structural:
        _structural(raw)
    with pytest.raises(UnmappedPrefixesError) as text:
        _rewrite(raw)
    assert str(text.value) == str(structural.value)


@pytest.mark.parametrize(
    ("raw", "why"),
    [(b"{not json", "not JSON"), (b'{"format-version": 2}', "no 'format-version' and 'location'")],
)
def test_a_file_that_is_not_metadata_is_refused_as_before(raw: bytes, why: str) -> None:
    with pytest.raises(NotAMetadataFileError, match=why):
        _rewrite(raw)
    with pytest.raises(NotAMetadataFileError, match=why):
        _rewrite(gzip.compress(raw))


def test_the_worker_job_gives_the_text_rewrite_or_none() -> None:
    raw = _indented(_metadata(snapshots=5))
    kept = frozenset(mj.metadata_log(json.loads(raw)))
    assert mj.rewrite_file_job("v.metadata.json", raw, MAP, kept) == _rewrite(raw)
    assert mj.rewrite_file_job("v.metadata.json", raw, PrefixMap([("s3://x/y", DST)]), kept) is None


def test_a_failing_map_raises_what_the_structural_rewrite_raises_first() -> None:
    # Given a v1 table whose first snapshot lists its manifests inline and a map that refuses
    # two paths (the structural rewrite meets the inline manifest first)
    meta = _metadata(snapshots=2)
    meta["format-version"] = 1
    del meta["snapshots"][0]["manifest-list"]
    meta["snapshots"][0]["manifests"] = [f"{SRC}/metadata/m0.avro"]
    raw = _indented(meta)

    def map_path(uri: str) -> str:
        if uri.endswith(("m0.avro", "snap-1001-1-abc.avro")):
            raise ValueError(uri)
        return MAP.require(uri)

    # When it is rewritten; Then the error is the structural rewrite's
    with pytest.raises(ValueError, match=r"m0\.avro"):
        _rewrite(raw, map_path)


def test_the_plans_job_reads_paths_from_plain_and_gzip_text_and_leaves_bad_files_to_the_parse() -> None:
    # Given a metadata file with a log, inline v1 manifests and statistics, plain and gzipped
    meta = _metadata(snapshots=3)
    meta["metadata-log"] = [{"timestamp-ms": 1, "metadata-file": f"{SRC}/metadata/v1.metadata.json"}]
    meta["snapshots"][0]["manifests"] = [f"{SRC}/metadata/m0.avro"]
    meta["properties"] = {"owner": "etl", "write.data.path": f"{SRC}/data"}
    del meta["partition-statistics"]
    meta["statistics"] = [{"snapshot-id": 1000, "statistics-path": f"{SRC}/metadata/s.puffin"}]
    raw = json.dumps(meta).encode()
    expected = [
        SRC,
        f"{SRC}/data",
        f"{SRC}/metadata/v1.metadata.json",
        f"{SRC}/metadata/snap-1000-1-abc.avro",
        f"{SRC}/metadata/m0.avro",
        f"{SRC}/metadata/snap-1001-1-abc.avro",
        f"{SRC}/metadata/snap-1002-1-abc.avro",
        f"{SRC}/metadata/s.puffin",
    ]
    # Then the job (from the text) and the parsed file give the same paths
    assert mj.referenced_paths_job("v2.metadata.json", raw) == expected
    assert mj.referenced_paths_job("v2.gz.metadata.json", gzip.compress(raw)) == expected
    assert mj.referenced_paths(json.loads(raw)) == expected
    # And a file of the wrong shape, or not JSON, is left to the parse, which says what is wrong
    meta["snapshots"][1]["manifest-list"] = 7
    for bad in (json.dumps(meta).encode(), b"{not json", gzip.compress(b"[1]")[:-3]):
        assert mj.referenced_paths_job("bad.metadata.json", bad) is None
    with pytest.raises(NotAMetadataFileError, match=r"snapshots\[1\]\.manifest-list"):
        mj.parse_metadata("bad.metadata.json", json.dumps(meta).encode())


def test_paths_proven_by_one_file_spare_the_next_their_proof_and_never_change_a_result() -> None:
    # Given a history's files, which name mostly the same paths, and a second table location
    # whose file names one of the first location's paths (a table moved in its own history)
    moved_to = "s3://src-bucket/wh/db/t_moved"
    both = PrefixMap([(SRC, DST), (moved_to, "s3://dst-bucket/lake/db/t_moved")])
    history = [_indented(_metadata(snapshots=n)) for n in (30, 31, 32)]
    moved = _metadata(location=moved_to, snapshots=4)
    moved["snapshots"][0]["manifest-list"] = f"{SRC}/metadata/snap-1000-1-abc.avro"
    proven: mj.Proven = {}
    asked: list[int] = []  # how many paths each file asked the map about
    calls: list[str] = []

    def counted(path: str) -> str:
        calls.append(path)
        return both.require(path)

    # When they are rewritten one after the other with one memo of proven paths
    outs = []
    for raw in [*history, _indented(moved)]:
        calls.clear()
        outs.append(mj.rewrite_metadata_bytes("v.metadata.json", raw, counted, _keep_all, proven))
        asked.append(len(calls))
    # Then each is what it is without the memo
    assert outs == [_rewrite(raw, both.require) for raw in [*history, _indented(moved)]]
    # ...the second and third files asked only about their location and what the first lacked
    # (a snapshot's manifest list and a log entry), where the first asked about every path
    assert asked[0] >= 60 and asked[1] <= 3 and asked[2] <= 3
    # ...and the memo is kept per location: the moved table's file proved its paths against its
    # own location (and, naming one outside it, was rewritten structurally)
    assert proven[SRC] >= set(mj.referenced_paths(json.loads(history[-1])))
    assert f"{SRC}/metadata/snap-1000-1-abc.avro" not in proven.get(moved_to, set())
    assert outs[-1] == _structural(_indented(moved), both.require)


def test_the_worker_processes_memo_is_one_per_prefix_map() -> None:
    assert mj.proven_paths(MAP) is mj.proven_paths(PrefixMap([(SRC, DST)]))
    other = mj.proven_paths(PrefixMap([(SRC, "s3://elsewhere/t")]))
    assert other == {} and other is not mj.proven_paths(MAP)
