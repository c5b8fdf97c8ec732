"""What the target must not hold, and what the mapping must cover: a target under a source
prefix, a file where a directory must go, another table in the target's metadata directory, a
referenced path no mapping moves, two source paths mapped onto one target key."""

from __future__ import annotations

import itertools
import os
import posixpath
from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from icelake.aws.fileio import FileIO
from icelake.errors import (
    NotAMetadataFileError,
    TargetHoldsOtherTableError,
    UnmappedPrefixesError,
    UnsafeTargetError,
)
from icelake.migrate import metadata_json as mj
from icelake.migrate.collisions import refuse_duplicate_targets, refuse_overlapping_targets
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.migrate.plan.reads import (
    read_metadata,
)
from icelake.uris import PrefixMap, canonical, is_local, is_under, local_path

# Under a table bucket's table location: where the files its source keeps outside its own location
# go (`external_target`). Iceberg writes a table's files under data/ and metadata/ only; a source
# that has files of its own under `<location>/external/` whose keys meet an external file's is
# refused by `refuse_duplicate_targets` (two source paths, one key), never overwritten.
EXTERNAL_DIR = "external"


class TableBucketMap(PrefixMap):
    """The prefix map of a table bucket's table (`table_prefix_map`): its `target_location` is the
    table's location, under which every path maps (`with_found_prefixes`)."""

    def __init__(self, mappings: Iterable[tuple[str, str]], target_location: str) -> None:
        super().__init__(mappings)
        self.target_location = target_location


def table_prefix_map(meta: mj.Metadata, maps: Iterable[tuple[str, str]], target_location: str) -> PrefixMap:
    """The prefixes to move, checked: the table location always maps to the target location, and
    `maps` adds the other prefixes. Into a table bucket's storage (whose files must all lie under
    the table's location, and which takes no `maps`), the directories the source's metadata names
    outside its location map under the target location (`external_maps`; the files the walk finds
    elsewhere, `with_found_prefixes`): the same on every sync, whatever the step that asks."""
    maps = [*maps, (meta["location"], target_location)]
    given = PrefixMap(maps)
    _refuse_targets_under_sources(given)
    refuse_overlapping_targets(given)
    _refuse_files_in_the_way(given)
    if not is_table_storage(target_location):
        return given
    prefix_map = TableBucketMap([*maps, *external_maps(meta, target_location)], target_location)
    _refuse_targets_under_sources(prefix_map)
    return prefix_map


def external_maps(meta: mj.Metadata, target_location: str) -> list[tuple[str, str]]:
    """The `write.*.path` directories the table's metadata names outside its location, each with
    where it lands under the target location: `write.metadata.path` in `<target>/metadata` (where
    S3 Tables keeps a table's metadata; metadata files and manifests are named by UUIDs, and one
    meeting a key of the table's own is refused by `refuse_duplicate_targets`), the others by
    `external_target`."""
    location = canonical(meta["location"])
    properties = meta.get("properties", {})
    out = []
    for key in mj.PATH_PROPERTIES:
        value = properties.get(key)
        if not value or is_under(canonical(value), location) or canonical(value) == location:
            continue
        if key == "write.metadata.path":
            out.append((value, f"{target_location.rstrip('/')}/metadata"))
        else:
            out.append((value, external_target(value, target_location)))
    return out


def external_target(uri: str, target_location: str) -> str:
    """Where a path outside the table's location lands under a table bucket's table location:
    `<location>/external/<scheme>/<bucket or host><path>` (`s3://lake/x/f` ->
    `<location>/external/s3/lake/x/f`, `file:///d/f` -> `<location>/external/file/d/f`): one
    function of the path alone, so a sync maps it where the last one did, however the paths are
    grouped into prefixes, and two sources (buckets, schemes) never share a directory."""
    scheme, rest = canonical(uri).split("://", 1)
    return f"{target_location.rstrip('/')}/{EXTERNAL_DIR}/{scheme}/{rest.lstrip('/')}"


def external_mapped(prefix_map: PrefixMap) -> list[str]:
    """What a person reads of the prefixes a table bucket's map moves under the table's location
    from outside the source table's own: one line each, or none (any other map)."""
    if not isinstance(prefix_map, TableBucketMap):
        return []
    location = canonical(prefix_map.target_location)
    return [
        f"{m.source} lies outside the source table's location, and a table bucket keeps all of a "
        f"table's files under its own: its files were mapped to {m.target}"
        for m in sorted(prefix_map.mappings, key=lambda m: m.source)
        if canonical(m.target) != location
    ]


