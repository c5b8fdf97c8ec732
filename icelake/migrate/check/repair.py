"""Repair (mode "repair"): the damaged or missing files of a target written again from the source,
only where the result is provably what was written before.

- A copied file (data, statistics) is copied again when the source object is still the one the
  record says was copied (its size, and its ETag or full-object checksum): the new copy is
  verified against it end to end, as any copy (`copy/objects.py`).
- A rewritten file (delete file, manifest, manifest list, metadata.json) is rewritten again from
  its source file with the function that wrote it, and written only when the bytes are the ones
  recorded (their SHA-256): a source changed since the copy gives other bytes, and is named.

Everything is read and decided before anything is written; the keys are then journaled
(`journal` callback, as every copy's are) and written in commit order: data and delete files,
manifests, manifest lists, metadata.json last. A PUT or CopyObject replaces an object whole, so a
reader meets the damaged object or the repaired one, never half of one; the Glue table is not
touched and stays readable wherever it was readable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from icelake.aws.fileio import FileIO, ObjectInfo, sha256_b64
from icelake.errors import NotRepairable
from icelake.migrate import metadata_json as mj
from icelake.migrate.avro.files import DeleteRewrite
from icelake.migrate.avro.patch import ListHeads
from icelake.migrate.check.proved import Damage
from icelake.migrate.check.record import COPY, Proof, Record, checksum_pair, checksum_text
from icelake.migrate.copy.cpu_pool import rewrite_manifest_job, rewrite_manifest_lists
from icelake.migrate.copy.objects import CopySettings, copy_file_proved
from icelake.migrate.delete_files import rewrite_delete_file
from icelake.migrate.plan_scan import entry_fields
from icelake.uris import PrefixMap, canonical

# The order repairs are written in: what is referenced before what references it.
WRITE_ORDER = {COPY: 0, "delete file": 0, "data manifest": 1, "delete manifest": 1, "manifest list": 2}
RESTORE = (
    "restore it from a backup or the bucket's object versions, or roll the table back to a snapshot "
    "that does not need it"
)


@dataclass(frozen=True)
class Unrepairable:
    damage: Damage
    why: str  # what stops icelake from writing it again

    def __str__(self) -> str:
        d = self.damage
        needed = ", ".join(str(s) for s in d.snapshots) or "none of the retained ones found"
        return f"{d}; not repaired: {self.why}; snapshots that need it: {needed}; {RESTORE}"


@dataclass(frozen=True)
class Repair:
    damage: Damage
    proof: Proof
    data: bytes | None  # the rewritten bytes; None: copied again from `source_info`
    source_info: ObjectInfo | None = None


@dataclass(frozen=True)
class RepairSources:
    """Where repairs come from: the source's files, and how its paths map to the target's."""

    io: FileIO
    prefix_map: PrefixMap
    record: Record
    current: str  # the target's current metadata.json: written last


def plan_repairs(damaged: list[Damage], sources: RepairSources) -> tuple[list[Repair], list[Unrepairable]]:
    """Each damaged file either repaired (its bytes or source object checked) or named as not."""
    repairs: list[Repair] = []
    refused: list[Unrepairable] = []
    for damage in damaged:
        proof = sources.record.get(damage.path)
        if proof is None:
            refused.append(
                Unrepairable(damage, "it is not on the copy record, so what belongs there is unproven")
            )
            continue
        try:
            repairs.append(_repair(damage, proof, sources))
        except NotRepairable as exc:
            refused.append(Unrepairable(damage, str(exc)))
    current = canonical(sources.current)
    repairs.sort(key=lambda r: WRITE_ORDER.get(r.proof.kind, 3 + (canonical(r.proof.target) == current)))
    return repairs, refused


def _repair(damage: Damage, proof: Proof, sources: RepairSources) -> Repair:
    if proof.kind == COPY:
        return Repair(damage, proof, None, _source_as_copied(proof, sources.io))
    try:
        raw = sources.io.read(proof.source)
    except Exception as exc:
        raise NotRepairable(
            f"its source {proof.source} cannot be read ({type(exc).__name__}: the source is gone)"
        ) from exc
    data = _rewritten(proof, raw, sources)
    if f"SHA256:{sha256_b64(data)}" != proof.checksum:
        raise NotRepairable(
            f"rewriting it again from {proof.source} gives other bytes than were written: the source "
            "changed since the copy"
        )
    return Repair(damage, proof, data)


def _source_as_copied(proof: Proof, io: FileIO) -> ObjectInfo:
    now = io.stat(proof.source)
    if now is None:
        raise NotRepairable(f"its source {proof.source} is gone")
    changed = now.size != proof.source_size
    if not changed and proof.source_etag and now.etag:
        changed = now.etag != proof.source_etag
    recorded = checksum_pair(proof.source_checksum)
    if not changed and recorded and now.checksum and now.checksum[0] == recorded[0]:
        changed = now.checksum != recorded
    if changed:
        raise NotRepairable(
            f"its source {proof.source} changed since the copy ({now.size} bytes, ETag {now.etag}; "
            f"copied: {proof.source_size} bytes, ETag {proof.source_etag})"
        )
    return now


def _rewritten(proof: Proof, raw: bytes, sources: RepairSources) -> bytes:
    """The file rewritten again as the copy rewrote it."""
    require = sources.prefix_map.require
    if proof.kind == "delete file":
        return rewrite_delete_file(proof.source, raw, _delete_format(proof.source), require)[0]
    if proof.kind == "data manifest":
        return rewrite_manifest_job(proof.source, raw, sources.prefix_map, {})
    if proof.kind == "delete manifest":
        return rewrite_manifest_job(
            proof.source, raw, sources.prefix_map, _delete_rewrites(proof, raw, sources)
        )
    if proof.kind == "manifest list":
        lengths = {
            canonical(p.source): p.size
            for p in sources.record
            if p.kind in ("data manifest", "delete manifest")
        }
        heads = ListHeads(require, lengths)
        return rewrite_manifest_lists([(proof.source, raw)], sources.prefix_map, heads, None)[0]
    kept = {canonical(p.source) for p in sources.record if p.kind == "metadata"}
    return mj.rewrite_metadata_bytes(proof.source, raw, require, lambda uri: canonical(uri) in kept)


def _delete_rewrites(proof: Proof, raw: bytes, sources: RepairSources) -> dict[str, DeleteRewrite]:
    """What rewriting the manifest's delete files changed (their new sizes), found by rewriting
    them again: the manifest records it."""
    out: dict[str, DeleteRewrite] = {}
    for _status, _content, path, _size, _ref, file_format in entry_fields(proof.source, raw):
        if file_format is not None and path not in out:
            data = sources.io.read(path)
            out[path] = rewrite_delete_file(path, data, file_format, sources.prefix_map.require)[1]
    return out


def _delete_format(path: str) -> str:
    suffix = path.rsplit(".", 1)[-1].upper()
    return {"PARQUET": "PARQUET", "AVRO": "AVRO", "PUFFIN": "PUFFIN"}.get(suffix, suffix)


def write_repairs(
    repairs: list[Repair], source_io: FileIO, target_io: FileIO, journal: Callable[[list[str]], None]
) -> list[Proof]:
    """Journal every key, then write each; returns the new proofs (a copy's ETag may differ, its
    checksum does not)."""
    if not repairs:
        return []
    journal(sorted({r.proof.target for r in repairs}))
    written: list[Proof] = []
    for repair in repairs:
        proof = repair.proof
        if repair.data is not None:
            target_io.write(proof.target, repair.data)
            written.append(proof)
            continue
        assert repair.source_info is not None
        copied = copy_file_proved(
            source_io, proof.source, repair.source_info, target_io, proof.target, CopySettings()
        )
        written.append(
            proof._replace(etag=copied.etag, checksum=checksum_text(copied.checksum) or proof.checksum)
        )
    return written
