"""Delete files that carry data-file paths in their bytes: position deletes and deletion vectors.

Both are rewritten with mapped paths; what the rewrite changes (file size, the bounds and the
column size of the `file_path` column) is returned so that the manifests can record the truth.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icelake.errors import UnsupportedFileError
from icelake.migrate.avro_files import DeleteRewrite, read_avro, write_avro

PUFFIN_MAGIC = b"PFA1"
_FOOTER_COMPRESSED_FLAG = 0x1


def rewrite_delete_file(
    uri: str, data: bytes, file_format: str, map_path: Callable[[str], str]
) -> tuple[bytes, DeleteRewrite]:
    fmt = file_format.upper()
    if fmt == "PARQUET":
        return _rewrite_parquet_position_deletes(uri, data, map_path)
    if fmt == "AVRO":
        return _rewrite_avro_position_deletes(uri, data, map_path)
    if fmt == "PUFFIN":
        out = rewrite_puffin(uri, data, map_path)
        return out, DeleteRewrite(size=len(out))
    raise UnsupportedFileError(
        f"{uri}: position deletes in {file_format} cannot be rewritten yet; "
        "rewrite them to Parquet at the source (rewrite_position_delete_files) and retry"
    )


def _leaf_field_ids(schema: pa.Schema) -> dict[str, int]:
    """Parquet column path -> Iceberg field id, from the Arrow field metadata."""
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
    if len(data) < 20 or data[:4] != PUFFIN_MAGIC or data[-4:] != PUFFIN_MAGIC:
        raise UnsupportedFileError(f"{uri} is not a Puffin file")
    (payload_size,) = struct.unpack("<i", data[-12:-8])
    flags = data[-8:-4]
    if flags[0] & _FOOTER_COMPRESSED_FLAG:
        raise UnsupportedFileError(f"{uri}: compressed Puffin footers are not supported")
    footer_start = len(data) - 12 - payload_size - 4
    if data[footer_start : footer_start + 4] != PUFFIN_MAGIC:
        raise UnsupportedFileError(f"{uri}: Puffin footer is damaged")
    footer = json.loads(data[footer_start + 4 : footer_start + 4 + payload_size])
    for blob in footer.get("blobs", []):
        props = blob.get("properties") or {}
        if "referenced-data-file" in props:
            props["referenced-data-file"] = map_path(props["referenced-data-file"])
    payload = json.dumps(footer, separators=(",", ":")).encode()
    return (
        data[:footer_start] + PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + flags + PUFFIN_MAGIC
    )
