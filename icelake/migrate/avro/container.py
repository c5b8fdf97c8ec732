"""The Avro object container file as fastavro writes it: its header (magic, metadata map, sync
marker), written and read, and its blocks, their sizes and sync markers checked and their bytes
inflated. Used by `avro_patch` and `avro_files` (a rewritten file gets the header it had) and
`avro_entries` (a manifest's blocks)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from icelake.errors import NotPatchable
from icelake.migrate.avro.primitives import read_long, zigzag

# fastavro's Writer closes a block once its buffer holds this many bytes (1000 * SYNC_SIZE).
SYNC_INTERVAL = 16000
MAGIC = b"Obj\x01"
SYNC_SIZE = 16


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
