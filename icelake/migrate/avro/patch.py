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

import functools
import hashlib
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from icelake.errors import NotPatchable
from icelake.migrate.avro.binary import Span, chain, compiled_schema, entry_compiler, unfinished
from icelake.migrate.avro.container import (
    CODECS,
    SYNC_INTERVAL,
    Header,
    blocks,
    container_header,
    read_header,
)
from icelake.migrate.avro.entries import PathSpans
from icelake.migrate.avro.primitives import Skip, read_long, skip_null, zigzag

T = TypeVar("T")


@dataclass(frozen=True)
class EntryLayout:
    """Where the path strings of a manifest entry sit, as skip runs between them."""

    # The fields before file_path (entry fields, then data_file fields) as two skips around
    # data_file.content, which is read; without content (v1), `before_content` skips them all.
    before_content: Skip
    has_content: bool
    after_content: Skip
    between: Skip  # after file_path up to referenced_data_file (or to the end)
    has_reference: bool
    after: Skip  # after referenced_data_file to the entry end


def compile_entry(schema: dict[str, Any]) -> EntryLayout:
    """The layout of a `manifest_entry` writer schema, or NotPatchable."""
    c, entry_fields, names = entry_compiler(schema)
    if "data_file" not in names:
        raise NotPatchable("no data_file field")
    at = names.index("data_file")
    df_schema = entry_fields[at]["type"]
    if not isinstance(df_schema, dict) or df_schema.get("type") != "record":
        raise NotPatchable("data_file is not a record")
    prefix = [c.skip(f["type"]) for f in entry_fields[:at]]
    suffix_entry = entry_fields[at + 1 :]
    c.named[c.full_name(df_schema)] = unfinished
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
    before, after = (prefix, []) if content_at < 0 else (prefix[:content_at], prefix[content_at + 1 :])
    return EntryLayout(
        _chain_or_none(before),
        content_at >= 0,
        _chain_or_none(after),
        between,
        ref < len(df_fields),
        _chain_or_none(rest),
    )


def _chain_or_none(fields: list[Skip]) -> Skip:
    return chain(fields) if fields else skip_null


def _encode_block(count: int, block: bytes, codec: str, sync: bytes) -> bytes:
    """A block as fastavro's writer frames it (its deflate is zlib's default level, header dropped)."""
    data = zlib.compress(block)[2:-1] if codec == "deflate" else block
    return zigzag(count) + zigzag(len(data)) + data + sync


class _Framer:
    """An Avro file written as fastavro's writer writes it: the records appended to `pending`, one
    `ended()` each, are framed into a block as soon as it holds SYNC_INTERVAL bytes or more."""

    def __init__(self, header: Header, codec: str) -> None:
        self.header, self.codec = header, codec
        self.out = [container_header(header.metadata, header.sync)]
        self.pending = bytearray()
        self.count = 0

    def ended(self) -> None:
        self.count += 1
        if len(self.pending) >= SYNC_INTERVAL:
            self._flush()

    def _flush(self) -> None:
        self.out.append(_encode_block(self.count, bytes(self.pending), self.codec, self.header.sync))
        self.pending.clear()
        self.count = 0

    def file(self) -> bytes:
        if self.count:
            self._flush()
        return b"".join(self.out)


def _read_container(data: bytes, compile_schema: Callable[[dict[str, Any]], T]) -> tuple[Header, str, T]:
    """The header, codec and what `compile_schema` makes of the writer schema, or NotPatchable."""
    try:
        header = read_header(data)
        codec = header.metadata.get("avro.codec", "null")
        if codec not in CODECS:
            raise NotPatchable(f"codec {codec}")
        return header, codec, compiled_schema(compile_schema, header.metadata["avro.schema"])
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        raise NotPatchable(str(exc)) from exc


def patch_manifest(
    data: bytes,
    map_path: Callable[[str], str],
    skip_entry: Callable[[str, int], bool],
) -> bytes:
    """The manifest with `data_file.file_path` and `referenced_data_file` mapped, or NotPatchable.

    `skip_entry(old_path, content)` says whether the entry needs more than its paths rewritten
    (then the whole file is NotPatchable). `map_path` is called as the fastavro path calls it:
    file_path, then a non-empty referenced_data_file, entry after entry; NotPatchable may come
    after some calls, so the caller replays them on the fallback path.
    """
    header, codec, layout = _read_container(data, compile_entry)
    framer = _Framer(header, codec)
    pending = framer.pending
    for count, block in _safe(blocks(data, header, codec)):
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
            framer.ended()
    return framer.file()


@dataclass(frozen=True)
class PlannedManifest:
    """A data manifest as the plan read it (every entry data, none with a referenced_data_file):
    its length, its digest, and where each entry and its file_path sit (`PathSpans`)."""

    size: int
    digest: bytes  # `manifest_digest`
    spans: PathSpans


def manifest_digest(data: bytes) -> bytes:
    """What tells the bytes a plan read from any others: BLAKE2b, 128 bits (about 20 us for a
    manifest of 1,000 entries, whose rewrite takes milliseconds)."""
    return hashlib.blake2b(data, digest_size=16).digest()


