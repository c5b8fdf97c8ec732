"""Planning's reader of manifest entries (`plan_scan`) gives exactly what the fastavro path gives."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable
from typing import Any

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icelake.errors import NotPatchable
from icelake.migrate.avro.entries import read_entry_fields
from icelake.migrate.plan_scan import (
    entry_fields,
    entry_fields_fastavro,
    map_ahead,
    map_in_chunks,
    map_unordered,
)
from tests.unit.test_avro_patch import SETTINGS, manifests


def _same(data: bytes) -> Any:
    """Both readers' result, or both readers' error (type and message)."""
    outcomes = []
    for read in (entry_fields, entry_fields_fastavro):
        try:
            outcomes.append(read("m.avro", data))
        except Exception as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}")
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


@pytest.mark.slow
@SETTINGS
@given(manifests(content=st.sampled_from([0, 1, 2])))
def test_entry_fields_equal_the_fastavro_decode(data: bytes) -> None:
    # Given a v1/v2/v3 manifest of data files, position and equality deletes
    # When both readers read it; Then they give the same fields
    fields = _same(data)
    # and the fast reader does read it itself
    assert read_entry_fields(data, lambda _schema: True) == fields


@pytest.mark.slow
@SETTINGS
@given(manifests(content=st.sampled_from([0, 1, 2])), st.data())
def test_damaged_manifests_give_the_fastavro_result(data: bytes, draw: st.DataObject) -> None:
    # Given a manifest cut short or with a byte changed
    at = draw.draw(st.integers(0, max(0, len(data) - 1)))
    damaged = draw.draw(
        st.sampled_from([data[:at], data[:at] + bytes([(data[at] + 1) % 256]) + data[at + 1 :]])
    )
    # When both readers read it; Then they give the same fields or the same error
    _same(damaged)


def _manifest(schema: dict[str, Any], records: list[dict[str, Any]], codec: str = "null") -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec)
    return out.getvalue()


def _entry(**data_file: Any) -> dict[str, Any]:
    df = {
        "content": 1,
        "file_path": "s3://b/t/data/d.parquet",
        "file_format": "PARQUET",
        "partition": {},
        "record_count": 1,
        "file_size_in_bytes": 10,
        "referenced_data_file": "s3://b/t/data/x.parquet",
        **data_file,
    }
    return {"status": 1, "data_file": df}


def _schema(
    status: Any = "int", size: Any = "long", reference: Any = ("null", "string"), first: str = "status"
) -> dict[str, Any]:
    df = {
        "type": "record",
        "name": "r2",
        "fields": [
            {"name": "content", "type": "int"},
            {"name": "file_path", "type": "string"},
            {"name": "file_format", "type": "string"},
            {"name": "partition", "type": {"type": "record", "name": "r102", "fields": []}},
            {"name": "record_count", "type": "long"},
            {"name": "file_size_in_bytes", "type": size},
            {"name": "referenced_data_file", "type": list(reference)},
        ],
    }
    fields = [{"name": "status", "type": status}, {"name": "data_file", "type": df}]
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": fields if first == "status" else fields[::-1],
    }


@pytest.mark.parametrize(
    ("schema", "codec", "fast"),
    [
        (_schema(), "deflate", True),
        (_schema(size="int"), "null", True),
        (_schema(status="long"), "null", True),
        (_schema(status=["null", "int"]), "null", False),  # a union status: fastavro's way
        (_schema(reference=("string", "null")), "null", False),
        (_schema(first="data_file"), "null", False),  # status after data_file
        (_schema(), "bzip2", False),
    ],
)
def test_schemas_and_codecs_it_does_not_read_go_the_fastavro_way(
    schema: dict[str, Any], codec: str, fast: bool
) -> None:
    data = _manifest(schema, [_entry(), _entry(content=0, referenced_data_file=None)], codec)
    # When both readers read it; Then the fields are the same
    assert _same(data) == [
        (1, 1, "s3://b/t/data/d.parquet", 10, "s3://b/t/data/x.parquet", "PARQUET"),
        (1, 0, "s3://b/t/data/d.parquet", 10, None, None),
    ]
    # and the fast reader reads only what it knows
    try:
        read_entry_fields(data, lambda _schema: True)
        assert fast
    except NotPatchable:
        assert not fast


def test_a_missing_field_gives_the_fastavro_error() -> None:
    # Given manifests whose data_file lacks a field planning needs
    for missing in ("file_size_in_bytes", "file_format", "file_path"):
        schema = _schema()
        schema["fields"][1]["type"]["fields"] = [
            f for f in schema["fields"][1]["type"]["fields"] if f["name"] != missing
        ]
        entry = _entry()
        del entry["data_file"][missing]
        # Then both readers give the same KeyError
        assert str(_same(_manifest(schema, [entry]))).startswith("KeyError"), missing


def test_a_schema_the_decoder_refuses_is_left_to_it() -> None:
    data = _manifest(_schema(), [_entry()])
    seen: list[str] = []
    # Then the reader only reads files whose writer schema the decoder accepts
    assert read_entry_fields(data, lambda s: bool(seen.append(s)) or True)
    assert json.loads(seen[0])["name"] == "manifest_entry"
    with pytest.raises(NotPatchable):
        read_entry_fields(data, lambda _s: False)


@pytest.mark.parametrize(("n", "workers"), [(0, 4), (1, 4), (7, 2), (1000, 3), (5000, 16)])
def test_map_in_chunks_is_pool_map(n: int, workers: int) -> None:
    threads: set[int] = set()

    def square(i: int) -> int:
        threads.add(threading.get_ident())
        return i * i

    assert map_in_chunks(square, list(range(n)), workers) == [i * i for i in range(n)]
    assert len(threads) <= workers


def test_map_in_chunks_raises_the_first_error_in_order() -> None:
    def fail(i: int) -> int:
        if i in (700, 300):
            raise ValueError(i)
        return i

    with pytest.raises(ValueError, match=r"^300$"):
        map_in_chunks(fail, list(range(1000)), 4)


class _InFlight:
    """A call that squares its item after `delay(item)` seconds, recording, as each call starts,
    how many calls have started beyond the results the test has consumed (it counts them)."""

    def __init__(self, delay: Callable[[int], float]) -> None:
        self.delay = delay
        self.started: list[int] = []
        self.ahead: list[int] = []
        self.consumed = 0
        self._lock = threading.Lock()

    def __call__(self, i: int) -> int:
        with self._lock:
            self.started.append(i)
            self.ahead.append(len(self.started) - self.consumed)
        threading.Event().wait(self.delay(i))
        return i * i


def test_map_ahead_yields_in_order_with_a_bounded_number_in_flight() -> None:
    # Given calls that finish in reverse order of submission (later items are faster)
    fetch = _InFlight(lambda i: (20 - i % 20) / 2000)
    # When they are mapped ahead on 3 threads and consumed one by one
    out = []
    for value in map_ahead(fetch, range(60), 3):
        out.append(value)
        fetch.consumed += 1
    # Then the results come in item order, every item once
    assert out == [i * i for i in range(60)]
    assert sorted(fetch.started) == list(range(60))
    # and never more than 2 x 3 items were started ahead of what was consumed
    assert max(fetch.ahead) <= 6


def test_map_ahead_raises_the_first_failure_in_order_and_starts_no_more() -> None:
    # Given item 5 fails
    started: list[int] = []

    def fetch(i: int) -> int:
        started.append(i)
        if i == 5:
            raise ValueError(f"item {i} is bad")
        return i

    # When mapped ahead on 2 threads, Then items 0-4 come first, then item 5's error
    out = []
    with pytest.raises(ValueError, match="item 5 is bad"):
        for value in map_ahead(fetch, range(1000), 2):
            out.append(value)
    assert out == [0, 1, 2, 3, 4]
    # and the rest of the thousand items was never started
    assert len(started) < 20


def test_map_unordered_yields_every_result_with_a_bounded_number_in_flight() -> None:
    # Given calls that take different times (item 0 the longest)
    copy = _InFlight(lambda i: 0.05 if i == 0 else (i % 7) / 5000)
    # When they are mapped on 3 threads and consumed as they come
    out = []
    for value in map_unordered(copy, range(200), 3):
        out.append(value)
        copy.consumed += 1
    # Then every result comes once, not held behind the slow first item, and never more than
    # 2 x 3 items were started ahead of what was consumed
    assert sorted(out) == [i * i for i in range(200)] and out[0] != 0
    assert sorted(copy.started) == list(range(200))
    assert max(copy.ahead) <= 6


def test_map_unordered_raises_a_failure_and_starts_no_more() -> None:
    started: list[int] = []

    def copy(i: int) -> int:
        started.append(i)
        if i == 5:
            raise ValueError(i)
        return i

    with pytest.raises(ValueError, match=r"^5$"):
        list(map_unordered(copy, range(10_000), 4))
    assert len(started) < 100  # not the other 9,995
