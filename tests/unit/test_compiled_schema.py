"""A writer schema is compiled once per process, even when many threads meet it at once (an
estate's assessment starts its first 8 to 16 tables together, all with the same schemas)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from icelake.migrate.avro.binary import compiled_schema


def test_threads_meeting_a_new_schema_at_once_compile_it_once() -> None:
    # Given a compiler that is slow (as a real schema's patterns are) and counts its calls
    calls: list[dict[str, Any]] = []
    start = threading.Barrier(8)

    def compile_schema(schema: dict[str, Any]) -> str:
        calls.append(schema)
        time.sleep(0.2)
        return f"compiled {schema['name']}"

    text = json.dumps({"type": "record", "name": "once", "fields": []})

    def ask(_: int) -> str:
        start.wait()
        result: str = compiled_schema(compile_schema, text)
        return result

    # When 8 threads ask for the same new schema at the same moment
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, range(8)))

    # Then it was compiled once, and every thread got that one compilation
    assert len(calls) == 1 and results == ["compiled once"] * 8