def splice_manifest(data: bytes, planned: PlannedManifest, map_path: Callable[[str], str]) -> bytes:
    """`patch_manifest(data, map_path, ...)` of a data manifest, spliced where the plan found its
    paths instead of walking every entry again (most of a rewrite's time: the statistics maps).
    NotPatchable, checked before any `map_path` call, unless `data` are the bytes planned (length
    and digest) in the blocks planned and `patch_manifest` takes their schema."""
    if len(data) != planned.size or manifest_digest(data) != planned.digest:
        raise NotPatchable("not the bytes the plan read")
    header, codec, _layout = _read_container(data, compile_entry)
    decoded = list(_safe(blocks(data, header, codec)))
    counts, offsets = planned.spans.counts, planned.spans.offsets
    if [count for count, _ in decoded] != counts.tolist() or len(offsets) != 3 * sum(counts):
        raise NotPatchable("not the blocks the plan read")
    framer = _Framer(header, codec)
    pending = framer.pending
    at = 0
    for count, block in decoded:
        for i in range(count):
            start, path_at, path_end = offsets[at], offsets[at + 1], offsets[at + 2]
            at += 3
            end = offsets[at] if i + 1 < count else len(block)
            new = map_path(_utf8(block, read_long(block, path_at)[1], path_end)).encode()
            pending += block[start:path_at]
            pending += zigzag(len(new))
            pending += new
            pending += block[path_end:end]
            framer.ended()
    return framer.file()


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
    before_content, after_content = layout.before_content, layout.after_content
    has_content, between, after = layout.has_content, layout.between, layout.after
    has_reference = layout.has_reference
    for _ in range(count):
        start = pos
        content = 0
        pos = before_content(block, pos)
        if has_content:
            content, pos = read_long(block, pos)
            pos = after_content(block, pos)
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


def compile_manifest_list(schema: dict[str, Any]) -> Skip:
    """The skipper of a manifest list record after its first two fields, which must be
    `manifest_path` (string) and `manifest_length` (long), as in every Iceberg format version."""
    c, fields, names = entry_compiler(schema)
    if names[:2] != ["manifest_path", "manifest_length"] or [f["type"] for f in fields[:2]] != [
        "string",
        "long",
    ]:
        raise NotPatchable("the records do not start with manifest_path and manifest_length")
    return _chain_or_none([c.skip(f["type"]) for f in fields[2:]])


class ListHeads:
    """The new first two fields of manifest list records (`manifest_path` mapped, `manifest_length`
    the rewritten manifest's), encoded once per manifest for all the lists of one rewrite: each
    snapshot's list names all of its manifests, so a table of a thousand snapshots names each of
    its manifests in hundreds of lists, half a million records over all of them."""

    def __init__(self, map_path: Callable[[str], str], new_lengths: dict[str, int]) -> None:
        self.map_path = map_path
        self.new_lengths = new_lengths
        self._heads: dict[bytes, bytes] = {}  # by the old path's bytes (shared by threads: pure)
        self.walker = ListWalker(compile_manifest_list, functools.partial(_rewritten_record, self))

    def head(self, block: bytes, start: int, end: int) -> bytes:
        """Of the record whose old path is `block[start:end]` (checked to be UTF-8 the first time)."""
        raw = block[start:end]
        found = self._heads.get(raw)
        if found is None:
            path = _utf8(block, start, end)
            new = self.map_path(path).encode()
            found = self._heads[raw] = zigzag(len(new)) + new + zigzag(self.new_lengths[path])
        return found


def patch_manifest_list(data: bytes, heads: ListHeads) -> bytes:
    """The manifest list with every `manifest_path` mapped and its `manifest_length` replaced by
    the rewritten manifest's (`heads`), spliced as `patch_manifest` splices (same bytes as fastavro
    would write), or NotPatchable."""
    header, codec, records, _walked = heads.walker.walk(data)
    framer = _Framer(header, codec)
    pending = framer.pending
    for record in records:
        pending += record
        framer.ended()
    return framer.file()


def _rewritten_record(heads: ListHeads, after: Skip, buf: bytes, pos: int) -> tuple[bytes, int]:
    """A manifest list record with its new head (`heads`), and where it ends."""
    n, start = read_long(buf, pos)
    end = start + n
    if n < 0 or end > len(buf):
        raise NotPatchable("bad manifest_path length")
    _length, rest = read_long(buf, end)
    stop = after(buf, rest)
    return heads.head(buf, start, end) + buf[rest:stop], stop


L = TypeVar("L")
R = TypeVar("R")


@dataclass(frozen=True)
class _WalkedList(Generic[R]):
    schema: str  # the writer schema's text
    records: bytes  # the list's blocks decoded and joined
    products: list[R]  # per record, what the walk made of it
    from_end: list[int]  # per record, how far its end is from the end of `records`


class ListWalk(NamedTuple, Generic[R]):
    header: Header
    codec: str
    products: list[R]  # per record
    walked: int  # the first records, walked; those after are the last list's, reused


