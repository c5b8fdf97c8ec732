"""Delete files that carry data-file paths in their bytes: position deletes and deletion vectors.

Both are rewritten with mapped paths; what the rewrite changes (file size, the bounds and the
column size of the `file_path` column) is returned so that the manifests can record the truth.
"""

from __future__ import annotations

import io
import json
import struct
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from icelake.aws.fileio import FileIO
from icelake.errors import DamagedSourceFileError, UnsupportedFileError
from icelake.migrate.avro.files import DeleteRewrite, read_avro, write_avro

PUFFIN_MAGIC = b"PFA1"
_FOOTER_COMPRESSED_FLAG = 0x1


PARQUET_MAGIC = b"PAR1"
_TAIL_GUESS = 64 * 1024  # one ranged read covers the footer of almost every delete file
if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow (40 MB of resident memory in every process that imports it) is imported where a Parquet
# delete file is read, not with this module: most tables have none, and every planning process
# and worker imports this module.


def _parse_errors() -> tuple[type[BaseException], ...]:
    """What a damaged file makes pyarrow (once a Parquet file was read) or the JSON/struct
    parsing raise. An `except` clause evaluates this only when something was raised."""
    errors: tuple[type[BaseException], ...] = (OSError, ValueError, KeyError, IndexError, struct.error)
    arrow = sys.modules.get("pyarrow")
    return errors if arrow is None else (arrow.ArrowException, *errors)


def check_delete_file(io: FileIO, uri: str, file_format: str, size: int) -> None:
    """Read a delete file's footer, not its data, and refuse a damaged one before anything is
    written: Parquet footers (and that they name `file_path`), Puffin footers (and that every
    blob lies inside the file). Avro has no footer; it is checked when it is rewritten."""
    fmt = file_format.upper()
    try:
        if fmt == "PARQUET":
            _check_parquet_footer(uri, _tail(io, uri, size, PARQUET_MAGIC, _parquet_tail_length), size)
        elif fmt == "PUFFIN":
            _puffin_footer(uri, _tail(io, uri, size, PUFFIN_MAGIC, _puffin_tail_length), size)
    except (UnsupportedFileError, DamagedSourceFileError):
        raise
    except _parse_errors() as exc:
        raise DamagedSourceFileError(uri, f"unreadable footer: {exc}", before_writing=True) from exc


def _tail(io: FileIO, uri: str, size: int, magic: bytes, tail_length: Callable[[bytes], int]) -> bytes:
    """The footer and what follows it: one ranged read, a second only for a very large footer."""
    tail = io.read_tail(uri, min(size, _TAIL_GUESS))
    if len(tail) < 12 or tail[-4:] != magic:
        raise DamagedSourceFileError(uri, f"no {magic.decode()} magic at its end", before_writing=True)
    needed = tail_length(tail)
    if needed < 12 or needed + len(magic) > size:  # the file also starts with the magic
        raise DamagedSourceFileError(
            uri, f"its footer claims {needed} bytes of a {size}-byte file", before_writing=True
        )
    return tail if needed <= len(tail) else io.read_tail(uri, needed)


def _parquet_tail_length(tail: bytes) -> int:
    """Footer metadata + its length (int32 LE) + magic."""
    return int.from_bytes(tail[-8:-4], "little", signed=True) + 8


