"""Rewrite the paths in a manifest by splicing bytes, without decoding and re-encoding each entry.

`avro_files.rewrite_manifest` decodes every manifest entry with fastavro and encodes it again;
with column statistics most of the time goes to that round trip, though only `file_path` (and
`referenced_data_file`) change. This module produces the same bytes the fastavro writer would:

* a skipper compiled once from the writer schema walks each record and finds the byte spans of
  the path strings; everything else is copied as it is,
* records are re-framed into blocks exactly as fastavro's writer frames them (a block is closed
  as soon as it holds `SYNC_INTERVAL` bytes or more), with the same codec call and sync marker.

Copying bytes equals re-encoding only where the source is written the way fastavro writes it, so
the skipper checks that as it goes (minimal varints, arrays in one block, booleans 0/1, union
branches, dates fastavro can read, float NaNs) and anything else — a schema or codec it does not
know, an entry whose rewrite needs more than its paths (position deletes, rewritten delete files)
— raises `NotPatchable`: the caller then uses the fastavro path for the whole file.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

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


class NotPatchable(Exception):
    """The file (or one of its records) is not one the byte-level rewrite reproduces exactly."""


def zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


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


def skip_varints(buf: bytes, pos: int, count: int) -> int:
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
    end = _skip_bytes(buf, pos)
    if end - pos > 1:
        buf[pos:end].decode()  # fastavro refuses invalid UTF-8: so must the copy
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


def _skip_null(buf: bytes, pos: int) -> int:
    return pos


def _skip_date(buf: bytes, pos: int) -> int:
    days, end = read_long(buf, pos)
    if not _MIN_ORDINAL <= days + _DAYS_SHIFT <= _MAX_ORDINAL:
        raise NotPatchable("date fastavro cannot read")
    return end


_PRIMITIVES: dict[str, Skip] = {
    "null": _skip_null,
    "boolean": _skip_boolean,
    "int": _skip_long,
    "long": _skip_long,
    "float": _skip_float,
    "double": _skip_double,
    "bytes": _skip_bytes,
    "string": _skip_string,
}


class _Compiler:
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
            return self.array(self.items(schema["items"]))
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
            skip = _skip_fixed(int(schema["size"]))
        else:  # logical types fastavro may not round-trip, maps (a dict drops repeated keys)...
            raise NotPatchable(f"type {kind}/{logical}")
        self.named[self.full_name(schema)] = skip
        return skip

    def union(self, branches: list[Any]) -> Skip:
        if len(branches) != 2 or "null" not in branches or branches[0] == branches[1]:
            raise NotPatchable("only [null, T] unions")
        null_byte = zigzag(branches.index("null"))[0]
        other_byte = zigzag(1 - branches.index("null"))[0]
        inner = self.skip(branches[1 - branches.index("null")])

        def skip_union(buf: bytes, pos: int) -> int:
            b = buf[pos]
            if b == null_byte:
                return pos + 1
            if b == other_byte:
                return inner(buf, pos + 1)
            raise NotPatchable("union branch")

        return skip_union

    def fields(self, schema: dict[str, Any]) -> list[Skip]:
        name = self.full_name(schema)
        outer, self.namespace = self.namespace, name.rpartition(".")[0]
        self.named[name] = _unfinished
        try:
            return [self.skip(f["type"]) for f in schema["fields"]]
        finally:
            self.namespace = outer

    def record(self, schema: dict[str, Any]) -> Skip:
        fields = self.fields(schema)
        skip_all = _chain(fields)
        self.named[self.full_name(schema)] = skip_all
        return skip_all

    def items(self, schema: Any) -> SkipN:
        """A skipper of `n` array items; Iceberg's int-keyed maps (key/value records) get a loop
        of their own."""
        if schema in ("int", "long"):
            return skip_varints
        if isinstance(schema, dict) and schema.get("type") == "record":
            skip = self.record(schema)
            types = [f["type"] for f in schema["fields"]]
            if types and all(t in ("int", "long") for t in types):
                width = len(types)
                return lambda buf, pos, n: skip_varints(buf, pos, n * width)
            if types == ["int", "bytes"]:
                return _skip_int_bytes_pairs
        else:
            skip = self.skip(schema)

        def skip_items(buf: bytes, pos: int, n: int) -> int:
            for _ in range(n):
                pos = skip(buf, pos)
            return pos

        return skip_items

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


def _unfinished(buf: bytes, pos: int) -> int:
    raise NotPatchable("recursive type")


def _skip_fixed(size: int) -> Skip:
    def skip_fixed(buf: bytes, pos: int) -> int:
        return pos + size

    return skip_fixed


def _chain(fields: list[Skip]) -> Skip:
    if len(fields) == 1:
        return fields[0]

    def skip_record(buf: bytes, pos: int) -> int:
        for skip in fields:
            pos = skip(buf, pos)
        return pos

    return skip_record


@dataclass(frozen=True)
class EntryLayout:
    """Where the path strings of a manifest entry sit, as skip runs between them."""

    prefix: list[Skip]  # the fields before file_path (entry fields, then data_file fields)
    content_at: int  # index of data_file.content in `prefix`, -1 when absent (v1)
    between: Skip  # after file_path up to referenced_data_file (or to the end)
    has_reference: bool
    after: Skip  # after referenced_data_file to the entry end


def _entry_compiler(schema: dict[str, Any]) -> tuple[_Compiler, list[dict[str, Any]], list[str]]:
    """A compiler for a `manifest_entry` record schema, its fields and their names."""
    if schema.get("type") != "record":
        raise NotPatchable("not a record schema")
    c = _Compiler()
    c.named[c.full_name(schema)] = _unfinished
    entry_fields: list[dict[str, Any]] = schema["fields"]
    return c, entry_fields, [f["name"] for f in entry_fields]


def compile_entry(schema: dict[str, Any]) -> EntryLayout:
    """The layout of a `manifest_entry` writer schema, or NotPatchable."""
    c, entry_fields, names = _entry_compiler(schema)
    if "data_file" not in names:
        raise NotPatchable("no data_file field")
    at = names.index("data_file")
    df_schema = entry_fields[at]["type"]
    if not isinstance(df_schema, dict) or df_schema.get("type") != "record":
        raise NotPatchable("data_file is not a record")
    prefix = [c.skip(f["type"]) for f in entry_fields[:at]]
    suffix_entry = entry_fields[at + 1 :]
    c.named[c.full_name(df_schema)] = _unfinished
    outer, c.namespace = c.namespace, c.full_name(df_schema).rpartition(".")[0]
    df_fields = df_schema["fields"]
    df_names = [f["name"] for f in df_fields]
    if "file_path" not in df_names or df_fields[df_names.index("file_path")]["type"] != "string":
        raise NotPatchable("data_file.file_path is not a string")
    fp = df_names.index("file_path")
    content_at = -1
    if "content" in df_names:
        if df_fields[df_names.index("content")]["type"] != "int" or df_names.index("content") > fp:
            raise NotPatchable("data_file.content")
        content_at = len(prefix) + df_names.index("content")
    prefix += [c.skip(f["type"]) for f in df_fields[:fp]]
    ref = df_names.index("referenced_data_file") if "referenced_data_file" in df_names else len(df_fields)
    if ref < len(df_fields) and df_fields[ref]["type"] != ["null", "string"]:
        raise NotPatchable("referenced_data_file is not an optional string")
    between = _chain_or_none([c.skip(f["type"]) for f in df_fields[fp + 1 : ref]])
    rest = [c.skip(f["type"]) for f in df_fields[ref + 1 :]]
    c.namespace = outer
    rest += [c.skip(f["type"]) for f in suffix_entry]
    return EntryLayout(prefix, content_at, between, ref < len(df_fields), _chain_or_none(rest))


def _chain_or_none(fields: list[Skip]) -> Skip:
    return _chain(fields) if fields else _skip_null


@dataclass(frozen=True)
class Header:
    metadata: dict[str, str]
    sync: bytes
    end: int


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
            key, pos = _read_string(data, pos)
            value, pos = _read_string(data, pos)
            if key in meta:
                raise NotPatchable("repeated header key")
            meta[key] = value
    sync = data[pos : pos + SYNC_SIZE]
    if len(sync) != SYNC_SIZE:
        raise NotPatchable("truncated header")
    return Header(meta, sync, pos + SYNC_SIZE)


def _read_string(data: bytes, pos: int) -> tuple[str, int]:
    n, start = read_long(data, pos)
    end = start + n
    if n < 0 or end > len(data):
        raise NotPatchable("bad string length")
    return data[start:end].decode(), end


def _blocks(data: bytes, header: Header, codec: str) -> Iterator[tuple[int, bytes]]:
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


def _encode_block(count: int, block: bytes, codec: str, sync: bytes) -> bytes:
    """A block as fastavro's writer frames it (its deflate is zlib's default level, header dropped)."""
    data = zlib.compress(block)[2:-1] if codec == "deflate" else block
    return zigzag(count) + zigzag(len(data)) + data + sync


CODECS = ("null", "deflate")


def patch_manifest(
    data: bytes,
    map_path: Callable[[str], str],
    skip_entry: Callable[[str, int], bool],
    header_bytes: Callable[[dict[str, str], bytes], bytes],
) -> bytes:
    """The manifest with `data_file.file_path` and `referenced_data_file` mapped, or NotPatchable.

    `skip_entry(old_path, content)` says whether the entry needs more than its paths rewritten
    (then the whole file is NotPatchable). `map_path` is called as the fastavro path calls it:
    file_path, then a non-empty referenced_data_file, entry after entry; NotPatchable may come
    after some calls, so the caller replays them on the fallback path.
    """
    try:
        header = read_header(data)
        codec = header.metadata.get("avro.codec", "null")
        if codec not in CODECS:
            raise NotPatchable(f"codec {codec}")
        layout = compile_entry(json.loads(header.metadata["avro.schema"]))
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        raise NotPatchable(str(exc)) from exc
    out = [header_bytes(header.metadata, header.sync)]
    pending = bytearray()
    pending_count = 0
    for count, block in _safe(_blocks(data, header, codec)):
        for start, fp_len, fp, fp_end, ref_len, ref, ref_end, end, content in _safe_scan(
            layout, block, count
        ):
            old = _utf8(block, fp, fp_end)
            if skip_entry(old, content):
                raise NotPatchable("entry needs more than its paths rewritten")
            new = map_path(old).encode()
            pending += block[start:fp_len]
            pending += zigzag(len(new))
            pending += new
            if ref_end > ref:
                new_ref = map_path(_utf8(block, ref, ref_end)).encode()
                pending += block[fp_end:ref_len]
                pending += zigzag(len(new_ref))
                pending += new_ref
                pending += block[ref_end:end]
            else:
                pending += block[fp_end:end]
            pending_count += 1
            if len(pending) >= SYNC_INTERVAL:
                out.append(_encode_block(pending_count, bytes(pending), codec, header.sync))
                pending.clear()
                pending_count = 0
    if pending_count:
        out.append(_encode_block(pending_count, bytes(pending), codec, header.sync))
    return b"".join(out)


def _utf8(block: bytes, start: int, end: int) -> str:
    try:
        return block[start:end].decode()
    except UnicodeDecodeError as exc:  # fastavro refuses it: leave the error to the fastavro path
        raise NotPatchable(str(exc)) from exc


def _safe(blocks: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    try:
        yield from blocks
    except (IndexError, ValueError, zlib.error) as exc:
        raise NotPatchable(str(exc)) from exc


def _safe_scan(layout: EntryLayout, block: bytes, count: int) -> list[Span]:
    """Per record: where it starts, where file_path's length, bytes and end are, the same for
    referenced_data_file (an empty span when null or absent), where the record ends, its content."""
    try:
        return _scan(layout, block, count)
    except (IndexError, ValueError) as exc:  # truncated data, invalid UTF-8
        raise NotPatchable(str(exc)) from exc


def _scan(layout: EntryLayout, block: bytes, count: int) -> list[Span]:
    spans: list[Span] = []
    pos = 0
    prefix, content_at, between, after = layout.prefix, layout.content_at, layout.between, layout.after
    has_reference = layout.has_reference
    for _ in range(count):
        start = pos
        content = 0
        for i, skip in enumerate(prefix):
            if i == content_at:
                content, pos = read_long(block, pos)
            else:
                pos = skip(block, pos)
        fp_len = pos
        n, fp = read_long(block, pos)
        fp_end = fp + n
        if n < 0 or fp_end > len(block):
            raise NotPatchable("bad file_path length")
        pos = between(block, fp_end)
        ref_len = ref = ref_end = pos
        if has_reference:
            if block[pos] == 2:  # the string branch (null is listed first, see compile_entry)
                ref_len = pos + 1
                n, ref = read_long(block, ref_len)
                ref_end = ref + n
                if n < 0 or ref_end > len(block):
                    raise NotPatchable("bad referenced_data_file length")
                pos = ref_end
            elif block[pos] == 0:
                pos += 1
                ref_len = ref = ref_end = pos
            else:
                raise NotPatchable("union branch")
        pos = after(block, pos)
        spans.append((start, fp_len, fp, fp_end, ref_len, ref, ref_end, pos, content))
    if pos != len(block):
        raise NotPatchable("block has bytes after its records")
    return spans


# ----------------------------------------------------------------------------------------------
# Read-only: the few fields of each manifest entry that planning needs, found with the same
# skippers, without decoding the rest (statistics maps, partition values...).

# (status, data_file.content, file_path, file_size_in_bytes, referenced_data_file, file_format)
EntryFields = tuple[int, int, str, int, str | None, str | None]
Read = Callable[[bytes, int], tuple[Any, int]]
_STATUS, _CONTENT, _PATH, _SIZE, _REFERENCE, _FORMAT = range(6)
# data_file fields read, with the only writer types read here (others: NotPatchable).
_READ_TYPES: dict[str, tuple[int, Any]] = {
    "content": (_CONTENT, "int"),
    "file_path": (_PATH, "string"),
    "file_size_in_bytes": (_SIZE, "long"),
    "referenced_data_file": (_REFERENCE, ["null", "string"]),
    "file_format": (_FORMAT, "string"),
}
_INT_TYPES = ("int", "long")


def _read_str(buf: bytes, pos: int) -> tuple[str, int]:
    return _read_string(buf, pos)


def _read_optional_str(buf: bytes, pos: int) -> tuple[str | None, int]:
    b = buf[pos]
    if b == 0:
        return None, pos + 1
    if b == 2:
        return _read_string(buf, pos + 1)
    raise NotPatchable("union branch")


def _reader(kind: Any) -> Read:
    if kind in _INT_TYPES:
        return read_long
    if kind == "string":
        return _read_str
    return _read_optional_str


def _steps(fields: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """Runs of skipped fields chained into one skip each; read fields keep their slot."""
    out: list[tuple[int, Any]] = []
    run: list[Skip] = []
    for slot, fn in fields:
        if slot < 0:
            run.append(fn)
            continue
        if run:
            out.append((-1, _chain(run)))
            run = []
        out.append((slot, fn))
    if run:
        out.append((-1, _chain(run)))
    return out


@dataclass(frozen=True)
class EntryReader:
    """How to read (status, content, file_path, size, referenced_data_file, file_format) of an entry."""

    steps: list[tuple[int, Any]]  # (slot, reader) or (-1, skipper)


def compile_entry_reader(schema: dict[str, Any]) -> EntryReader:
    """The reader of a `manifest_entry` writer schema, or NotPatchable."""
    c, entry_fields, names = _entry_compiler(schema)
    if names.count("data_file") != 1 or names.count("status") != 1:
        raise NotPatchable("no data_file or status field (or more than one)")
    at = names.index("data_file")
    if names.index("status") > at:
        raise NotPatchable("status after data_file")
    df_schema = entry_fields[at]["type"]
    if not isinstance(df_schema, dict) or df_schema.get("type") != "record":
        raise NotPatchable("data_file is not a record")
    fields: list[tuple[int, Any]] = []
    for f in entry_fields[:at]:
        if f["name"] == "status":
            if f["type"] not in _INT_TYPES:
                raise NotPatchable("status is not an int")
            c.skip(f["type"])
            fields.append((_STATUS, read_long))
        else:
            fields.append((-1, c.skip(f["type"])))
    c.named[c.full_name(df_schema)] = _unfinished
    outer, c.namespace = c.namespace, c.full_name(df_schema).rpartition(".")[0]
    seen: set[int] = set()
    for f in df_schema["fields"]:
        skip = c.skip(f["type"])
        wanted = _READ_TYPES.get(f["name"])
        if wanted is None:
            fields.append((-1, skip))
            continue
        slot, kind = wanted
        if (f["type"] != kind and not (kind == "long" and f["type"] == "int")) or slot in seen:
            raise NotPatchable(f"data_file.{f['name']} type")
        seen.add(slot)
        fields.append((slot, _reader(f["type"])))
    if not {_PATH, _SIZE, _FORMAT} <= seen:
        raise NotPatchable("data_file lacks file_path, file_size_in_bytes or file_format")
    c.namespace = outer
    fields += [(-1, c.skip(f["type"])) for f in entry_fields[at + 1 :]]
    return EntryReader(_steps(fields))


def read_entry_fields(data: bytes, schema_ok: Callable[[str], bool]) -> list[EntryFields]:
    """(status, content, file_path, file_size_in_bytes, referenced_data_file, file_format) of
    every entry of a manifest, as fastavro would decode them, or NotPatchable (nothing is
    returned then: the caller decodes the whole file with fastavro). `file_format` is None
    unless the entry is a position delete (content 1). `schema_ok(schema_text)` says whether the
    full decoder accepts the writer schema (when not, NotPatchable: its error is the one to give)."""
    try:
        header = read_header(data)
        if not schema_ok(header.metadata["avro.schema"]):
            raise NotPatchable("a writer schema the decoder refuses")
        codec = header.metadata.get("avro.codec", "null")
        if codec not in CODECS:
            raise NotPatchable(f"codec {codec}")
        reader = _compiled_reader(header.metadata["avro.schema"])
        out: list[EntryFields] = []
        for count, block in _blocks(data, header, codec):
            _read_block(reader, block, count, out)
    except (IndexError, KeyError, TypeError, ValueError, zlib.error) as exc:
        raise NotPatchable(str(exc)) from exc
    return out


_READERS: dict[str, EntryReader] = {}


def _compiled_reader(schema_text: str) -> EntryReader:
    reader = _READERS.get(schema_text)
    if reader is None:
        if len(_READERS) >= 64:
            _READERS.clear()
        reader = _READERS[schema_text] = compile_entry_reader(json.loads(schema_text))
    return reader


def _read_block(reader: EntryReader, block: bytes, count: int, out: list[EntryFields]) -> None:
    steps = reader.steps
    pos = 0
    for _ in range(count):
        values: list[Any] = [0, 0, "", 0, None, None]
        for slot, fn in steps:
            if slot < 0:
                pos = fn(block, pos)
            else:
                values[slot], pos = fn(block, pos)
        status, content, path, size, reference, fmt = values
        out.append((status, content, path, size, reference, fmt if content == 1 else None))
    if pos != len(block):
        raise NotPatchable("block has bytes after its records")