class ListWalker(Generic[L, R]):
    """Walks the records of manifest lists, one after another, with `walk_record` (given the
    writer schema compiled by `compile_schema`, the bytes and where a record starts: what it makes
    of the record, and where the record ends).

    A snapshot's manifest list is the manifests it adds followed by its parent's list, record for
    record, as Iceberg's appends write it: a thousand snapshots' lists are half a million records,
    but a thousand new ones. So when a list's records end with the bytes of the last list walked
    (same schema), only the records before them are walked and the last list's products are
    reused for the rest. That is exact: a record's encoding is self-delimiting, so the same bytes
    from a record boundary on are the same records. Threads may share a walker: what it keeps is
    replaced whole, and reuse is decided by comparing bytes."""

    def __init__(
        self,
        compile_schema: Callable[[dict[str, Any]], L],
        walk_record: Callable[[L, bytes, int], tuple[R, int]],
    ) -> None:
        self._compile = compile_schema
        self._walk_record = walk_record
        self._last: _WalkedList[R] | None = None

    def walk(self, data: bytes) -> ListWalk[R]:
        """The list's header, codec and per record what `walk_record` made of it, or NotPatchable."""
        header, codec, layout = _read_container(data, self._compile)
        decoded = list(_safe(blocks(data, header, codec)))
        buf = b"".join(block for _, block in decoded)
        total = sum(count for count, _ in decoded)
        schema = header.metadata["avro.schema"]
        last = self._last
        reuse_at = -1
        if last is not None and last.schema == schema and buf.endswith(last.records):
            reuse_at = len(buf) - len(last.records)
        products: list[R] = []
        ends: list[int] = []
        pos = 0
        walk_record = self._walk_record
        try:
            while len(products) < total:
                if pos == reuse_at and last is not None and len(products) + len(last.products) == total:
                    break
                product, pos = walk_record(layout, buf, pos)
                products.append(product)
                ends.append(pos)
        except (IndexError, ValueError) as exc:  # truncated data, invalid UTF-8
            raise NotPatchable(str(exc)) from exc
        from_end = [len(buf) - end for end in ends]
        if len(products) < total and last is not None:
            products += last.products
            from_end += last.from_end
        elif pos != len(buf):
            raise NotPatchable("the list has bytes after its records")
        _check_block_ends(decoded, from_end, len(buf))
        self._last = _WalkedList(schema, buf, products, from_end)
        return ListWalk(header, codec, products, len(ends))


def _check_block_ends(decoded: list[tuple[int, bytes]], from_end: list[int], size: int) -> None:
    """NotPatchable unless each block holds exactly its count of records (the walk ran over the
    blocks joined)."""
    records = end = 0
    for count, block in decoded:
        if count <= 0:
            raise NotPatchable("a block without records")
        records += count
        end += len(block)
        if from_end[records - 1] != size - end:
            raise NotPatchable("a block's records do not end with it")


@dataclass(frozen=True)
class ListLayout:
    """How to read a manifest list record's manifest_path, manifest_length and content."""

    before_content: Skip  # after manifest_length, to content (or to the end without one: v1)
    has_content: bool
    after_content: Skip


def compile_list_layout(schema: dict[str, Any]) -> ListLayout:
    """The layout of a manifest list's writer schema, or NotPatchable."""
    compile_manifest_list(schema)  # refuses what does not start with path and length
    c, fields, names = entry_compiler(schema)
    at = names.index("content") if "content" in names else len(fields)
    if at < len(fields) and fields[at]["type"] != "int":
        raise NotPatchable("content is not an int")
    return ListLayout(
        _chain_or_none([c.skip(f["type"]) for f in fields[2:at]]),
        at < len(fields),
        _chain_or_none([c.skip(f["type"]) for f in fields[at + 1 :]]),
    )


def read_manifest_refs(data: bytes) -> list[tuple[str, int, int]]:
    """(manifest_path, manifest_length, content) of every record of a manifest list (content 0
    where the list has none: v1), found with the skippers, or NotPatchable. Each snapshot's list
    names all of its manifests: a thousand snapshots are half a million records, walked once
    (`ListWalker`: the lists this process read last are remembered)."""
    return _REFS.walk(data).products


def refs_walker() -> ListWalker[ListLayout, tuple[str, int, int]]:
    """A walker of (manifest_path, manifest_length, content) records, for lists read in order."""
    return ListWalker(compile_list_layout, _ref_record)


def _ref_record(layout: ListLayout, buf: bytes, pos: int) -> tuple[tuple[str, int, int], int]:
    n, start = read_long(buf, pos)
    end = start + n
    if n < 0 or end > len(buf):
        raise NotPatchable("bad manifest_path length")
    length, pos = read_long(buf, end)
    content = 0
    pos = layout.before_content(buf, pos)
    if layout.has_content:
        content, pos = read_long(buf, pos)
    return (_utf8(buf, start, end), length, content), layout.after_content(buf, pos)


_REFS = refs_walker()
