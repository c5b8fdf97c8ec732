"""The byte-level manifest rewrite (`avro_patch`) writes exactly what the fastavro path writes."""

from __future__ import annotations

import datetime
import functools
import io
import re
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icelake.errors import NotPatchable, UnsupportedFileError
from icelake.migrate.avro import binary as avro_binary
from icelake.migrate.avro import container as avro_container
from icelake.migrate.avro.binary import entry_compiler
from icelake.migrate.avro.files import (
    DELETE_FILE_PATH_FIELD_ID,
    DeleteRewrite,
    manifest_refs,
    manifest_refs_fastavro,
    rewrite_manifest,
    rewrite_manifest_fastavro,
    rewrite_manifest_list,
    rewrite_manifest_list_fastavro,
)
from icelake.migrate.avro.patch import (
    ListHeads,
    ListLayout,
    ListWalker,
    _ref_record,
    compile_list_layout,
    patch_manifest,
    patch_manifest_list,
    read_manifest_refs,
    splice_manifest,
)
from icelake.migrate.avro.primitives import (
    _skip_varints_slowly,
    read_long,
    skip_varints,
    zigzag,
)
from icelake.migrate.plan_scan import entry_fields_fastavro, planned_entries


def _kv(name: str, value: str) -> dict[str, Any]:
    return {
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": f"k_{name}",
            "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": value}],
        },
    }


def _opt(t: Any) -> list[Any]:
    return ["null", t]


PARTITION = {
    "type": "record",
    "name": "r102",
    "fields": [
        {"name": "ts_day", "type": _opt({"type": "int", "logicalType": "date"})},
        {"name": "region", "type": _opt("string")},
        {"name": "bucket", "type": _opt("int")},
        {"name": "flag", "type": _opt("boolean")},
        {"name": "ratio", "type": _opt("double")},
    ],
}


def entry_schema(version: int) -> dict[str, Any]:
    data_file: list[dict[str, Any]] = [{"name": "content", "type": "int"}] if version > 1 else []
    data_file += [
        {"name": "file_path", "type": "string"},
        {"name": "file_format", "type": "string"},
        {"name": "partition", "type": PARTITION},
        {"name": "record_count", "type": "long"},
        {"name": "file_size_in_bytes", "type": "long"},
        {"name": "column_sizes", "type": _opt(_kv("col_sizes", "long"))},
        {"name": "value_counts", "type": _opt(_kv("value_counts", "long"))},
        {"name": "lower_bounds", "type": _opt(_kv("lower", "bytes"))},
        {"name": "upper_bounds", "type": _opt(_kv("upper", "bytes"))},
        {"name": "key_metadata", "type": _opt("bytes")},
        {"name": "split_offsets", "type": _opt({"type": "array", "items": "long"})},
        {"name": "equality_ids", "type": _opt({"type": "array", "items": "int"})},
        {"name": "sort_order_id", "type": _opt("int")},
    ]
    if version > 2:
        data_file += [
            {"name": "first_row_id", "type": _opt("long")},
            {"name": "referenced_data_file", "type": _opt("string")},
            {"name": "content_offset", "type": _opt("long")},
            {"name": "content_size_in_bytes", "type": _opt("long")},
        ]
    head: list[dict[str, Any]] = [
        {"name": "status", "type": "int"},
        {"name": "snapshot_id", "type": _opt("long")},
    ]
    if version > 1:
        head += [
            {"name": "sequence_number", "type": _opt("long")},
            {"name": "file_sequence_number", "type": _opt("long")},
        ]
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            *head,
            {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": data_file}},
        ],
    }


paths = st.builds(
    lambda scheme, body: f"{scheme}://bucket/table/data/{body}.parquet",
    st.sampled_from(["s3", "s3a", "file"]),
    st.text(min_size=0, max_size=300),
)
longs = st.integers(-(2**63), 2**63 - 1)
ints = st.integers(-(2**31), 2**31 - 1)
DATA_CONTENTS = st.sampled_from([0, 2])  # data files, equality deletes


