"""Table metadata files (`*.metadata.json`, optionally gzip-compressed): read, list paths, rewrite."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from typing import Any, Literal, NotRequired, Required

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from icelake.errors import NotAMetadataFileError
from icelake.uris import Mapping, PrefixMap

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
    text, gz = _decompressed(uri, raw)
    return _parse_text(uri, text), gz


def _decompressed(uri: str, raw: bytes) -> tuple[bytes, bool]:
    """The file's JSON text and whether it was gzip-compressed."""
    gz = raw[:2] == b"\x1f\x8b"
    try:
        return (gzip.decompress(raw) if gz else raw), gz
    except (OSError, ValueError) as exc:
        raise NotAMetadataFileError(uri, f"not JSON: {exc}") from exc


def _parse_text(uri: str, text: bytes) -> Metadata:
    try:
        meta = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise NotAMetadataFileError(uri, f"not JSON: {exc}") from exc
    if not isinstance(meta, dict) or "format-version" not in meta or "location" not in meta:
        raise NotAMetadataFileError(uri, "no 'format-version' and 'location' fields")
    if meta["format-version"] not in (1, 2, 3):
        raise NotAMetadataFileError(uri, f"unsupported format-version {meta['format-version']}")
    try:
        _SHAPE.validate_python(meta, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
        found = type(first["input"]).__name__ if first["type"] != "missing" else "nothing"
        raise NotAMetadataFileError(uri, f"field '{where}': {first['msg'].lower()}, found {found}") from exc
    return meta


# The fields icelake reads paths from, with the types the spec gives them: a damaged or
# hand-edited file is refused with the field named, not met later as a TypeError. The other
# fields are dropped, not kept: the shape is only checked, and copying a thousand snapshots'
# summaries into it tripled the check's cost. Typed dicts, not models: pydantic validates a
# thousand snapshots into dicts 3.5 times faster than into model instances (2.1 against 7.4 ms
# for a file of 800 KB), and a history of a thousand files is parsed twice (plan, rewrite).
_Snapshot = TypedDict("_Snapshot", {"manifest-list": str | None, "manifests": list[str] | None}, total=False)
_LogEntry = TypedDict("_LogEntry", {"metadata-file": str})
_Statistics = TypedDict(
    "_Statistics", {"statistics-path": str, "file-size-in-bytes": NotRequired[int | None]}
)
_Shape = TypedDict(
    "_Shape",
    {
        "format-version": Required[Literal[1, 2, 3]],
        "location": Required[str],
        "table-uuid": str | None,
        "properties": dict[str, str],
        "snapshots": list[_Snapshot],
        "metadata-log": list[_LogEntry],
        "statistics": list[_Statistics],
        "partition-statistics": list[_Statistics],
    },
    total=False,
)
_SHAPE = TypeAdapter(_Shape)  # validated with strict=True; keys it does not name are dropped


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


def referenced_paths(meta: Metadata) -> list[str]:
    """Every path written in this metadata file (all of them must be mapped)."""
    return _referenced(_SHAPE.validate_python(meta, strict=True))


def _referenced(shape: _Shape) -> list[str]:
    return _version_paths(shape)[0]


# A version's referenced paths, and where its manifest lists and statistics files are among them:
# paths[lists_at:stats_at] are its manifest lists and paths[stats_at:] its statistics files
# (lists_at is -1 when v1 inline manifests lie between the lists). The plan learns the older
# versions' lists from it (`icelake.migrate.history`) without a second list of them crossing the
# process pipe.
VersionPaths = tuple[list[str], int, int]


def _version_paths(shape: _Shape) -> VersionPaths:
    paths = [shape["location"]]
    properties = shape.get("properties", {})
    paths += [value for key in PATH_PROPERTIES if (value := properties.get(key))]
    paths += [entry["metadata-file"] for entry in shape.get("metadata-log", ())]
    lists_at, inline = len(paths), False
    for snapshot in shape.get("snapshots", ()):
        if (manifest_list := snapshot.get("manifest-list")) is not None:
            paths.append(manifest_list)
        if manifests := snapshot.get("manifests"):
            paths += manifests
            inline = True
    stats_at = len(paths)
    paths += [s["statistics-path"] for s in shape.get("statistics", ())]
    paths += [s["statistics-path"] for s in shape.get("partition-statistics", ())]
    return paths, -1 if inline else lists_at, stats_at


def version_paths(meta: Metadata) -> VersionPaths:
    """`referenced_paths`, with where its manifest lists and statistics files are (VersionPaths)."""
    return _version_paths(_SHAPE.validate_python(meta, strict=True))


def _shape_of_text(text: bytes) -> _Shape | None:
    """The fields icelake reads paths from, parsed and checked straight from the JSON text by
    pydantic's own parser (about half the cost of `json.loads` and the check: a history of a
    thousand snapshots is a thousand files of up to a megabyte), or None where it does not take
    the text; the callers then parse it as `parse_metadata` does, which accepts or explains."""
    try:
        return _SHAPE.validate_json(text, strict=True)
    except ValueError:  # ValidationError, for bad JSON as for a bad shape
        return None


def rewrite_metadata(
    meta: Metadata, map_path: Callable[[str], str], keep_log: Callable[[str], bool]
) -> Metadata:
    """A copy of `meta` with every path mapped. Log entries whose file is gone are dropped.

    Only the containers that hold paths are copied (shallowly); everything else is shared with
    `meta`, which is never modified. A deep copy would dominate the cost on long histories.
    """
    out = dict(meta)
    out["location"] = map_path(meta["location"])
    if "properties" in meta:
        out["properties"] = {
            k: (map_path(v) if k in PATH_PROPERTIES else v) for k, v in meta["properties"].items()
        }
    if "metadata-log" in meta:
        out["metadata-log"] = [
            {**e, "metadata-file": map_path(e["metadata-file"])}
            for e in meta["metadata-log"]
            if keep_log(e["metadata-file"])
        ]
    if "snapshots" in meta:
        out["snapshots"] = [_rewrite_snapshot(s, map_path) for s in meta["snapshots"]]
    for key in ("statistics", "partition-statistics"):
        if key in meta:
            out[key] = [{**s, "statistics-path": map_path(s["statistics-path"])} for s in meta[key]]
    return out


def _rewrite_snapshot(snap: dict[str, Any], map_path: Callable[[str], str]) -> dict[str, Any]:
    out = dict(snap)
    if "manifest-list" in snap:
        out["manifest-list"] = map_path(snap["manifest-list"])
    if "manifests" in snap:
        out["manifests"] = [map_path(m) for m in snap["manifests"]]
    return out


def rewrite_metadata_bytes(
    uri: str,
    raw: bytes,
    map_path: Callable[[str], str],
    keep_log: Callable[[str], bool],
    proven: Proven | None = None,
) -> bytes:
    """The file `raw` with every path mapped and log entries whose file is gone dropped: the
    structural rewrite (`rewrite_metadata`, then `serialize_metadata`), or the same values got by
    replacing the location's prefix in the file's own text where that is provably exact.

    The text is used when every path field starts with the location L (spelled alike) and maps to
    T + its remainder, no log entry is dropped, L and T are printable ASCII without `"` or `\\`, and
    no escape in the text could spell an ASCII character (`\\/`, `\\u0020`-`\\u007f`). Then each
    path field's string token starts with the bytes `"L` followed by `/` or `"`, so that pattern
    occurs at least once per path field; when it occurs exactly that many times, no key, other
    value or escaped quote holds it, and replacing `"L` by `"T` maps exactly the path fields. The
    file keeps its own formatting, key order and number spellings, and costs no JSON encoding.

    `proven`: the paths already shown to map by their file's location's prefix with this
    `map_path` (`proven_paths`); the ones this file proves are added.
    """
    text, gz = _decompressed(uri, raw)
    shape = _shape_of_text(text)
    fast = None if shape is None else _prefix_replaced(shape, text, map_path, keep_log, proven)
    if fast is None:
        return serialize_metadata(rewrite_metadata(_parse_text(uri, text), map_path, keep_log), gz)
    # mtime=0, as in serialize_metadata: the same input always gives the same bytes.
    return gzip.compress(fast, mtime=0) if gz else fast


# An escape that could spell a character of a location: `\/`, or `\u0020` to `\u007f`.
_ASCII_ESCAPE = re.compile(rb"\\(?:/|u00[2-7][0-9a-fA-F])")


def _prefix_replaced(
    shape: _Shape,
    text: bytes,
    map_path: Callable[[str], str],
    keep_log: Callable[[str], bool],
    proven: Proven | None,
) -> bytes | None:
    """`text` with the location's prefix replaced in every path field, or None when that is not
    provably exact (see `rewrite_metadata_bytes`)."""
    if not all(keep_log(entry["metadata-file"]) for entry in shape.get("metadata-log", ())):
        return None
    location = shape["location"]
    paths = _path_fields(shape)
    known = proven.setdefault(location, set()) if proven is not None else set()
    try:
        target = map_path(location)
        if not all(p in known or _maps_by_prefix(p, location, target, map_path) for p in paths):
            return None
    except Exception:  # e.g. an unmapped path: the structural rewrite raises it, as it always has
        return None
    if len(known) < MAX_PROVEN_PATHS:
        known.update(paths)
    if not (_plain(location) and _plain(target)) or _ASCII_ESCAPE.search(text):
        return None
    # T holds no backslash (checked), so it is a literal replacement.
    pattern = re.compile(b'"' + re.escape(location.encode()) + b'(?=[/"])')
    out, found = pattern.subn(b'"' + target.encode(), text)
    return out if found == len(paths) else None


def _path_fields(shape: _Shape) -> list[str]:
    """The values `rewrite_metadata` maps: the referenced paths, and path properties left empty."""
    empty = [v for k, v in shape.get("properties", {}).items() if k in PATH_PROPERTIES and not v]
    return [*_referenced(shape), *empty]


def _maps_by_prefix(path: str, location: str, target: str, map_path: Callable[[str], str]) -> bool:
    if path != location and not path.startswith(location + "/"):
        return False
    return map_path(path) == target + path[len(location) :]


def _plain(s: str) -> bool:
    """Non-empty printable ASCII without `"` or `\\`: its JSON spelling is itself."""
    return bool(s) and s.isascii() and s.isprintable() and '"' not in s and "\\" not in s


# A history of a thousand metadata files names mostly the same paths in each (the log, the
# snapshots' manifest lists): proving each path's mapping once per process, not once per file,
# saves microseconds two million times. Bounded: a longer history proves the rest every time.
MAX_PROVEN_PATHS = 200_000
# location -> the paths shown to map by its prefix (`_maps_by_prefix`), under one prefix map.
Proven = dict[str, set[str]]
_PROVEN: dict[tuple[Mapping, ...], Proven] = {}


def proven_paths(prefix_map: PrefixMap) -> Proven:
    """This process's paths proven to map by their location's prefix under `prefix_map` (see
    `rewrite_metadata_bytes`); a map not seen before starts empty."""
    key = tuple(prefix_map.mappings)
    if key not in _PROVEN:
        _PROVEN.clear()  # one table at a time
        _PROVEN[key] = {}
    return _PROVEN[key]


def rewrite_file_job(uri: str, raw: bytes, prefix_map: PrefixMap, kept: frozenset[str]) -> bytes | None:
    """One metadata.json rewritten with `rewrite_metadata_bytes` (a top-level function, to run in
    a worker process), or None when it cannot be: errors do not cross processes intact, so the
    caller redoes that file in its own process."""
    try:
        return rewrite_metadata_bytes(
            uri, raw, prefix_map.require, kept.__contains__, proven_paths(prefix_map)
        )
    except Exception:
        return None


def referenced_paths_job(uri: str, raw: bytes) -> list[str] | None:
    """`referenced_paths` of one metadata.json (a top-level function, to run in a worker
    process), or None when it cannot be parsed: the caller then parses it and raises."""
    found = version_paths_job(uri, raw)
    return None if found is None else found[0]


def version_paths_job(uri: str, raw: bytes) -> VersionPaths | None:
    """`version_paths` of one metadata.json, as `referenced_paths_job` makes its paths."""
    try:
        shape = _shape_of_text(_decompressed(uri, raw)[0])
    except Exception:
        return None
    return None if shape is None else _version_paths(shape)
