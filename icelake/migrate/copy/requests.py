"""The S3 requests a migration sends after its plan, by kind as S3 bills them: what the estimates
(icelake/assess/estimate/) predict a copy costs. Kept in step with `engine._execute`."""

from __future__ import annotations

from collections import Counter

from icelake.migrate.copy.common import CopySettings, etag_verifies
from icelake.migrate.copy.objects import copy_requests
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.migrate.plan.model import TablePlan

# A rewritten file (delete file, manifest, manifest list, metadata.json): its source read, the
# target key asked (`FileJobs.put`: absent on a first run) and the new bytes put.
WRITE_REQUESTS: dict[str, int] = {"get": 1, "head": 1, "put": 1}
# One the target already holds byte for byte (a re-run's, `FileJobs.put`): read and asked, not put
# (the target's HEAD names its SHA-256, so the bytes are not read back).
PRESENT_REQUESTS: dict[str, int] = {"get": 1, "head": 1}


def rewritten_files(plan: TablePlan) -> int:
    """The files a migration of `plan` writes anew: delete files, manifests, lists, metadata.json."""
    return len(plan.delete_files) + len(plan.manifests) + len(plan.manifest_lists) + len(plan.metadata_files)


def migration_requests(
    plan: TablePlan, settings: CopySettings | None = None, *, target_kms: bool = False, present: int = 0
) -> dict[str, int]:
    """The S3 requests `run_migration` sends after its plan: the target's metadata directory
    listed again before writing (not on S3 Tables' storage, which takes no listing), each rewritten
    file (`WRITE_REQUESTS`, or `PRESENT_REQUESTS` for the `present` ones the target holds already:
    none on a first run, all on a re-run) and each copy (`objects.copy_requests`; `target_kms`: the
    target is written under a KMS key; into S3 Tables' storage, streamed through the engine)."""
    settings = settings or CopySettings()
    streamed = is_table_storage(plan.target_metadata)
    written = rewritten_files(plan) - present
    counts: Counter[str] = Counter({"list": 0 if streamed else 1})
    for kind, n in WRITE_REQUESTS.items():
        counts[kind] += n * written
    for kind, n in PRESENT_REQUESTS.items():
        counts[kind] += n * present
    # Copies of a few shapes, counted by shape: a million copies are a few dictionaries added up.
    shapes: Counter[tuple[int, bool]] = Counter()  # (size, or 0 when the size does not matter; known)
    for task in plan.copies:
        info = task.info
        known = info.checksum is not None
        if streamed:
            small = info.size <= settings.stream_part_size
            shapes[(0 if small else info.size, known or small)] += 1
        elif info.size <= settings.multipart_threshold:
            shapes[(0, known or etag_verifies(info.etag, target_kms=target_kms))] += 1
        else:
            shapes[(info.size, known)] += 1
    for (size, known), copies in shapes.items():
        for kind, n in copy_requests(size, settings, checksum_known=known, streamed=streamed).items():
            counts[kind] += n * copies
    return dict(counts)