def optional(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | s


def kvs(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return optional(st.lists(st.fixed_dictionaries({"key": ints, "value": values}), max_size=12))


# Every strategy a draw uses is built once, here: Hypothesis validates a strategy the first time it
# draws from it, and strategies built inside each draw were validated again for every example (two
# thirds of this module's time went to building and validating them, not to the code under test).
FILE_FORMATS = st.sampled_from(["PARQUET", "AVRO", "ORC", "PUFFIN"])
PARTITION_FIELDS = {
    "ts_day": optional(st.dates()),
    "region": optional(st.text(max_size=20)),
    "bucket": optional(ints),
    "flag": optional(st.booleans()),
    "ratio": optional(st.floats(allow_nan=False)),
}
LONG_KVS = kvs(longs)
BOUND_KVS = kvs(st.binary(max_size=40))
DATA_FILE_OPTIONALS = {
    "key_metadata": optional(st.binary(max_size=20)),
    "split_offsets": optional(st.lists(longs, max_size=5)),
    "equality_ids": optional(st.lists(ints, max_size=3)),
    "sort_order_id": optional(ints),
    "first_row_id": optional(longs),
    "referenced_data_file": optional(st.just("") | paths),
    "content_offset": optional(longs),
    "content_size_in_bytes": optional(longs),
}
STATUSES = st.integers(0, 2)
OPTIONAL_LONGS = optional(longs)
VERSIONS = st.sampled_from([1, 2, 3])
CODECS = st.sampled_from(["null", "deflate"])
SYNC_INTERVALS = st.sampled_from([1, 700, 16000])  # source blocks of 1 record and up
SYNC_MARKERS = st.binary(min_size=16, max_size=16) | st.just(bytes(16))


@st.composite
def _entries(draw: st.DrawFn, content: st.SearchStrategy[int]) -> dict[str, Any]:
    df: dict[str, Any] = {
        "content": draw(content),
        "file_path": draw(paths),
        "file_format": draw(FILE_FORMATS),
        "partition": {name: draw(values) for name, values in PARTITION_FIELDS.items()},
        "record_count": draw(longs),
        "file_size_in_bytes": draw(longs),
        "column_sizes": draw(LONG_KVS),
        "value_counts": draw(LONG_KVS),
        "lower_bounds": draw(BOUND_KVS),
        "upper_bounds": draw(BOUND_KVS),
        **{name: draw(values) for name, values in DATA_FILE_OPTIONALS.items()},
    }
    return {
        "status": draw(STATUSES),
        "snapshot_id": draw(OPTIONAL_LONGS),
        "sequence_number": draw(OPTIONAL_LONGS),
        "file_sequence_number": draw(OPTIONAL_LONGS),
        "data_file": df,
    }


@functools.cache
def entries(content: st.SearchStrategy[int]) -> st.SearchStrategy[dict[str, Any]]:
    """A manifest entry whose content is drawn from `content` (built once per `content`)."""
    return _entries(content)


@functools.cache
def entry_lists(content: st.SearchStrategy[int]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Up to 60 manifest entries whose content is drawn from `content` (built once per `content`)."""
    return st.lists(entries(content), max_size=60)


V1_CONTENT = st.just(0)


@st.composite
def manifests(draw: st.DrawFn, content: st.SearchStrategy[int] = DATA_CONTENTS) -> bytes:
    version = draw(VERSIONS)
    records = draw(entry_lists(content if version > 1 else V1_CONTENT))
    out = io.BytesIO()
    fastavro.writer(
        out,
        fastavro.parse_schema(entry_schema(version)),
        records,
        codec=draw(CODECS),
        sync_interval=draw(SYNC_INTERVALS),
        metadata={"format-version": str(version), "content": "data", "schema": '{"a": "\u00e9"}'},
        sync_marker=draw(SYNC_MARKERS),
    )
    return out.getvalue()


def _map(path: str) -> str:
    return "s3://target/\u2603/" + path[::-1] * 3


def _try_map(path: str) -> str | None:
    return None if "x" in path else _map(path)


def _both(data: bytes, deletes: dict[str, DeleteRewrite]) -> tuple[bytes, list[str], bytes, list[str]]:
    fast_calls: list[str] = []
    slow_calls: list[str] = []

    def fast_map(p: str) -> str:
        fast_calls.append(p)
        return _map(p)

    def slow_map(p: str) -> str:
        slow_calls.append(p)
        return _map(p)

    fast = rewrite_manifest("m.avro", data, fast_map, _try_map, deletes)
    slow = rewrite_manifest_fastavro("m.avro", data, slow_map, _try_map, deletes)
    return fast, fast_calls, slow, slow_calls


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@SETTINGS
@given(manifests())
def test_data_manifests_are_patched_to_the_fastavro_bytes(data: bytes) -> None:
    # Given a data (or equality delete) manifest; When both paths rewrite it
    fast, fast_calls, slow, slow_calls = _both(data, {})
    # Then the bytes and the mapping calls are the same, and the byte patch did the work
    assert fast == slow
    assert fast_calls == slow_calls
    assert patch_manifest(data, _map, lambda p, c: c == 1) == slow


@pytest.mark.slow
@SETTINGS
@given(manifests(content=st.sampled_from([0, 1, 2])))
def test_a_data_manifest_spliced_where_the_plan_found_its_paths_is_the_fastavro_bytes(data: bytes) -> None:
    # Given a manifest as the plan reads it (where its entries' paths sit, for data manifests only:
    # every entry data, none with a referenced data file)
    entries, planned = planned_entries("m.avro", data)
    assert entries == entry_fields_fastavro("m.avro", data)
    if any(content or reference for _, content, _, _, reference, _ in entries):
        assert planned is None
        return
    assert planned is not None
    # When its rewrite splices the paths there; Then it writes the fastavro path's bytes
    calls: list[str] = []
    slow_calls: list[str] = []
    spliced = rewrite_manifest("m.avro", data, lambda p: (calls.append(p), _map(p))[1], _try_map, {}, planned)
    slow = rewrite_manifest_fastavro(
        "m.avro", data, lambda p: (slow_calls.append(p), _map(p))[1], _try_map, {}
    )
    assert spliced == slow and calls == slow_calls
    assert splice_manifest(data, planned, _map) == slow  # and it was the splice that did it


def test_a_splice_is_refused_for_bytes_other_than_those_planned_and_the_rewrite_is_still_right() -> None:
    # Given a data manifest as planned, and another one (different paths, same shape)
    def one(prefix: str) -> bytes:
        data_file = {"content": 0, "file_format": "PARQUET", "partition": {}, "record_count": 1}
        records = [
            {"status": 1, "data_file": {**data_file, "file_path": f"{prefix}/{i}", "file_size_in_bytes": i}}
            for i in range(40)
        ]
        out = io.BytesIO()
        fastavro.writer(out, fastavro.parse_schema(entry_schema(2)), records, codec="deflate")
        return out.getvalue()

    planned_data, other = one("s3://a/t/data"), one("s3://a/t/data/x")
    _, planned = planned_entries("m.avro", planned_data)
    assert planned is not None
    # When the other is spliced with the plan of the first: refused before any path is mapped
    with pytest.raises(NotPatchable, match="not the bytes the plan read"):
        splice_manifest(other, planned, lambda p: pytest.fail(f"mapped {p}"))
    # and its rewrite, given that plan, walks it as any other (same bytes as without a plan)
    assert rewrite_manifest("m.avro", other, _map, _try_map, {}, planned) == rewrite_manifest(
        "m.avro", other, _map, _try_map, {}
    )


@pytest.mark.slow
@SETTINGS
@given(manifests(content=st.sampled_from([0, 1, 2])), st.booleans())
def test_position_deletes_fall_back_with_the_same_bytes_and_calls(data: bytes, rewrite_all: bool) -> None:
    # Given manifests with position deletes, some of whose files were rewritten
    paths = [e["data_file"]["file_path"] for e in fastavro.reader(io.BytesIO(data))]  # type: ignore[call-overload,index]
    bound = DELETE_FILE_PATH_FIELD_ID
    deletes = {
        p: DeleteRewrite(size=5, lower_path=b"s3://x", column_sizes={bound: 1})
        for p in paths[:: 1 if rewrite_all else 3]
    }
    # When both paths rewrite them; Then nothing differs, not even the calls made to map paths
    fast, fast_calls, slow, slow_calls = _both(data, deletes)
    assert fast == slow
    assert fast_calls == slow_calls


def test_many_output_blocks_and_unicode_paths() -> None:
    # Given a manifest big enough for several output blocks, with long non-ASCII paths
    records = [
        {
            "status": 1,
            "snapshot_id": i,
            "sequence_number": None,
            "file_sequence_number": 3,
            "data_file": {
                "content": 0,
                "file_path": f"s3://b/t/data/\u00fc\U0001f600-{i}-" + "p" * (i % 500) + ".parquet",
                "file_format": "PARQUET",
                "partition": {"ts_day": None, "region": "\u4e2d", "bucket": i, "flag": True, "ratio": 0.5},
                "record_count": i,
                "file_size_in_bytes": 2**40 + i,
                "column_sizes": [{"key": k, "value": 10**k} for k in range(10)],
                "value_counts": [],
                "lower_bounds": [{"key": k, "value": b"\x00" * k} for k in range(10)],
                "upper_bounds": None,
                "key_metadata": None,
                "split_offsets": [4],
                "equality_ids": None,
                "sort_order_id": 0,
            },
        }
        for i in range(3000)
    ]
    out = io.BytesIO()
    fastavro.writer(
        out, fastavro.parse_schema(entry_schema(2)), records, codec="deflate", sync_marker=b"s" * 16
    )
    # When both paths rewrite it; Then the bytes are the same
    fast, _, slow, _ = _both(out.getvalue(), {})
    assert fast == slow
    assert fast.count(b"s" * 16) > 10


def test_what_the_patch_does_not_know_goes_the_fastavro_way() -> None:
    # Given a manifest whose partition holds a timestamp (a logical type the patch leaves to fastavro)
    schema = entry_schema(2)
    schema["fields"][-1]["type"]["fields"][3]["type"] = {
        "type": "record",
        "name": "r102",
        "fields": [{"name": "ts", "type": _opt({"type": "long", "logicalType": "timestamp-micros"})}],
    }
    record = {
        "status": 1,
        "snapshot_id": 1,
        "sequence_number": 1,
        "file_sequence_number": 1,
        "data_file": {
            "content": 0,
            "file_path": "s3://b/t/data/a.parquet",
            "file_format": "PARQUET",
            "partition": {"ts": None},
            "record_count": 1,
            "file_size_in_bytes": 1,
        },
    }
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record], codec="null")
    data = out.getvalue()
    # When it is rewritten; Then the patch declines and the result is still the fastavro one
    try:
        patch_manifest(data, _map, lambda p, c: False)
        raise AssertionError("expected NotPatchable")
    except NotPatchable:
        pass
    fast, _, slow, _ = _both(data, {})
    assert fast == slow


def test_a_path_that_is_not_utf8_is_left_to_fastavro() -> None:
    # Given a manifest whose file_path bytes are not UTF-8
    record = {
        "status": 1,
        "snapshot_id": None,
        "data_file": {
            "file_path": "s3://b/t/data/\u00e9.parquet",
            "file_format": "PARQUET",
            "partition": {"ts_day": None, "region": None, "bucket": None, "flag": None, "ratio": None},
            "record_count": 1,
            "file_size_in_bytes": 1,
        },
    }
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(entry_schema(1)), [record], codec="null")
    data = out.getvalue().replace("\u00e9".encode(), b"\xff\xfe")
    # When it is rewritten; Then the patch declines and fastavro's error is the one raised
    with pytest.raises(NotPatchable):
        patch_manifest(data, _map, lambda p, c: False)
    with pytest.raises(UnsupportedFileError):
        rewrite_manifest("m.avro", data, _map, _try_map, {})


@given(st.integers(-(2**63), 2**63 - 1) | st.integers(-10, 9000))
def test_zigzag_is_the_varint_fastavro_writes_for_every_long(n: int) -> None:
    """The table of short lengths and the encoder agree with fastavro's own long encoding, on
    both sides of the table's end (8,191 is the last two-byte varint)."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, "long", n)
    assert zigzag(n) == out.getvalue()
    assert read_long(zigzag(n), 0) == (n, len(out.getvalue()))


@given(st.lists(st.binary(min_size=1, max_size=11), min_size=1, max_size=12), st.integers(0, 3))
def test_varints_are_skipped_like_the_byte_loop_does(chunks: list[bytes], extra: int) -> None:
    """The regex skipper ends where the byte-by-byte loop ends, and refuses what it refuses
    (non-minimal or over-long varints, a buffer that ends inside one)."""
    valid = [zigzag(int.from_bytes(c[:8], "little", signed=True)) for c in chunks]  # int64 values
    buf = b"\x07" + b"".join(valid) + b"\x00" * extra
    assert skip_varints(buf, 1, len(valid)) == _skip_varints_slowly(buf, 1, len(valid)) == len(buf) - extra
    raw = b"\x07" + b"".join(chunks)  # arbitrary bytes: most are no valid varint run

    def outcome(skip: Any) -> object:
        try:
            return skip(raw, 1, len(chunks))
        except (NotPatchable, IndexError):
            return "refused"

    assert outcome(skip_varints) == outcome(_skip_varints_slowly)


@pytest.mark.parametrize("count", [3, 2**32, 2**62])
def test_a_damaged_count_of_more_varints_than_bytes_is_refused(count: int) -> None:
    # A count past what the pattern engine can repeat raised OverflowError, which no caller
    # took as "not patchable" (found by the pattern-run property test on a damaged entry)
    with pytest.raises(NotPatchable, match="past the end"):
        skip_varints(b"\x07\x02\x04", 1, count)


def _entry_skipper(version: int) -> Any:
    c, fields, _names = entry_compiler(entry_schema(version))
    return avro_binary.chain([c.skip(f["type"]) for f in fields])


@pytest.mark.slow
@SETTINGS
@given(st.sampled_from([1, 2, 3]), st.data())
def test_pattern_runs_end_where_the_skippers_end(version: int, data: st.DataObject) -> None:
    """A run of fields matched by one regular expression accepts only what the field skippers
    accept, and ends where they end: encoded entries (which the patterns take or leave to the
    skippers), and the same bytes damaged (a byte changed, a tail cut, bytes appended)."""
    record = data.draw(entries(DATA_CONTENTS if version > 1 else V1_CONTENT))
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(entry_schema(version)), record)
    encoded = out.getvalue()
    at = data.draw(st.integers(0, len(encoded) - 1))
    damaged = [
        encoded,
        encoded[:at] + bytes([data.draw(st.integers(0, 255))]) + encoded[at + 1 :],
        encoded[:at],
        encoded + data.draw(st.binary(max_size=4)),
    ]
    with_patterns = _entry_skipper(version)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(avro_binary, "pattern_of", lambda _skip: None)
        skippers_only = _entry_skipper(version)

    def outcome(skip: Any, buf: bytes) -> object:
        try:
            return skip(buf, 0)
        except (NotPatchable, IndexError, UnicodeDecodeError):
            return "refused"

    assert skippers_only(encoded, 0) == len(encoded)
    for buf in damaged:
        assert outcome(with_patterns, buf) == outcome(skippers_only, buf)


def test_common_entries_are_matched_by_one_pattern() -> None:
    """An entry of the usual shape (ASCII strings, a recent date, ten columns' statistics with
    short bounds) is skipped by pattern runs, not left to the field skippers."""
    schema = fastavro.parse_schema(entry_schema(2))
    stats = [{"key": k, "value": 1000 + k} for k in range(1, 11)]
    bounds = [{"key": k, "value": b"\x00\x01abcdefgh"} for k in range(1, 11)]
    record = {
        "status": 1,
        "snapshot_id": 123456789012345,
        "sequence_number": 7,
        "file_sequence_number": 7,
        "data_file": {
            "content": 0,
            "file_path": "s3://bucket/t/data/ts_day=2024-01-01/00000-0-a.parquet",
            "file_format": "PARQUET",
            "partition": {
                "ts_day": datetime.date(2024, 1, 1),
                "region": "eu",
                "bucket": 3,
                "flag": True,
                "ratio": 0.5,
            },
            "record_count": 1000,
            "file_size_in_bytes": 123456,
            "column_sizes": stats,
            "value_counts": stats,
            "lower_bounds": bounds,
            "upper_bounds": bounds,
            "key_metadata": None,
            "split_offsets": [4],
            "equality_ids": None,
            "sort_order_id": 0,
        },
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, record)
    encoded = out.getvalue()
    c, fields, names = entry_compiler(entry_schema(2))
    data_file = fields[names.index("data_file")]["type"]["fields"]
    after_path = avro_binary.chain([c.skip(f["type"]) for f in data_file[3:]])  # partition onwards
    start = encoded.index(b"PARQUET") + len(b"PARQUET")
    pattern = avro_binary.pattern_of(after_path)
    assert pattern is not None
    assert re.compile(pattern).match(encoded, start).end() == len(encoded) == after_path(encoded, start)


FIELD_SUMMARY = {
    "type": "record",
    "name": "r508",
    "fields": [
        {"name": "contains_null", "type": "boolean"},
        {"name": "contains_nan", "type": _opt("boolean")},
        {"name": "lower_bound", "type": _opt("bytes")},
        {"name": "upper_bound", "type": _opt("bytes")},
    ],
}


def manifest_list_schema(version: int) -> dict[str, Any]:
    """Iceberg's manifest_file record, as its writers declare it in each format version."""
    fields: list[dict[str, Any]] = [
        {"name": "manifest_path", "type": "string"},
        {"name": "manifest_length", "type": "long"},
        {"name": "partition_spec_id", "type": "int"},
    ]
    if version > 1:
        fields += [
            {"name": "content", "type": "int"},
            {"name": "sequence_number", "type": "long"},
            {"name": "min_sequence_number", "type": "long"},
        ]
    fields += [
        {"name": "added_snapshot_id", "type": "long" if version > 1 else _opt("long")},
        {"name": "added_files_count", "type": "int" if version > 1 else _opt("int")},
        {"name": "partitions", "type": _opt({"type": "array", "items": FIELD_SUMMARY})},
        {"name": "key_metadata", "type": _opt("bytes")},
    ]
    if version > 2:
        fields.append({"name": "first_row_id", "type": _opt("long")})
    return {"type": "record", "name": "manifest_file", "fields": fields}


def test_partition_summaries_are_skipped_alike_within_and_past_what_the_pattern_matches() -> None:
    """A list record's partition summaries (an item pattern of about 2 KB) are matched by the
    pattern for the first few counts only, which keeps it quick to compile in every process; any
    count, matched or left to the skippers, is skipped to the record's end."""
    schema = manifest_list_schema(2)
    c, fields, _names = entry_compiler(schema)
    skips = [c.skip(f["type"]) for f in fields]
    pattern = avro_binary.pattern_of(skips[[f["name"] for f in fields].index("partitions")])
    assert pattern is not None and len(pattern) < 2 * avro_binary._ARRAY_PATTERN_BUDGET
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(avro_binary, "pattern_of", lambda _skip: None)
        c2, _fields, _names = entry_compiler(schema)
        skippers_only = avro_binary.chain([c2.skip(f["type"]) for f in fields])
    summary = {"contains_null": True, "contains_nan": None, "lower_bound": b"\x01\x00", "upper_bound": b"zz"}
    matched = []
    for count in range(70):
        record = {
            "manifest_path": "s3://b/t/metadata/m.avro",
            "manifest_length": 4096,
            "partition_spec_id": 0,
            "content": 0,
            "sequence_number": 7,
            "min_sequence_number": 7,
            "added_snapshot_id": 1,
            "added_files_count": 3,
            "partitions": [summary] * count,
            "key_metadata": None,
        }
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
        encoded = out.getvalue()
        assert avro_binary.chain(skips)(encoded, 0) == skippers_only(encoded, 0) == len(encoded), count
        found = re.compile(pattern).match(encoded, len(encoded) - len(_tail(record)))
        matched.append(found is not None and found.end() == len(encoded) - 1)  # up to key_metadata
    # the pattern takes the arrays of up to some count whole (a partition spec's few fields), and
    # leaves the longer ones to the skippers
    most = matched.index(False, 1) - 1
    assert 4 <= most < 63
    assert matched == [True] * (most + 1) + [False] * (70 - most - 1)


def _tail(record: dict[str, Any]) -> bytes:
    """The encoding of a list record's partitions and key_metadata (the record's last fields)."""
    tail_schema = {
        "type": "record",
        "name": "tail",
        "fields": [
            {"name": "partitions", "type": _opt({"type": "array", "items": FIELD_SUMMARY})},
            {"name": "key_metadata", "type": _opt("bytes")},
        ],
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(tail_schema), record)
    return out.getvalue()


LONGS = st.integers(-(2**63), 2**63 - 1)


SUMMARIES = st.fixed_dictionaries(
    {
        "contains_null": st.booleans(),
        "contains_nan": st.none() | st.booleans(),
        "lower_bound": st.none() | st.binary(max_size=20),
        "upper_bound": st.none() | st.binary(max_size=20),
    }
)
LIST_RECORDS = st.lists(
    st.fixed_dictionaries(
        {
            "manifest_path": st.text(min_size=1, max_size=80).map(lambda s: f"s3://b/t/metadata/{s}.avro"),
            "manifest_length": st.integers(0, 2**40),
            "partition_spec_id": st.integers(0, 5),
            "content": st.sampled_from([0, 1]),
            "sequence_number": LONGS,
            "min_sequence_number": LONGS,
            "added_snapshot_id": LONGS,
            "added_files_count": st.integers(0, 2**31 - 1),
            "partitions": st.none() | st.lists(SUMMARIES, max_size=4),
            "key_metadata": st.none() | st.binary(max_size=8),
            "first_row_id": st.none() | LONGS,
        }
    ),
    min_size=1,
    max_size=120,
    unique_by=lambda r: r["manifest_path"],
)
LENGTHS = st.integers(0, 2**40)


@st.composite
def manifest_lists(draw: st.DrawFn) -> tuple[bytes, dict[str, int]]:
    version = draw(VERSIONS)
    records = draw(LIST_RECORDS)
    out = io.BytesIO()
    fastavro.writer(
        out,
        fastavro.parse_schema(manifest_list_schema(version)),
        records,
        codec=draw(CODECS),
        sync_interval=draw(SYNC_INTERVALS),
        metadata={"format-version": str(version), "snapshot-id": "1"},
        # random, as writers make them, or all zeros: bytes that also occur inside the header
        sync_marker=draw(SYNC_MARKERS),
    )
    lengths = {r["manifest_path"]: draw(LENGTHS) for r in records}
    return out.getvalue(), lengths


@SETTINGS
@given(manifest_lists())
def test_manifest_lists_are_patched_to_the_fastavro_bytes(
    data_and_lengths: tuple[bytes, dict[str, int]],
) -> None:
    # Given a manifest list of any format version, and the new length of each of its manifests
    data, lengths = data_and_lengths
    # When the list is rewritten; Then it is exactly what fastavro writes, and the patch did it
    slow = rewrite_manifest_list_fastavro("snap.avro", data, _map, lengths)
    assert rewrite_manifest_list("snap.avro", data, ListHeads(_map, lengths)) == slow
    assert patch_manifest_list(data, ListHeads(_map, lengths)) == slow
    # And heads shared with earlier lists (every head then found, not made) give the same bytes
    shared = ListHeads(_map, lengths)
    assert patch_manifest_list(data, shared) == patch_manifest_list(data, shared) == slow
    rewritten = list(fastavro.reader(io.BytesIO(slow)))
    assert [(r["manifest_path"], r["manifest_length"]) for r in rewritten] == [  # type: ignore[index,call-overload]
        (_map(p), n) for p, n in lengths.items()
    ]


VERSION_RUNS = st.lists(VERSIONS, min_size=2, max_size=5)


@st.composite
def list_histories(draw: st.DrawFn) -> tuple[list[bytes], dict[str, int]]:
    """The lists of a table's snapshots: each names some of the table's manifests, mostly with the
    record bytes other lists have for them, sometimes with a field changed, in the format version
    of its time (a table upgraded from v1 to v2 has lists of both)."""
    pool = draw(manifest_lists())
    records: list[dict[str, Any]] = []
    for read in fastavro.reader(io.BytesIO(pool[0])):
        record = {"content": 0, "sequence_number": 0, "min_sequence_number": 0, "first_row_id": None}
        record.update(read)  # type: ignore[call-overload]
        for key in ("added_snapshot_id", "added_files_count"):  # optional in v1 only
            record[key] = 1 if record[key] is None else record[key]
        records.append(record)
    lists = []
    for version in sorted(draw(VERSION_RUNS)):
        named = [dict(r) for r in records if draw(st.booleans())]
        for record in named:
            if draw(st.integers(0, 5)) == 0:  # this list's record for the manifest differs
                record["added_files_count"] = draw(st.integers(0, 2**31 - 1))
        out = io.BytesIO()
        fastavro.writer(out, fastavro.parse_schema(manifest_list_schema(version)), named, codec="deflate")
        lists.append(out.getvalue())
    return lists, pool[1]


@pytest.mark.slow
@SETTINGS
@given(list_histories())
def test_lists_rewritten_with_shared_heads_each_give_the_fastavro_bytes(
    history: tuple[list[bytes], dict[str, int]],
) -> None:
    # Given the lists of a table's history (v1 then v2 schemas, a manifest's record sometimes
    # changed), rewritten one after another with the heads made for those before them
    lists, lengths = history
    shared = ListHeads(_map, lengths)
    # Then each list is exactly what fastavro writes for it alone
    for data in lists:
        slow = rewrite_manifest_list_fastavro("s.avro", data, _map, lengths)
        assert patch_manifest_list(data, shared) == slow


def _list_file(records: list[dict[str, Any]], version: int, sync_interval: int = 16000) -> bytes:
    out = io.BytesIO()
    schema = fastavro.parse_schema(manifest_list_schema(version))
    fastavro.writer(
        out, schema, records, codec="deflate", sync_interval=sync_interval, sync_marker=bytes(range(16))
    )
    return out.getvalue()


def _counting_refs_walker() -> tuple[ListWalker[ListLayout, tuple[str, int, int]], list[int]]:
    """A walker of manifest refs, and a list that grows by one for each record it walks."""
    walked: list[int] = []

    def walk_record(layout: ListLayout, buf: bytes, pos: int) -> tuple[tuple[str, int, int], int]:
        walked.append(pos)
        return _ref_record(layout, buf, pos)

    return ListWalker(compile_list_layout, walk_record), walked


@SETTINGS
@given(manifest_lists(), st.sampled_from([1, 700, 16000]), st.integers(1, 3))
def test_a_history_of_appends_is_read_and_rewritten_walking_only_each_lists_new_records(
    pool: tuple[bytes, dict[str, int]], sync_interval: int, added: int
) -> None:
    # Given the lists of a table's appends, oldest first: each names the manifests its snapshot
    # added, then every record of its parent's list (as Iceberg's appends write them), framed into
    # blocks of any size
    data, lengths = pool
    version = int(fastavro.reader(io.BytesIO(data)).metadata["format-version"])
    records = list(fastavro.reader(io.BytesIO(data)))
    lists, named = [], []
    for start in range(0, len(records), added):
        named = records[start : start + added] + named
        lists.append(_list_file(named, version, sync_interval))  # type: ignore[arg-type]
    # When one walker reads them all, and one rewrite (its heads) rewrites them all
    walker, walked = _counting_refs_walker()
    heads = ListHeads(_map, lengths)
    for listed in lists:
        # Then each list reads and rewrites exactly as fastavro decodes and writes it alone
        assert walker.walk(listed)[2] == [
            (r.path, r.length, r.content) for r in manifest_refs_fastavro("s", listed)
        ]
        assert patch_manifest_list(listed, heads) == rewrite_manifest_list_fastavro(
            "s", listed, _map, lengths
        )
    # And each record was walked once, in the list that added it
    assert len(walked) == len(records)


def test_a_list_ending_with_the_last_lists_bytes_inside_a_record_is_walked_whole() -> None:
    # Given a list read first, and a list whose one record ends with that list's record bytes
    # (they are its key_metadata): its bytes end with the first list's, but not at a record start
    base = {"partition_spec_id": 0, "content": 0, "sequence_number": 1, "min_sequence_number": 1}
    base |= {"added_snapshot_id": 1, "added_files_count": 1, "partitions": None, "key_metadata": None}
    inner = base | {"manifest_path": "s3://b/t/metadata/inner.avro", "manifest_length": 5}
    first = _list_file([inner], 2)
    header = avro_container.read_header(first)
    [(_count, inner_bytes)] = avro_container.blocks(first, header, "deflate")
    outer = base | {"manifest_path": "s3://b/t/metadata/outer.avro", "manifest_length": 9}
    second = _list_file([outer | {"key_metadata": inner_bytes}], 2)
    walker, walked = _counting_refs_walker()
    walker.walk(first)
    # When the walker reads the second list after the first
    refs = walker.walk(second)[2]
    # Then it walked the second list's record, and read it as fastavro decodes it
    assert len(walked) == 2
    assert refs == [("s3://b/t/metadata/outer.avro", 9, 0)]
    assert refs == [(r.path, r.length, r.content) for r in manifest_refs_fastavro("s", second)]


def test_a_sync_marker_whose_bytes_occur_in_the_header_is_written_readably() -> None:
    # Given a manifest list whose sync marker (all zeros) also occurs inside fastavro's header
    out = io.BytesIO()
    records = [
        {
            "manifest_path": f"s3://b/t/metadata/m{i}.avro",
            "manifest_length": 100,
            "partition_spec_id": 0,
            "content": 0,
            "sequence_number": i,
            "min_sequence_number": i,
            "added_snapshot_id": i,
            "added_files_count": 1,
            "partitions": None,
            "key_metadata": None,
            "first_row_id": None,
        }
        for i in range(3)
    ]
    fastavro.writer(
        out,
        fastavro.parse_schema(manifest_list_schema(2)),
        records,
        metadata={"format-version": "2"},
        sync_marker=bytes(16),
    )
    lengths = {r["manifest_path"]: 7 for r in records}
    # When the fastavro path and the byte patch rewrite it
    slow = rewrite_manifest_list_fastavro("snap.avro", out.getvalue(), _map, lengths)
    fast = patch_manifest_list(out.getvalue(), ListHeads(_map, lengths))
    # Then both are the same file, which fastavro reads with every path mapped and length replaced
    assert fast == slow
    assert [(r["manifest_path"], r["manifest_length"]) for r in fastavro.reader(io.BytesIO(slow))] == [  # type: ignore[index,call-overload]
        (_map(r["manifest_path"]), 7) for r in records
    ]


def test_a_manifest_list_the_patch_does_not_know_goes_the_fastavro_way() -> None:
    schema = manifest_list_schema(2)
    schema["fields"][:2] = schema["fields"][1::-1]  # manifest_length first
    out = io.BytesIO()
    record = {"manifest_path": "s3://b/m.avro", "manifest_length": 7, "partition_spec_id": 0, "content": 0}
    record |= {"sequence_number": 1, "min_sequence_number": 1, "added_snapshot_id": 1}
    record |= {"added_files_count": 1, "partitions": None, "key_metadata": None}
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    data = out.getvalue()
    with pytest.raises(NotPatchable, match="do not start with manifest_path"):
        patch_manifest_list(data, ListHeads(_map, {"s3://b/m.avro": 9}))
    [rewritten] = fastavro.reader(
        io.BytesIO(rewrite_manifest_list("l.avro", data, ListHeads(_map, {"s3://b/m.avro": 9})))
    )
    assert rewritten["manifest_path"] == _map("s3://b/m.avro") and rewritten["manifest_length"] == 9  # type: ignore[call-overload]


@pytest.mark.slow
@SETTINGS
@given(manifest_lists())
def test_manifest_refs_are_read_from_the_bytes_as_fastavro_decodes_them(
    given: tuple[bytes, dict[str, int]],
) -> None:
    data, _lengths = given
    assert read_manifest_refs(data) == [
        (r.path, r.length, r.content) for r in manifest_refs_fastavro("snap.avro", data)
    ]
    assert manifest_refs("snap.avro", data) == manifest_refs_fastavro("snap.avro", data)
