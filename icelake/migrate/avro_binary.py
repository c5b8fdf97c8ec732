"""Avro's binary encoding as fastavro writes it, for the byte-level manifest tools: varints,
skippers compiled from a writer schema (each checks the bytes are the ones fastavro would write,
else `NotPatchable`; runs of fields in the common shapes are matched by one regular expression),
the file header and its blocks. Used by `avro_patch` (rewrite paths by
splicing bytes) and `avro_entries` (read the few fields planning needs)."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from icelake.errors import NotPatchable

# fastavro's Writer closes a block once its buffer holds this many bytes (1000 * SYNC_SIZE).
SYNC_INTERVAL = 16000
MAGIC = b"Obj\x01"
SYNC_SIZE = 16

# datetime.date(1970, 1, 1).toordinal(), and the ordinals datetime.date accepts.
_DAYS_SHIFT = 719163
_MIN_ORDINAL, _MAX_ORDINAL = 1, 3652059

Skip = Callable[[bytes, int], int]
SkipN = Callable[[bytes, int, int], int]
Span = tuple[int, int, int, int, int, int, int, int, int]


def zigzag(n: int) -> bytes:
    """`n` as a zigzag varint: from a table for the lengths and counts a rewrite writes a million
    times (each path's length), else encoded."""
    if 0 <= n < _ZIGZAG_TABLE_SIZE:
        return _ZIGZAG[n]
    return _zigzag(n)


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_ZIGZAG_TABLE_SIZE = 8192  # every length whose varint is at most two bytes
_ZIGZAG = [_zigzag(n) for n in range(_ZIGZAG_TABLE_SIZE)]


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint as fastavro writes it (minimal, at most 64 bits); anything else is refused."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    start = pos
    n = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    _check_varint_end(b, pos - start)
    return (n >> 1) ^ -(n & 1), pos


def _check_varint_end(last: int, length: int) -> None:
    if last == 0 or length > 10 or (length == 10 and last > 1):
        raise NotPatchable("varint not in minimal 64-bit form")


# One varint as fastavro writes it: a single byte, or continuation bytes ending in a non-zero byte
# (minimal form), at most 10 bytes of which the last holds bit 63 only.
_VARINT = rb"(?:[\x00-\x7f]|[\x80-\xff]{1,8}[\x01-\x7f]|[\x80-\xff]{9}\x01)"


@lru_cache(maxsize=512)
def _varints(count: int) -> re.Pattern[bytes]:
    return re.compile(_VARINT + b"{%d}" % count)


def skip_varints(buf: bytes, pos: int, count: int) -> int:
    """Past `count` varints. Matched by the regex engine: the statistics maps of every manifest
    entry are runs of varints, and a Python loop over their bytes was most of a manifest's cost.
    A varint boundary is where a byte below 0x80 is, so each repetition matches one way only."""
    if count <= 0:
        return pos
    if count > len(buf) - pos:  # a varint is a byte at least; a damaged count may exceed what a
        raise NotPatchable("varints past the end")  # pattern can repeat (OverflowError)
    found = _varints(count).match(buf, pos)
    if found is None:
        _skip_varints_slowly(buf, pos, count)  # raises what is wrong: the end, or a bad varint
        raise NotPatchable("varints")  # pragma: no cover - the slow path found them all valid
    return found.end()


def _skip_varints_slowly(buf: bytes, pos: int, count: int) -> int:
    for _ in range(count):
        b = buf[pos]
        pos += 1
        if b & 0x80:
            start = pos - 1
            while b & 0x80:
                b = buf[pos]
                pos += 1
            _check_varint_end(b, pos - start)
    return pos


def _skip_long(buf: bytes, pos: int) -> int:
    if buf[pos] < 0x80:
        return pos + 1
    return skip_varints(buf, pos, 1)


def _skip_bytes(buf: bytes, pos: int) -> int:
    n, pos = read_long(buf, pos)
    if n < 0 or pos + n > len(buf):
        raise NotPatchable("bad bytes length")
    return pos + n


def _skip_string(buf: bytes, pos: int) -> int:
    n, start = read_long(buf, pos)
    end = start + n
    if n < 0 or end > len(buf):
        raise NotPatchable("bad string length")
    if n:
        buf[start:end].decode()  # fastavro refuses invalid UTF-8: so must the copy
    return end


def _skip_int_bytes_pairs(buf: bytes, pos: int, n: int) -> int:
    """`n` {key: int, value: bytes} records: the lower and upper bounds maps."""
    for _ in range(n):
        if buf[pos] < 0x80:
            pos += 1
        else:
            pos = skip_varints(buf, pos, 1)
        size = buf[pos]
        if size < 0x80:  # a length below 64: its varint is one byte
            if size & 1:
                raise NotPatchable("negative bytes length")
            pos += 1 + (size >> 1)
        else:
            pos = _skip_bytes(buf, pos)
    return pos


def _skip_boolean(buf: bytes, pos: int) -> int:
    if buf[pos] > 1:
        raise NotPatchable("boolean byte is not 0 or 1")
    return pos + 1


def _skip_float(buf: bytes, pos: int) -> int:
    # A float goes through a C double in fastavro: a NaN may come back with another payload.
    if (
        (buf[pos + 3] & 0x7F) == 0x7F
        and (buf[pos + 2] & 0x80)
        and (buf[pos + 2] & 0x7F or buf[pos + 1] or buf[pos])
    ):
        raise NotPatchable("float NaN")
    return pos + 4


def _skip_double(buf: bytes, pos: int) -> int:
    return pos + 8


def skip_null(buf: bytes, pos: int) -> int:
    return pos


def _skip_date(buf: bytes, pos: int) -> int:
    days, end = read_long(buf, pos)
    if not _MIN_ORDINAL <= days + _DAYS_SHIFT <= _MAX_ORDINAL:
        raise NotPatchable("date fastavro cannot read")
    return end


_PRIMITIVES: dict[str, Skip] = {
    "null": skip_null,
    "boolean": _skip_boolean,
    "int": _skip_long,
    "long": _skip_long,
    "float": _skip_float,
    "double": _skip_double,
    "bytes": _skip_bytes,
    "string": _skip_string,
}


# Regular expressions of the encodings a skipper accepts, for the common shapes only: a run of
# fields whose skippers all have one is skipped by one match of their concatenation (one C call
# per record instead of a Python call per field, most of what reading a manifest entry cost).
# Each pattern matches only byte strings its skipper accepts whole, so a match ends where the
# skipper would end (an Avro value's encoding is self-delimiting: there is one way to split a
# match). What a pattern leaves out (strings of 64 bytes or more, non-ASCII strings, arrays of
# 64 items or more, dates before 1947 or after 4840, floats, enums) goes to the skippers, which
# read or refuse it as before.
_ANY = rb"[\x00-\xff]"
_SHORT = range(64)  # lengths and counts whose varint is one byte: (2 * n).to_bytes()


def _length_prefixed(unit: bytes, below: int = len(_SHORT)) -> bytes:
    """A length below `below` (at most 64) and that many `unit`s: bytes (any) or strings (ASCII:
    valid UTF-8)."""
    lengths = _SHORT[:below]
    return b"(?:" + b"|".join(re.escape(zigzag(n)) + unit + b"{%d}" % n for n in lengths) + b")"


# A bound of the statistics maps: Iceberg truncates string and binary bounds to 16 bytes, and
# other types' bounds are at most that. The pattern is kept short: it is repeated for every
# item count of two maps, and compiling it is paid once per schema in every process.
_BOUND_ITEM = _VARINT + _length_prefixed(_ANY, below=17)


# The item's pattern is written once per item count: a big item (a manifest list's partition
# field summary, with two optional bounds, is 2 KB) is matched for the first few counts only, so
# that compiling the pattern (in every process, for every schema) takes a tenth of a second, not
# half a second; a longer array of such items goes to the skippers.
_ARRAY_PATTERN_BUDGET = 32 * 1024


def _array_pattern(item: bytes) -> bytes:
    """An array of fewer than 64 items (fewer still where the item's pattern is long) in one
    block, then the empty block that ends it."""
    most = min(len(_SHORT) - 1, max(1, _ARRAY_PATTERN_BUDGET // max(1, len(item))))
    counted = (re.escape(zigzag(n)) + b"(?:" + item + b"){%d}" % n for n in range(1, most + 1))
    return rb"(?:\x00|(?:" + b"|".join(counted) + rb")\x00)"


# A date fastavro can read whatever its bytes: one or two varint bytes (|days| <= 8192), or three
# whose first is even (zigzag's sign bit clear: 8,192 to 1,048,575 days, up to the year 4840).
_EVEN_CONTINUATION = b"[" + b"".join(re.escape(bytes([b])) for b in range(0x80, 0x100, 2)) + b"]"
_DATE = rb"(?:[\x00-\x7f]|[\x80-\xff][\x01-\x7f]|" + _EVEN_CONTINUATION + rb"[\x80-\xff][\x01-\x7f])"


def _with_pattern(skip: Skip, pattern: bytes | None) -> Skip:
    if pattern is not None:
        skip.pattern = pattern  # type: ignore[attr-defined]
    return skip


def pattern_of(skip: Skip) -> bytes | None:
    """The regular expression of what `skip` accepts (a part of it), if it has one."""
    return getattr(skip, "pattern", None)


for _skip, _pattern in [
    (skip_null, b""),
    (_skip_boolean, rb"[\x00\x01]"),
    (_skip_long, _VARINT),
    (_skip_double, _ANY + b"{8}"),
    (_skip_bytes, _length_prefixed(_ANY)),
    (_skip_string, _length_prefixed(rb"[\x00-\x7f]")),
    (_skip_date, _DATE),
]:
    _with_pattern(_skip, _pattern)


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
            return _with_pattern(self.array(skip_items), None if item is None else _array_pattern(item))
        return self.named_type(schema)

    def by_name(self, name: str) -> Skip:
        if name in _PRIMITIVES:
            return _PRIMITIVES[name]
        for full in (name, f"{self.namespace}.{name}"):
            if full in self.named:
                return self.named[full]
        raise NotPatchable(f"unknown type {name}")

    def named_type(self, schema: dict[str, Any]) -> Skip:
        """Primitives spelled as objects (with a logical type or not), enums and fixed."""
        kind, logical = schema.get("type"), schema.get("logicalType")
        if kind in _PRIMITIVES and logical is None:
            return self.by_name(str(kind))
        if kind == "int" and logical == "date":
            return _skip_date
        if kind == "enum":
            skip = self.enum(len(schema["symbols"]))
        elif kind == "fixed" and logical is None:
            skip = _with_pattern(_skip_fixed(int(schema["size"])), _ANY + b"{%d}" % int(schema["size"]))
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
        return _with_pattern(skip, b"(?:%s|%s%s)" % (null, other_branch, inner_pattern))

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
            return skip_varints, _VARINT
        if isinstance(schema, dict) and schema.get("type") == "record":
            skip = self.record(schema)
            types = [f["type"] for f in schema["fields"]]
            if types and all(t in ("int", "long") for t in types):
                width = len(types)
                return (lambda buf, pos, n: skip_varints(buf, pos, n * width)), pattern_of(skip)
            if types == ["int", "bytes"]:
                return _skip_int_bytes_pairs, _BOUND_ITEM
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
        if len(run) == 1 and run[0] in _PRIMITIVES.values():
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

    return _with_pattern(skip_run, pattern)


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


@lru_cache(maxsize=64)
def compiled_schema(compile_schema: Callable[[dict[str, Any]], Any], schema_text: str) -> Any:
    """What `compile_schema` makes of a writer schema, once per schema and process: building the
    skippers and their patterns costs about a millisecond (0.3 s the first time), every manifest
    of a table has the same schema, and a table has thousands."""
    return compile_schema(json.loads(schema_text))


def entry_compiler(schema: dict[str, Any]) -> tuple[Compiler, list[dict[str, Any]], list[str]]:
    """A compiler for a `manifest_entry` record schema, its fields and their names."""
    if schema.get("type") != "record":
        raise NotPatchable("not a record schema")
    c = Compiler()
    c.named[c.full_name(schema)] = unfinished
    entry_fields: list[dict[str, Any]] = schema["fields"]
    return c, entry_fields, [f["name"] for f in entry_fields]


@dataclass(frozen=True)
class Header:
    metadata: dict[str, str]
    sync: bytes
    end: int


def container_header(metadata: dict[str, str], sync: bytes) -> bytes:
    """An Avro container header: magic, the metadata map (one block), the sync marker."""
    parts = [MAGIC, zigzag(len(metadata))]
    for key, value in metadata.items():
        k, v = key.encode(), value.encode()
        parts += [zigzag(len(k)), k, zigzag(len(v)), v]
    parts += [zigzag(0), sync]
    return b"".join(parts)


def read_header(data: bytes) -> Header:
    if data[:4] != MAGIC:
        raise NotPatchable("not an Avro container")
    pos = 4
    meta: dict[str, str] = {}
    while True:
        n, pos = read_long(data, pos)
        if n == 0:
            break
        if n < 0:
            raise NotPatchable("header map block with a byte size")
        for _ in range(n):
            key, pos = read_string(data, pos)
            value, pos = read_string(data, pos)
            if key in meta:
                raise NotPatchable("repeated header key")
            meta[key] = value
    sync = data[pos : pos + SYNC_SIZE]
    if len(sync) != SYNC_SIZE:
        raise NotPatchable("truncated header")
    return Header(meta, sync, pos + SYNC_SIZE)


def read_string(data: bytes, pos: int) -> tuple[str, int]:
    n, start = read_long(data, pos)
    end = start + n
    if n < 0 or end > len(data):
        raise NotPatchable("bad string length")
    return data[start:end].decode(), end


def blocks(data: bytes, header: Header, codec: str) -> Iterator[tuple[int, bytes]]:
    """(record count, decoded bytes) of each block, checking sizes and sync markers."""
    pos = header.end
    while pos < len(data):
        count, pos = read_long(data, pos)
        size, pos = read_long(data, pos)
        if count < 0 or size < 0 or pos + size + SYNC_SIZE > len(data):
            raise NotPatchable("bad block")
        raw = data[pos : pos + size]
        pos += size
        if data[pos : pos + SYNC_SIZE] != header.sync:
            raise NotPatchable("sync marker mismatch")
        pos += SYNC_SIZE
        yield count, (zlib.decompress(raw, -15) if codec == "deflate" else raw)


CODECS = ("null", "deflate")
