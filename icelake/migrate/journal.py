"""The keys a run is about to create on the target, written down before the first write.

Rollback deletes exactly these and nothing else: a key is journaled only when this run plans to
write it from the table's own source files or metadata and it did not exist when planning. A
listing difference would also catch other tables' writes under a shared prefix (it did: a failed
table's rollback deleted the files of another table that had validated).
"""

from __future__ import annotations

import gzip
import json

from icelake.aws.fileio import FileIO
from icelake.migrate.inventory import stat_by_listing
from icelake.migrate.plan.model import TablePlan
from icelake.uris import parent

JOURNAL_NAME = "journal.json.gz"


def new_target_keys(plan: TablePlan, dst_io: FileIO, workers: int = 16) -> list[str]:
    """Every target key the migration of `plan` will create: the copies (already known to be
    missing at the target) and the rewritten metadata, manifests and delete files not there yet."""
    rewritten = [
        plan.map_path(uri) for uri in (*plan.metadata_files, *plan.manifest_lists, *plan.manifests)
    ] + [d.target for d in plan.delete_files]
    # The rewritten metadata lives in the target's metadata directory: one listing for all of it
    # (on S3 Tables' storage, which takes no listing, a HEAD each: `stat_by_listing` knows).
    present = stat_by_listing(dst_io, rewritten, [parent(plan.target_metadata)], workers)
    return sorted(
        {target for _source, target in plan.copies.pairs()} | {k for k in rewritten if present[k] is None}
    )


def write_journal(io: FileIO, uri: str, keys: list[str]) -> None:
    io.write(uri, gzip.compress(json.dumps({"version": 1, "keys": keys}).encode(), mtime=0))


def read_journal(io: FileIO, uri: str) -> list[str]:
    doc = json.loads(gzip.decompress(io.read(uri)))
    keys = doc.get("keys") if isinstance(doc, dict) else None
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ValueError(f"{uri} is not an icelake journal; rollback deletes nothing without one")
    return keys
