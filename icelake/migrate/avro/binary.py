"""Skippers compiled from an Avro writer schema, for the byte-level manifest tools: a record's
fields skipped one after another, each checking the bytes are the ones fastavro would write
(else `NotPatchable`), and runs of fields in the common shapes matched by one regular expression
(the primitives and their patterns are in `avro_primitives`). Compiled once per schema and
process (`compiled_schema`). Used by `avro_patch` (rewrite paths by splicing bytes) and
`avro_entries` (read the few fields planning needs)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from icelake.errors import NotPatchable
from icelake.migrate.avro.primitives import (
    ANY_BYTE,
    BOUND_ITEM,
    PRIMITIVES,
    SHORT,
    VARINT,
    Skip,
    pattern_of,
    read_long,
    skip_date,
    skip_int_bytes_pairs,
    skip_varints,
    with_pattern,
    zigzag,
)

SkipN = Callable[[bytes, int, int], int]
Span = tuple[int, int, int, int, int, int, int, int, int]


# The item's pattern is written once per item count: a big item (a manifest list's partition
# field summary, with two optional bounds, is 2 KB) is matched for the first few counts only, so
# that compiling the pattern (in every process, for every schema) takes a tenth of a second, not
# half a second; a longer array of such items goes to the skippers.
_ARRAY_PATTERN_BUDGET = 32 * 1024


def _array_pattern(item: bytes) -> bytes:
    """An array of fewer than 64 items (fewer still where the item's pattern is long) in one
    block, then the empty block that ends it."""
    most = min(len(SHORT) - 1, max(1, _ARRAY_PATTERN_BUDGET // max(1, len(item))))
    counted = (re.escape(zigzag(n)) + b"(?:" + item + b"){%d}" % n for n in range(1, most + 1))
    return rb"(?:\x00|(?:" + b"|".join(counted) + rb")\x00)"


class Compiler:
    """Turns an Avro schema into skip functions; a schema it does not know raises NotPatchable."""

    def __init__(self) -> None:
        self.named: dict[str, Skip] = {}
        self.namespace = ""

    def full_name(self, schema: dict[str, Any]) -> str:
        name = str(schema["name"])
        if "." in name:
            return name
        namespace = schema.get("namespace", self.namespace)
        return f"{namespace}.{name}" if namespace else name

    def skip(self, schema: Any) -> Skip:
        if isinstance(schema, str):
            return self.by_name(schema)
        if isinstance(schema, list):
            return self.union(schema)
        if not isinstance(schema, dict):
            raise NotPatchable(f"unknown schema {schema!r}")
        kind = schema.get("type")
        if kind == "record":
            return self.record(schema)
        if kind == "array":
            skip_items, item = self.items(schema["items"])
            return with_pattern(self.array(skip_items), None if item is None else _array_pattern(item))
        return self.named_type(schema)

    def by_name(self, name: str) -> Skip:
        if name in PRIMITIVES:
            return PRIMITIVES[name]
        for full in (name, f"{self.namespace}.{name}"):
            if full in self.named:
                return self.named[full]
        raise NotPatchable(f"unknown type {name}")

    def named_type(self, schema: dict[str, Any]) -> Skip:
        """Primitives spelled as objects (with a logical type or not), enums and fixed."""
        kind, logical = schema.get("type"), schema.get("logicalType")
        if kind in PRIMITIVES and logical is None:
            return self.by_name(str(kind))
        if kind == "int" and logical == "date":
            return skip_date
        if kind == "enum":
            skip = self.enum(len(schema["symbols"]))
        elif kind == "fixed" and logical is None:
            skip = with_pattern(_skip_fixed(int(schema["size"])), ANY_BYTE + b"{%d}" % int(schema["size"]))
        else:  # logical types fastavro may not round-trip, maps (a dict drops repeated keys)...
            raise NotPatchable(f"type {kind}/{logical}")
        self.named[self.full_name(schema)] = skip
        return skip

    def union(self, branches: list[Any]) -> Skip:
        if len(branches) != 2 or "null" not in branches or branches[0] == branches[1]:
            raise NotPatchable("only [null, T] unions")
        null_byte = zigzag(branches.index("null"))[0]
        other_byte = zigzag(1 - branches.index("null"))[0]
        other = branches[1 - branches.index("null")]
        if isinstance(other, dict) and other.get("type") == "array":
            skip_items, item = self.items(other["items"])
            inner_pattern = None if item is None else _array_pattern(item)
            skip: Skip = _optional_array(null_byte, other_byte, skip_items)
        else:
            inner = self.skip(other)
            inner_pattern = pattern_of(inner)

            def skip(buf: bytes, pos: int) -> int:
                b = buf[pos]
                if b == null_byte:
                    return pos + 1
                if b == other_byte:
                    return inner(buf, pos + 1)
                raise NotPatchable("union branch")

        if inner_pattern is None:
            return skip
        null, other_branch = re.escape(bytes([null_byte])), re.escape(bytes([other_byte]))
        return with_pattern(skip, b"(?:%s|%s%s)" % (null, other_branch, inner_pattern))

    def fields(self, schema: dict[str, Any]) -> list[Skip]:
        name = self.full_name(schema)
        outer, self.namespace = self.namespace, name.rpartition(".")[0]
        self.named[name] = unfinished
        try:
            return [self.skip(f["type"]) for f in schema["fields"]]
        finally:
            self.namespace = outer

    def record(self, schema: dict[str, Any]) -> Skip:
        fields = self.fields(schema)
        skip_all = chain(fields)
        self.named[self.full_name(schema)] = skip_all
        return skip_all

    def items(self, schema: Any) -> tuple[SkipN, bytes | None]:
        """A skipper of `n` array items and the pattern of one item (if it has one); Iceberg's
        int-keyed maps (key/value records) get a loop of their own."""
        if schema in ("int", "long"):
            return skip_varints, VARINT
        if isinstance(schema, dict) and schema.get("type") == "record":
            skip = self.record(schema)
            types = [f["type"] for f in schema["fields"]]
            if types and all(t in ("int", "long") for t in types):
                width = len(types)
                return (lambda buf, pos, n: skip_varints(buf, pos, n * width)), pattern_of(skip)
            if types == ["int", "bytes"]:
                return skip_int_bytes_pairs, BOUND_ITEM
        else:
            skip = self.skip(schema)

        def skip_items(buf: bytes, pos: int, n: int) -> int:
            for _ in range(n):
                pos = skip(buf, pos)
            return pos

        return skip_items, pattern_of(skip)

    @staticmethod
    def array(skip_items: SkipN) -> Skip:
        def skip_array(buf: bytes, pos: int) -> int:
            n, pos = read_long(buf, pos)
            if n == 0:
                return pos
            if n < 0:
                raise NotPatchable("array block with a byte size")
            pos = skip_items(buf, pos, n)
            if buf[pos] != 0:
                raise NotPatchable("array in more than one block")
            return pos + 1

        return skip_array

    @staticmethod
    def enum(symbols: int) -> Skip:
        def skip_enum(buf: bytes, pos: int) -> int:
            i, pos = read_long(buf, pos)
            if not 0 <= i < symbols:
                raise NotPatchable("enum index")
            return pos

        return skip_enum


def _optional_array(null_byte: int, other_byte: int, skip_items: SkipN) -> Skip:
    """`[null, array]` in one step: the six statistics maps of every data file are such unions,
    and one call per map instead of four is much of what reading an entry costs."""

    def skip_optional_array(buf: bytes, pos: int) -> int:
        b = buf[pos]
        if b == null_byte:
            return pos + 1
        if b != other_byte:
            raise NotPatchable("union branch")
        n = buf[pos + 1]
        if n == 0:
            return pos + 2
        if n < 0x80:  # a count below 64 is one byte; odd is negative (a block with a byte size)
            if n & 1:
                raise NotPatchable("array block with a byte size")
            pos = skip_items(buf, pos + 2, n >> 1)
        else:
            count, pos = read_long(buf, pos + 1)
            if count < 0:
                raise NotPatchable("array block with a byte size")
            pos = skip_items(buf, pos, count)
        if buf[pos] != 0:
            raise NotPatchable("array in more than one block")
        return pos + 1

    return skip_optional_array


def unfinished(buf: bytes, pos: int) -> int:
    raise NotPatchable("recursive type")


def _fuse_runs(fields: list[Skip]) -> list[Skip]:
    """Consecutive fields that all have a pattern as one skip: one match of their patterns, or,
    where it does not match, their skippers one after another (which read or refuse it)."""
    out: list[Skip] = []
    run: list[Skip] = []
    for skip in [*fields, None]:
        if skip is not None and pattern_of(skip) is not None:
            run.append(skip)
            continue
        if len(run) == 1 and run[0] in PRIMITIVES.values():
            out.append(run[0])  # a lone primitive: its own skipper is as quick
        elif run:
            out.append(_matched_run(run))
        run = []
        if skip is not None:
            out.append(skip)
    return out


def _matched_run(fields: list[Skip]) -> Skip:
    pattern = b"".join(pattern_of(f) or b"" for f in fields)
    match = re.compile(pattern).match
    slow = fields[0] if len(fields) == 1 else _chained(fields)

    def skip_run(buf: bytes, pos: int) -> int:
        found = match(buf, pos)
        return found.end() if found is not None else slow(buf, pos)

    return with_pattern(skip_run, pattern)


def _skip_fixed(size: int) -> Skip:
    def skip_fixed(buf: bytes, pos: int) -> int:
        return pos + size

    return skip_fixed


def chain(fields: list[Skip]) -> Skip:
    """One skip for `fields` in a row (a record's), their patterned runs matched at once."""
    fields = _fuse_runs(fields)
    return fields[0] if len(fields) == 1 else _chained(fields)


def _chained(fields: list[Skip]) -> Skip:
    def skip_record(buf: bytes, pos: int) -> int:
        for skip in fields:
            pos = skip(buf, pos)
        return pos

    return skip_record


_COMPILING = threading.RLock()


def compiled_schema(compile_schema: Callable[[dict[str, Any]], Any], schema_text: str) -> Any:
    """What `compile_schema` makes of a writer schema, once per schema and process: building the
    skippers and their patterns costs about a millisecond (0.3 s the first time), every manifest
    of a table has the same schema, and a table has thousands. One thread compiles while the
    others wait for it: an estate's assessment starts 8 to 16 tables at once, and each compiled the
    same schemas side by side (half the command's CPU at 40 tiny tables)."""
    with _COMPILING:
        return _compiled_schema(compile_schema, schema_text)


@lru_cache(maxsize=64)
def _compiled_schema(compile_schema: Callable[[dict[str, Any]], Any], schema_text: str) -> Any:
    return compile_schema(json.loads(schema_text))


def entry_compiler(schema: dict[str, Any]) -> tuple[Compiler, list[dict[str, Any]], list[str]]:
    """A compiler for a `manifest_entry` record schema, its fields and their names."""
    if schema.get("type") != "record":
        raise NotPatchable("not a record schema")
    c = Compiler()
    c.named[c.full_name(schema)] = unfinished
    entry_fields: list[dict[str, Any]] = schema["fields"]
    return c, entry_fields, [f["name"] for f in entry_fields]