def _check_parquet_footer(uri: str, tail: bytes, size: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    footer = tail[-_parquet_tail_length(tail) :]
    meta = pq.read_metadata(pa.BufferReader(PARQUET_MAGIC + footer))
    if "file_path" not in meta.schema.names:
        raise UnsupportedFileError(f"{uri} is a position-delete file without a file_path column")
    data_end = size - len(footer)
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for c in range(group.num_columns):
            col = group.column(c)
            start = col.dictionary_page_offset or col.data_page_offset
            if start < len(PARQUET_MAGIC) or start + col.total_compressed_size > data_end:
                raise DamagedSourceFileError(
                    uri, f"column chunk {col.path_in_schema} lies outside the file", before_writing=True
                )


def rewrite_delete_file(
    uri: str, data: bytes, file_format: str, map_path: Callable[[str], str]
) -> tuple[bytes, DeleteRewrite]:
    fmt = file_format.upper()
    try:
        if fmt == "PARQUET":
            return _rewrite_parquet_position_deletes(uri, data, map_path)
        if fmt == "AVRO":
            return _rewrite_avro_position_deletes(uri, data, map_path)
        if fmt == "PUFFIN":
            out = rewrite_puffin(uri, data, map_path)
            return out, DeleteRewrite(size=len(out))
    except (UnsupportedFileError, DamagedSourceFileError):
        raise
    except _parse_errors() as exc:  # a damaged page: the footer was fine, the data is not
        raise DamagedSourceFileError(uri, str(exc), before_writing=False) from exc
    raise UnsupportedFileError(
        f"{uri}: position deletes in {file_format} cannot be rewritten yet; "
        "rewrite them to Parquet at the source (rewrite_position_delete_files) and retry"
    )


def _leaf_field_ids(schema: pa.Schema) -> dict[str, int]:
    """Parquet column path -> Iceberg field id, from the Arrow field metadata."""
    import pyarrow as pa

    out: dict[str, int] = {}

    def visit(field: pa.Field, prefix: str) -> None:
        path = f"{prefix}{field.name}"
        fid = (field.metadata or {}).get(b"PARQUET:field_id")
        t = field.type
        if pa.types.is_struct(t):
            for child in t:
                visit(child, path + ".")
        elif fid is not None:
            out[path] = int(fid)

    for f in schema:
        visit(f, "")
    return out


def _rewrite_parquet_position_deletes(
    uri: str, data: bytes, map_path: Callable[[str], str]
) -> tuple[bytes, DeleteRewrite]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(io.BytesIO(data))
    table = pf.read()
    if "file_path" not in table.column_names:
        raise UnsupportedFileError(f"{uri} is a position-delete file without a file_path column")
    meta = pf.metadata
    codec = meta.row_group(0).column(0).compression if meta.num_row_groups else "ZSTD"
    row_group_rows = (
        max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) if meta.num_row_groups else None
    )

    # Map each distinct path once: a delete file lists the same data file many times.
    paths = table.column("file_path").combine_chunks().dictionary_encode()
    mapped_dict = pa.array([map_path(p) for p in paths.dictionary.to_pylist()], type=pa.string())
    new_paths = pc.take(mapped_dict, paths.indices)
    idx = table.column_names.index("file_path")
    table = table.set_column(idx, table.schema.field(idx), new_paths)

    out = io.BytesIO()
    pq.write_table(
        table,
        out,
        compression=codec.lower() if codec != "UNCOMPRESSED" else "none",
        row_group_size=row_group_rows,
        write_statistics=True,
    )
    raw = out.getvalue()
    new_meta = pq.ParquetFile(io.BytesIO(raw)).metadata
    ids = _leaf_field_ids(table.schema)
    sizes: dict[int, int] = {}
    for rg in range(new_meta.num_row_groups):
        group = new_meta.row_group(rg)
        for c in range(group.num_columns):
            col = group.column(c)
            fid = ids.get(col.path_in_schema)
            if fid is not None:
                sizes[fid] = sizes.get(fid, 0) + col.total_compressed_size
    bounds = pc.min_max(new_paths)
    lower, upper = bounds["min"].as_py(), bounds["max"].as_py()
    return raw, DeleteRewrite(
        size=len(raw),
        lower_path=lower.encode() if lower is not None else None,
        upper_path=upper.encode() if upper is not None else None,
        column_sizes=sizes,
    )


def _rewrite_avro_position_deletes(
    uri: str, data: bytes, map_path: Callable[[str], str]
) -> tuple[bytes, DeleteRewrite]:
    src = read_avro(uri, data)
    for rec in src.records:
        rec["file_path"] = map_path(rec["file_path"])
    raw = write_avro(src, src.records)
    paths = [r["file_path"] for r in src.records]
    return raw, DeleteRewrite(
        size=len(raw),
        lower_path=min(paths).encode() if paths else None,
        upper_path=max(paths).encode() if paths else None,
    )


def rewrite_puffin(uri: str, data: bytes, map_path: Callable[[str], str]) -> bytes:
    """Map `referenced-data-file` in the footer. Blobs and their offsets are unchanged.

    Layout: magic | blobs | magic | footer JSON | footer length (int32 LE) | flags (4 bytes) | magic.
    """
    if len(data) < 20 or data[:4] != PUFFIN_MAGIC:
        raise UnsupportedFileError(f"{uri} is not a Puffin file")
    footer = _puffin_footer(uri, data, len(data), before_writing=False)
    payload_size = _puffin_tail_length(data) - 16
    flags = data[-8:-4]
    footer_start = len(data) - 12 - payload_size - 4
    for blob in footer.get("blobs", []):
        props = blob.get("properties") or {}
        if "referenced-data-file" in props:
            props["referenced-data-file"] = map_path(props["referenced-data-file"])
    payload = json.dumps(footer, separators=(",", ":")).encode()
    return (
        data[:footer_start] + PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + flags + PUFFIN_MAGIC
    )


def _puffin_tail_length(tail: bytes) -> int:
    """Footer magic + footer JSON + its length (int32 LE) + flags + magic."""
    return int(struct.unpack("<i", tail[-12:-8])[0]) + 16


def _puffin_footer(uri: str, tail: bytes, size: int, *, before_writing: bool = True) -> dict[str, Any]:
    """The footer JSON of a Puffin file from the bytes that end it, checked against the file size.

    Layout: magic | blobs | magic | footer JSON | footer length (int32 LE) | flags (4 bytes) | magic.
    """
    if tail[-4:] != PUFFIN_MAGIC:
        raise DamagedSourceFileError(uri, "no PFA1 magic at its end", before_writing=before_writing)
    if tail[-8] & _FOOTER_COMPRESSED_FLAG:
        raise UnsupportedFileError(f"{uri}: compressed Puffin footers are not supported")
    length = _puffin_tail_length(tail)
    start = len(tail) - length
    if start < 0 or tail[start : start + 4] != PUFFIN_MAGIC:
        raise DamagedSourceFileError(
            uri, "its Puffin footer does not start with the magic", before_writing=before_writing
        )
    footer = json.loads(tail[start + 4 : len(tail) - 12])
    if not isinstance(footer, dict):
        raise DamagedSourceFileError(
            uri, "its Puffin footer is not a JSON object", before_writing=before_writing
        )
    blobs_end = size - length
    for blob in footer.get("blobs", []):
        if int(blob["offset"]) < 4 or int(blob["offset"]) + int(blob["length"]) > blobs_end:
            raise DamagedSourceFileError(
                uri, "a Puffin blob lies outside the file", before_writing=before_writing
            )
    return footer
