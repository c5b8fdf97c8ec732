"""What a table's reads and plan turn into blockers and warnings: source objects in an archive
storage class that CopyObject cannot read, copies that neither a checksum nor an MD5 ETag can
verify, and the planner's (or S3's) refusals in their own words."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from botocore.exceptions import ClientError

from icelake.assess.schema import Finding
from icelake.migrate.copy.objects import etag_verifies
from icelake.migrate.plan.model import TablePlan
from icelake.uris import canonical

# Storage classes CopyObject cannot read until the object is restored (RestoreObject).
ARCHIVED = ("GLACIER", "DEEP_ARCHIVE")
SHOWN = 20  # objects named in a finding; the count says how many there are


@dataclass
class SourceObjects:
    """What the plan's listings and HEADs said of the source objects that matter: archived ones and
    ones without a full-object checksum (thread-safe: listings run side by side)."""

    archived: dict[str, str] = field(default_factory=dict)
    unchecksummed: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, uri: str, storage_class: str, checksummed: bool) -> None:
        if storage_class in ARCHIVED or not checksummed:
            with self.lock:
                if storage_class in ARCHIVED:
                    self.archived[uri] = storage_class
                if not checksummed:
                    self.unchecksummed.add(uri)


def object_findings(
    plan: TablePlan, objects: SourceObjects, blockers: list[Finding], warnings: list[Finding]
) -> None:
    """Blockers for archived objects the migration must read, warnings for copies that neither a
    checksum nor MD5 ETags can verify (`copy.etag_verifies`)."""
    etags = {task.source: task.info.etag for task in plan.copies}
    copied = etags.keys()
    read = copied | {t.source for t in plan.delete_files} | set(plan.manifests) | set(plan.manifest_lists)
    read |= {canonical(p) for p in plan.metadata_files}
    archived = sorted(uri for uri in objects.archived if uri in read)
    if archived:
        shown = [f"{uri} ({objects.archived[uri]})" for uri in archived[:SHOWN]]
        blockers.append(
            Finding(
                kind="archived_objects",
                message=f"{len(archived)} source object(s) are in GLACIER or DEEP_ARCHIVE, which CopyObject "
                f"cannot read without a restore: {_few(shown)}; "
                "restore them (S3 RestoreObject, for at least the migration's length) before migrating",
                objects=shown,
                count=len(archived),
            )
        )
    unchecked = sorted(uri for uri in objects.unchecksummed if uri in etags and not etag_verifies(etags[uri]))
    if unchecked:
        warnings.append(
            Finding(
                kind="no_checksum",
                message=f"{len(unchecked)} source object(s) were uploaded in parts and have no "
                f"full-object checksum, so their copies are verified by size only: {_few(unchecked)}",
                objects=unchecked[:SHOWN],
                count=len(unchecked),
            )
        )


def refusal(exc: BaseException) -> Finding:
    """A refusal of the planner (or of S3) as a blocker, in its own words."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "error")
        kind = (
            "archived_objects" if code in ("InvalidObjectState", "ObjectNotInActiveTierError") else "s3_error"
        )
        return Finding(kind=kind, message=f"S3 refused a read ({code}): {exc}")
    kind = _snake(type(exc).__name__.removesuffix("Error"))
    return Finding(kind=kind, message=str(exc))


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _few(items: list[str]) -> str:
    return ", ".join(items[:3]) + (" ..." if len(items) > 3 else "")
