"""Read the few fields of each manifest entry that planning needs (status, content, file path and
size, referenced data file, format), found with the skippers of `avro_binary`, without decoding the
rest (statistics maps, partition values...). Anything it cannot read exactly as fastavro would
raises `NotPatchable`, and the caller decodes the file with fastavro instead."""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from icelake.errors import NotPatchable
from icelake.migrate.avro.binary import chain, compiled_schema, entry_compiler, unfinished
from icelake.migrate.avro.container import CODECS, blocks, read_header, read_string
from icelake.migrate.avro.primitives import Skip, read_long

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
    return read_string(buf, pos)


def _read_optional_str(buf: bytes, pos: int) -> tuple[str | None, int]:
    b = buf[pos]
    if b == 0:
        return None, pos + 1
    if b == 2:
        return read_string(buf, pos + 1)
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
            out.append((-1, chain(run)))
            run = []
        out.append((slot, fn))
    if run:
        out.append((-1, chain(run)))
    return out


@dataclass(frozen=True)
class EntryReader:
    """How to read (status, content, file_path, size, referenced_data_file, file_format) of an entry."""

    steps: list[tuple[int, Any]]  # (slot, reader) or (-1, skipper)


def compile_entry_reader(schema: dict[str, Any]) -> EntryReader:
    """The reader of a `manifest_entry` writer schema, or NotPatchable."""
    c, entry_fields, names = entry_compiler(schema)
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
    fields += _data_file_fields(c, df_schema)
    fields += [(-1, c.skip(f["type"])) for f in entry_fields[at + 1 :]]
    return EntryReader(_steps(fields))


def _data_file_fields(c: Any, df_schema: dict[str, Any]) -> list[tuple[int, Any]]:
    """(slot, reader) of the data_file fields planning reads, (-1, skipper) of the others."""
    c.named[c.full_name(df_schema)] = unfinished
    outer, c.namespace = c.namespace, c.full_name(df_schema).rpartition(".")[0]
    fields: list[tuple[int, Any]] = []
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
    return fields


def read_entry_fields(
    data: bytes, schema_ok: Callable[[str], bool], spans: PathSpans | None = None
) -> list[EntryFields]:
    """(status, content, file_path, file_size_in_bytes, referenced_data_file, file_format) of
    every entry of a manifest, as fastavro would decode them, or NotPatchable (nothing is
    returned then: the caller decodes the whole file with fastavro). `file_format` is None
    unless the entry is a position delete (content 1). `schema_ok(schema_text)` says whether the
    full decoder accepts the writer schema (when not, NotPatchable: its error is the one to give).
    `spans`: filled with where each entry and its file_path sit (`PathSpans`)."""
    try:
        header = read_header(data)
        if not schema_ok(header.metadata["avro.schema"]):
            raise NotPatchable("a writer schema the decoder refuses")
        codec = header.metadata.get("avro.codec", "null")
        if codec not in CODECS:
            raise NotPatchable(f"codec {codec}")
        reader = compiled_schema(compile_entry_reader, header.metadata["avro.schema"])
        out: list[EntryFields] = []
        for count, block in blocks(data, header, codec):
            _read_block(reader, block, count, out, spans)
    except (IndexError, KeyError, TypeError, ValueError, zlib.error) as exc:
        raise NotPatchable(str(exc)) from exc
    return out


@dataclass
class PathSpans:
    """Per block, its entry count; per entry, where it starts in its (decompressed) block and
    where its file_path's length and bytes end: (start, path_at, path_end), three ints an entry.
    What `avro_patch.patch_manifest` finds by walking every entry, recorded by the plan's one walk."""

    counts: array[int] = field(default_factory=lambda: array("I"))
    offsets: array[int] = field(default_factory=lambda: array("I"))


def _read_block(
    reader: EntryReader, block: bytes, count: int, out: list[EntryFields], spans: PathSpans | None
) -> None:
    steps = reader.steps
    pos = path_at = path_end = 0
    if spans is not None:
        spans.counts.append(count)
    for _ in range(count):
        start = pos
        values: list[Any] = [0, 0, "", 0, None, None]
        for slot, fn in steps:
            if slot < 0:
                pos = fn(block, pos)
            elif slot == _PATH:
                path_at = pos
                values[_PATH], pos = fn(block, pos)
                path_end = pos
            else:
                values[slot], pos = fn(block, pos)
        status, content, path, size, reference, fmt = values
        out.append((status, content, path, size, reference, fmt if content == 1 else None))
        if spans is not None:
            spans.offsets.extend((start, path_at, path_end))
    if pos != len(block):
        raise NotPatchable("block has bytes after its records")
