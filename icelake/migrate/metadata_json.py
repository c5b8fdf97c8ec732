"""Table metadata files (`*.metadata.json`, optionally gzip-compressed): read, list paths, rewrite."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable, Iterator
from typing import Any

from icelake.errors import NotAMetadataFileError

# Table properties whose values are locations the table writes to.
PATH_PROPERTIES = (
    "write.data.path",
    "write.metadata.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)

Metadata = dict[str, Any]


def parse_metadata(uri: str, raw: bytes) -> tuple[Metadata, bool]:
    """The metadata dict and whether the file was gzip-compressed."""
    gz = raw[:2] == b"\x1f\x8b"
    try:
        text = gzip.decompress(raw) if gz else raw
        meta = json.loads(text)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise NotAMetadataFileError(uri, f"not JSON: {exc}") from exc
    if not isinstance(meta, dict) or "format-version" not in meta or "location" not in meta:
        raise NotAMetadataFileError(uri, "no 'format-version' and 'location' fields")
    if meta["format-version"] not in (1, 2, 3):
        raise NotAMetadataFileError(uri, f"unsupported format-version {meta['format-version']}")
    return meta, gz


def serialize_metadata(meta: Metadata, gz: bool) -> bytes:
    raw = json.dumps(meta, separators=(",", ":")).encode()
    # mtime=0 keeps the bytes deterministic, so a re-run recognises its own output.
    return gzip.compress(raw, mtime=0) if gz else raw


def table_uuid(meta: Metadata) -> str | None:
    value = meta.get("table-uuid")
    return str(value) if value else None


def metadata_log(meta: Metadata) -> list[str]:
    return [entry["metadata-file"] for entry in meta.get("metadata-log", [])]


def manifest_lists(meta: Metadata) -> list[str]:
    return [s["manifest-list"] for s in meta.get("snapshots", []) if "manifest-list" in s]


def inline_manifests(meta: Metadata) -> list[str]:
    """v1 snapshots written before manifest lists existed carry a `manifests` array instead."""
    return [m for s in meta.get("snapshots", []) for m in s.get("manifests", [])]


def statistics_files(meta: Metadata) -> list[tuple[str, int | None]]:
    out = [(s["statistics-path"], s.get("file-size-in-bytes")) for s in meta.get("statistics", [])]
    out += [(s["statistics-path"], s.get("file-size-in-bytes")) for s in meta.get("partition-statistics", [])]
    return out


def referenced_paths(meta: Metadata) -> Iterator[str]:
    """Every path written in this metadata file (all of them must be mapped)."""
    yield meta["location"]
    for key in PATH_PROPERTIES:
        if value := meta.get("properties", {}).get(key):
            yield value
    yield from metadata_log(meta)
    yield from manifest_lists(meta)
    yield from inline_manifests(meta)
    for path, _size in statistics_files(meta):
        yield path


def rewrite_metadata(
    meta: Metadata, map_path: Callable[[str], str], keep_log: Callable[[str], bool]
) -> Metadata:
    """A copy of `meta` with every path mapped. Log entries whose file is gone are dropped."""
    out = copy.deepcopy(meta)
    out["location"] = map_path(meta["location"])
    props = out.get("properties", {})
    for key in PATH_PROPERTIES:
        if key in props:
            props[key] = map_path(props[key])
    if "metadata-log" in out:
        out["metadata-log"] = [
            {**e, "metadata-file": map_path(e["metadata-file"])}
            for e in out["metadata-log"]
            if keep_log(e["metadata-file"])
        ]
    for snap in out.get("snapshots", []):
        if "manifest-list" in snap:
            snap["manifest-list"] = map_path(snap["manifest-list"])
        if "manifests" in snap:
            snap["manifests"] = [map_path(m) for m in snap["manifests"]]
    for key in ("statistics", "partition-statistics"):
        for stat in out.get(key, []):
            stat["statistics-path"] = map_path(stat["statistics-path"])
    return out