def with_found_prefixes(
    groups: Sequence[Collection[str]], prefix_map: PrefixMap, directories: set[str]
) -> tuple[PrefixMap, Counter[str]]:
    """`prefix_counts`, and the map it counted by: a table bucket's map (`TableBucketMap`) gains
    the prefixes no mapping moves (as `_unmapped_prefixes` groups them), each to its
    `external_target`; any other map is refused them (`UnmappedPrefixesError`)."""
    try:
        return prefix_map, prefix_counts(groups, prefix_map, directories)
    except UnmappedPrefixesError as exc:
        if not isinstance(prefix_map, TableBucketMap):
            raise
        location = prefix_map.target_location
        found = [(p, external_target(p, location)) for p in sorted(exc.prefixes)]
        mappings = [(m.source, m.target) for m in prefix_map.mappings]
        extended = TableBucketMap([*mappings, *found], location)
        _refuse_targets_under_sources(extended)
        return extended, prefix_counts(groups, extended, directories)


def _refuse_targets_under_sources(prefix_map: PrefixMap) -> None:
    for m in prefix_map.mappings:
        target = canonical(m.target)
        for other in prefix_map.mappings:
            if is_under(target, other.source) or is_under(other.source, target):
                raise UnsafeTargetError(
                    f"target {m.target} overlaps the source prefix {other.source}; the source is never "
                    "written: choose a target location outside every source prefix"
                )


def _refuse_files_in_the_way(prefix_map: PrefixMap) -> None:
    """A local target that is, or lies under, a regular file cannot be created: say so now,
    not when the first write fails deep inside it."""
    for m in prefix_map.mappings:
        if not is_local(m.target):
            continue
        path = local_path(m.target)
        while path and not os.path.exists(path):
            path = os.path.dirname(path)
        if path and not os.path.isdir(path):
            raise UnsafeTargetError(
                f"the target {m.target} cannot be created: {path} is a file, not a directory; "
                "choose a target location that is a directory or does not exist yet"
            )


def prefix_counts(
    groups: Sequence[Collection[str]], prefix_map: PrefixMap, directories: set[str]
) -> Counter[str]:
    """How many referenced paths each mapping moves (by its source prefix), matching each path
    once (`groups`, of canonical paths, share none); refuses unmapped paths, named by the prefixes
    they share, and two source paths that would land on one target key."""
    counts = Counter[str]()
    # `prefix_map.match_canonical` of each path, a mapping at a time (the longest first): a pass of
    # C-level string tests per mapping instead of a Python call per path (a million for a big table).
    unmapped: Collection[str] = list(itertools.chain.from_iterable(groups))
    for m in prefix_map.mappings:
        inside = m.source + "/"
        rest = [p for p in unmapped if not (p.startswith(inside) or p == m.source)]
        if len(rest) < len(unmapped):
            counts[m.source] = len(unmapped) - len(rest)
        unmapped = rest
    if unmapped:
        raise UnmappedPrefixesError(_unmapped_prefixes(unmapped, prefix_map, directories))
    if len(prefix_map.mappings) > 1:  # one prefix replacement never maps two paths onto one key
        refuse_duplicate_targets(itertools.chain.from_iterable(groups), prefix_map)
    return counts


def _unmapped_prefixes(paths: Iterable[str], prefix_map: PrefixMap, directories: set[str]) -> dict[str, int]:
    """Unmapped paths grouped by the longest prefix they share per bucket (or file system).

    `directories` are paths that name a directory (the table location, `write.*.path` values):
    their own path is the prefix, where a file's prefix is its parent directory."""
    groups: dict[str, list[str]] = {}
    for p in paths:
        if prefix_map.match(p) is None:
            c = canonical(p)
            scheme, rest = c.split("://", 1)
            authority = rest.split("/", 1)[0]
            groups.setdefault(f"{scheme}://{authority}", []).append(c)
    dirs_canonical = {canonical(d) for d in directories}
    out: dict[str, int] = {}
    for root, members in groups.items():
        dirs = [m if m in dirs_canonical or m == root else posixpath.dirname(m) for m in members]
        common = posixpath.commonpath([d.split("://", 1)[1] for d in dirs])
        out[f"{root.split('://', 1)[0]}://{common}"] = len(members)
    return out


def _is_metadata_name(name: str) -> bool:
    return name.endswith((".metadata.json", ".metadata.json.gz"))


def refuse_other_table(dst_io: FileIO, metadata_dir: str, source_uuid: str | None) -> None:
    """A target metadata directory may only hold this same table (a previous run of ours). Not
    asked on S3 Tables' storage, which takes no listing: its table is the catalog's own, and
    icelake writes only a table it created (its owner mark)."""
    if is_table_storage(metadata_dir):
        return
    try:
        existing = sorted(u for u, _ in dst_io.list(metadata_dir) if _is_metadata_name(u))
    except Exception:
        existing = []
    for uri in existing[-1:]:
        try:
            found = mj.table_uuid(read_metadata(dst_io, uri)[0])
        except NotAMetadataFileError:
            continue
        if found and source_uuid and found != source_uuid:
            raise TargetHoldsOtherTableError(metadata_dir, found, source_uuid)
