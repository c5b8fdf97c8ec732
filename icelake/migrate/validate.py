"""Check that a target table reads like its source, snapshot by snapshot, with pyiceberg.

pyiceberg is an engine that did not write the target (icelake wrote it), so a match here is
independent evidence. Row comparison reads whole snapshots: meant for demo-sized tables or a
sample; the structural checks are cheap at any size.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict
from pyiceberg.table import StaticTable

from icelake.aws.fileio import FileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro_files import manifest_entries, manifest_refs
from icelake.migrate.values import compare_rows as diff_rows
from icelake.uris import canonical, is_under


class SnapshotCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    snapshot_id: int
    sequence_number: int | None
    source_rows: int
    target_rows: int
    rows_equal: bool


class ValidationReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: bool
    problems: list[str]
    snapshots: list[SnapshotCheck]


def _rows(table: StaticTable, snapshot_id: int) -> list[tuple[object, ...]]:
    return [tuple(r.values()) for r in table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()]


def validate_tables(
    source_metadata: str,
    target_metadata: str,
    *,
    source_props: dict[str, str] | None = None,
    target_props: dict[str, str] | None = None,
    compare_rows: bool = True,
) -> ValidationReport:
    src = StaticTable.from_metadata(source_metadata, properties=source_props or {})
    dst = StaticTable.from_metadata(target_metadata, properties=target_props or {})
    sm, tm = src.metadata, dst.metadata
    problems: list[str] = []
    for name in (
        "table_uuid",
        "format_version",
        "current_snapshot_id",
        "current_schema_id",
        "default_spec_id",
    ):
        if getattr(sm, name) != getattr(tm, name):
            problems.append(f"{name}: source {getattr(sm, name)} != target {getattr(tm, name)}")
    if [s.model_dump() for s in sm.schemas] != [s.model_dump() for s in tm.schemas]:
        problems.append("schemas differ")
    if [s.model_dump() for s in sm.partition_specs] != [s.model_dump() for s in tm.partition_specs]:
        problems.append("partition specs differ")
    if {k: v.model_dump() for k, v in sm.refs.items()} != {k: v.model_dump() for k, v in tm.refs.items()}:
        problems.append("branches/tags differ")
    target_snaps = {s.snapshot_id: s for s in tm.snapshots}
    checks: list[SnapshotCheck] = []
    for s in sm.snapshots:
        t = target_snaps.get(s.snapshot_id)
        if t is None:
            problems.append(f"snapshot {s.snapshot_id} missing at the target")
            continue
        if (t.parent_snapshot_id, t.sequence_number, t.timestamp_ms, t.summary) != (
            s.parent_snapshot_id,
            s.sequence_number,
            s.timestamp_ms,
            s.summary,
        ):
            problems.append(f"snapshot {s.snapshot_id}: lineage or summary differs")
        if compare_rows:
            a, b = _rows(src, s.snapshot_id), _rows(dst, s.snapshot_id)
            diff = diff_rows(a, b)
            checks.append(
                SnapshotCheck(
                    snapshot_id=s.snapshot_id,
                    sequence_number=s.sequence_number,
                    source_rows=len(a),
                    target_rows=len(b),
                    rows_equal=diff.equal,
                )
            )
            if not diff.equal:
                problems.append(
                    f"snapshot {s.snapshot_id}: rows differ ({diff.only_in_source} only in the source, "
                    f"{diff.only_in_target} only in the target)"
                )
    if len(target_snaps) != len(sm.snapshots):
        problems.append(f"target has {len(target_snaps)} snapshots, source {len(sm.snapshots)}")
    return ValidationReport(ok=not problems, problems=problems, snapshots=checks)


def check_target_files(io: FileIO, target_metadata: str, source_prefixes: Iterable[str]) -> list[str]:
    """Every path in the target's current metadata is outside the source and exists, and every
    recorded size (manifest_length, file_size_in_bytes, statistics sizes) is the file's real size."""
    sources = [canonical(p) for p in source_prefixes]
    meta, _gz = mj.parse_metadata(target_metadata, io.read(target_metadata))
    # One listing of the table location is cheaper than a HEAD per file; other prefixes are stat-ed.
    known = {canonical(uri): info.size for uri, info in io.list(meta["location"])}
    problems: list[str] = []

    def check(path: str, recorded: int | None, what: str) -> None:
        c = canonical(path)
        if any(is_under(c, s) for s in sources):
            problems.append(f"{what} {path} is under a source prefix")
            return
        info = None if c in known else io.stat(path)
        size = known.get(c, info.size if info else None)
        if size is None:
            problems.append(f"{what} {path} is missing at the target")
        elif recorded is not None and recorded >= 0 and size != recorded:
            problems.append(f"{what} {path}: metadata says {recorded} bytes, the file has {size}")

    for path in (meta["location"], *(meta.get("properties", {}).get(k) for k in mj.PATH_PROPERTIES)):
        if path and any(is_under(canonical(path), s) for s in sources):
            problems.append(f"table location or property {path} is under a source prefix")
    for path in mj.metadata_log(meta):
        check(path, None, "logged metadata file")
    for path, size in mj.statistics_files(meta):
        check(path, size, "statistics file")
    seen: set[str] = set()
    for manifest_list in mj.manifest_lists(meta):
        check(manifest_list, None, "manifest list")
        for ref in manifest_refs(manifest_list, io.read(manifest_list)):
            check(ref.path, ref.length, "manifest")
            if ref.path in seen:
                continue
            seen.add(ref.path)
            for entry in manifest_entries(ref.path, io.read(ref.path)):
                if entry["status"] != 2:  # deleted entries may name files expired long ago
                    check(
                        entry["data_file"]["file_path"], entry["data_file"]["file_size_in_bytes"], "data file"
                    )
    return problems
