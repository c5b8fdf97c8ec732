"""Manifest lists and manifests (Avro): read entries, and rewrite paths keeping schema and header.

The writer schema and the Iceberg header metadata (schema, partition-spec, format-version,
content...) are carried over unchanged, and so are the codec and the sync marker, which makes a
rewrite byte-for-byte repeatable: a re-run recognises its own output and writes nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import fastavro

from icelake.errors import NotPatchable, UnsupportedFileError
from icelake.migrate.avro.container import container_header, read_header
from icelake.migrate.avro.patch import (
    ListHeads,
    ListLayout,
    ListWalker,
    PlannedManifest,
    patch_manifest,
    patch_manifest_list,
    read_manifest_refs,
    splice_manifest,
)
from icelake.uris import canonical

# Field id of the `file_path` column in position-delete files (Iceberg spec, reserved ids).
DELETE_FILE_PATH_FIELD_ID = 2147483546

DATA = 0
POSITION_DELETES = 1
EQUALITY_DELETES = 2  # a manifest entry's content
ADDED = 1  # manifest entry status: the file joined the table in that entry's snapshot
DELETED = 2  # manifest entry status: the file left the table in that entry's snapshot


@dataclass(frozen=True)
class AvroFile:
    schema: dict[str, Any]
    metadata: dict[str, str]
    codec: str
    sync: bytes
    records: list[dict[str, Any]]


@dataclass(frozen=True)
class ManifestRef:
    path: str
    length: int
    content: int  # 0 data, 1 deletes


@dataclass(frozen=True)
class DeleteRewrite:
    """What rewriting a delete file changed, to be written back into its manifest entries."""

    size: int
    lower_path: bytes | None = None
    upper_path: bytes | None = None
    column_sizes: dict[int, int] | None = None


AVRO_MAGIC = b"Obj\x01"


def read_avro(uri: str, data: bytes) -> AvroFile:
    if data[:4] != AVRO_MAGIC:  # fastavro reads past a damaged magic; a copy would "repair" it
        raise UnsupportedFileError(
            f"{uri} is not an Avro file (it starts with {data[:4]!r}, not {AVRO_MAGIC!r}): the source "
            "file is damaged; restore it from a backup or expire the snapshots that use it"
        )
    try:
        reader = fastavro.reader(io.BytesIO(data))
        records: list[dict[str, Any]] = list(reader)  # type: ignore[arg-type]
    except Exception as exc:
        raise UnsupportedFileError(f"{uri} is not a readable Avro file: {exc}") from exc
    meta = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in reader.metadata.items()}
    schema = json.loads(meta["avro.schema"])
    return AvroFile(schema, meta, reader.codec, reader._header["sync"], records)


def write_avro(src: AvroFile, records: list[dict[str, Any]]) -> bytes:
    """Encode records with the source's schema, codec and sync marker, under the source's header.

    fastavro re-serialises the schema JSON in an order that varies between processes, so its
    header is replaced by the original one (same schema text, same Iceberg metadata): the output
    is byte-for-byte repeatable and the writer schema is exactly the source's.
    """
    encoded = _fastavro_write(src.schema, src.metadata, src.codec, src.sync, records)
    # Where fastavro's header ends, parsed: the marker's bytes may also occur inside the header.
    return container_header(src.metadata, src.sync) + encoded[read_header(encoded).end :]


def _fastavro_write(
    schema: dict[str, Any], metadata: dict[str, str], codec: str, sync: bytes, records: list[dict[str, Any]]
) -> bytes:
    out = io.BytesIO()
    fastavro.writer(
        out,
        fastavro.parse_schema(schema),
        records,
        codec=codec,
        metadata={k: v for k, v in metadata.items() if not k.startswith("avro.")},
        sync_marker=sync,
    )
    return out.getvalue()


def manifest_refs(uri: str, data: bytes) -> list[ManifestRef]:
    """The manifests a manifest list names, read from its bytes (`avro_patch`), or, for a file
    that does not qualify, decoded by fastavro (the same refs)."""
    try:
        return [ManifestRef(path, length, content) for path, length, content in read_manifest_refs(data)]
    except NotPatchable:
        return manifest_refs_fastavro(uri, data)


def new_manifest_refs(
    walker: ListWalker[ListLayout, tuple[str, int, int]], uri: str, data: bytes
) -> list[tuple[str, int, int]]:
    """(path, length, content) of the manifests a manifest list names (as `manifest_refs`), less
    the records at its end that are those of the list `walker` read last (`refs_walker`): for
    lists read in order, the records not seen yet."""
    try:
        walk = walker.walk(data)
    except NotPatchable:
        return [(ref.path, ref.length, ref.content) for ref in manifest_refs_fastavro(uri, data)]
    return walk.products[: walk.walked]


def manifest_refs_fastavro(uri: str, data: bytes) -> list[ManifestRef]:
    return [
        ManifestRef(r["manifest_path"], r["manifest_length"], r.get("content", DATA) or DATA)
        for r in read_avro(uri, data).records
    ]


def rewrite_manifest_list(uri: str, data: bytes, heads: ListHeads) -> bytes:
    """Map every manifest path and record each manifest's new length (`heads`): patched in the
    bytes (`avro_patch`), or, for a file that does not qualify, by the fastavro path (same bytes).
    `heads.map_path` is pure, so calls made before a file turns out not patchable are harmless."""
    try:
        return patch_manifest_list(data, heads)
    except NotPatchable:
        return rewrite_manifest_list_fastavro(uri, data, heads.map_path, heads.new_lengths)


def rewrite_manifest_list_fastavro(
    uri: str, data: bytes, map_path: Callable[[str], str], new_lengths: dict[str, int]
) -> bytes:
    """`rewrite_manifest_list` by decoding every record with fastavro and encoding it again."""
    src = read_avro(uri, data)
    for rec in src.records:
        old = rec["manifest_path"]
        rec["manifest_path"] = map_path(old)
        rec["manifest_length"] = new_lengths[old]
    return write_avro(src, src.records)


def manifest_entries(uri: str, data: bytes) -> Iterator[dict[str, Any]]:
    yield from read_avro(uri, data).records


def is_rewritable_delete(data_file: dict[str, Any]) -> bool:
    """Position deletes (Parquet/Avro/ORC) and deletion vectors hold data-file paths in their bytes."""
    return bool(data_file.get("content", DATA) == POSITION_DELETES)


def rewrite_manifest(
    uri: str,
    data: bytes,
    map_path: Callable[[str], str],
    try_map: Callable[[str], str | None],
    delete_rewrites: dict[str, DeleteRewrite],
    planned: PlannedManifest | None = None,
) -> bytes:
    """Map every path in a manifest and apply what rewriting its delete files changed
    (`delete_rewrites`, by the delete files' canonical paths, as the plan names them).

    `map_path` must map (the plan checked it does); `try_map` may not, and is used for the
    file_path bounds of delete files, which can be truncated paths: a bound that no longer maps
    is dropped, which readers treat as unknown (always safe).

    Entries whose only change is their paths (data files, equality deletes) are patched in their
    bytes (`avro_patch`), which gives the same bytes as the fastavro path, several times faster;
    any file that does not qualify goes the fastavro path, with the `map_path` calls already
    made replayed rather than made twice. A data manifest the plan read (`planned`: where its
    paths sit) is spliced there without walking its entries again, when it is still those bytes.
    """
    if planned is not None and not delete_rewrites:
        with contextlib.suppress(NotPatchable):  # not the bytes planned: rewritten as any other
            return splice_manifest(data, planned, map_path)
    calls: list[tuple[str, str]] = []

    def recorded(path: str) -> str:
        calls.append((path, mapped := map_path(path)))
        return mapped

    def needs_more(path: str, content: int) -> bool:
        return content == POSITION_DELETES or (bool(delete_rewrites) and canonical(path) in delete_rewrites)

    try:
        return patch_manifest(data, recorded, needs_more)
    except NotPatchable:
        return rewrite_manifest_fastavro(uri, data, _replaying(calls, map_path), try_map, delete_rewrites)


def _replaying(calls: list[tuple[str, str]], map_path: Callable[[str], str]) -> Callable[[str], str]:
    """`map_path` answering the calls in `calls` from the record, in order, then calling through."""
    pending = iter(calls)

    def mapped(path: str) -> str:
        for old, new in pending:
            if old == path:
                return new
            break
        return map_path(path)

    return mapped


def rewrite_manifest_fastavro(
    uri: str,
    data: bytes,
    map_path: Callable[[str], str],
    try_map: Callable[[str], str | None],
    delete_rewrites: dict[str, DeleteRewrite],
) -> bytes:
    """`rewrite_manifest` by decoding every entry with fastavro and encoding it again."""
    src = read_avro(uri, data)
    for entry in src.records:
        df = entry["data_file"]
        old_path = df["file_path"]
        df["file_path"] = map_path(old_path)
        if df.get("referenced_data_file"):
            df["referenced_data_file"] = map_path(df["referenced_data_file"])
        rewrite = delete_rewrites.get(canonical(old_path)) if delete_rewrites else None
        if rewrite is not None:
            df["file_size_in_bytes"] = rewrite.size
            if rewrite.column_sizes and df.get("column_sizes"):
                df["column_sizes"] = [
                    {"key": kv["key"], "value": rewrite.column_sizes.get(kv["key"], kv["value"])}
                    for kv in df["column_sizes"]
                ]
        if is_rewritable_delete(df):
            for key, exact in (
                ("lower_bounds", rewrite and rewrite.lower_path),
                ("upper_bounds", rewrite and rewrite.upper_path),
            ):
                _replace_path_bound(df, key, exact or None, try_map)
    return write_avro(src, src.records)


def _replace_path_bound(
    data_file: dict[str, Any], key: str, exact: bytes | None, try_map: Callable[[str], str | None]
) -> None:
    bounds = data_file.get(key)
    if not bounds:
        return
    out = []
    for kv in bounds:
        if kv["key"] != DELETE_FILE_PATH_FIELD_ID:
            out.append(kv)
            continue
        if exact is not None:
            out.append({"key": kv["key"], "value": exact})
            continue
        mapped = try_map(kv["value"].decode("utf-8", "replace"))
        if mapped is not None:
            out.append({"key": kv["key"], "value": mapped.encode()})
    data_file[key] = out
