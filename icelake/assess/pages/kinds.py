"""Warnings and blockers grouped by kind, for an estate read at a glance (issue 48): per kind, how
many tables it touches, which, what it means and what to do. assessment.json and report.json
carry them as `warnings_by_kind` and `blockers_by_kind`, and both pages open with them.

A kind named here is said in general terms (a table's own finding says its counts and objects); a
kind not named (a refusal of the planner under its own name, an error type of a run) is said by
the first table's own message."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict

# kind -> (what it means, what to do)
KINDS: dict[str, tuple[str, str]] = {
    "commit_rate": (
        "The table keeps committing: commits are expected while it is being moved or kept in sync.",
        "Plan incremental syncs (mode incremental, or the scheduled sync) until its writers stop, then "
        "icelake migrate cutover.",
    ),
    "no_checksum": (
        "Source objects were uploaded in parts without a full-object checksum: neither a checksum nor "
        "an MD5 ETag can verify their copies, which are checked by size only.",
        "Accept that their copies are checked by size only, or have the source's owner give them a "
        "full-object checksum before migrating (an in-place CopyObject with ChecksumAlgorithm).",
    ),
    "archived_objects": (
        "Source objects are in GLACIER or DEEP_ARCHIVE, which CopyObject cannot read.",
        "Restore them (S3 RestoreObject, for at least the migration's length) before migrating.",
    ),
    "orc_delete_files": (
        "Position delete files are ORC, which icelake cannot rewrite.",
        "Rewrite them as Parquet (Spark's rewrite_position_delete_files) first.",
    ),
    "unmapped_prefixes": (
        "The table references files under prefixes the request does not map to the target.",
        "Add target.prefix_maps entries for those prefixes.",
    ),
    "target_not_ours": (
        "A table of the target's name exists that icelake did not create; icelake leaves it untouched.",
        "Choose another target name or database (target.names, target.renames).",
    ),
    "diverged": (
        "Someone else committed to the target table icelake created since it was last synced.",
        "Keep the target's commits (leave the table out) or drop the target icelake created and "
        "migrate it again.",
    ),
    "busy": (
        "Another run that is still going holds the table.",
        "Wait for that run to end (icelake migrate status RUN_ID), then run again.",
    ),
    "promoted": (
        "The target was promoted at cutover: it is the table's home now and icelake writes nothing to it.",
        "Leave the table out of the request.",
    ),
    "table_bucket_missing": (
        "The request's table bucket is not in the target account and region (its ARN names both).",
        "Create the table bucket there, or name one that exists (target.table_bucket_arn).",
    ),
    "table_bucket_unread": (
        "The table bucket's maintenance could not be read: AWS's default unreferenced-file removal is "
        "assumed (3 days, then 10).",
        "Grant the target role s3tables:GetTableBucketMaintenanceConfiguration (table_bucket_arns).",
    ),
    "table_unread": (
        "A target table in the table bucket could not be read with the target role: Plan would stop there.",
        "Deploy the access stack with the table bucket in table_bucket_arns (cdk/table_buckets.py).",
    ),
    "lake_formation_not_carried": (
        "Lake Formation grants and LF-tags are not carried to an S3 Tables target.",
        "Grant access on each table's s3tablescatalog name in Lake Formation after the migration.",
    ),
    "source_retention": (
        "The source's snapshot retention properties are not whole numbers, so cutover cannot carry them.",
        "Set options.s3tables_maintenance.snapshot_management in the request.",
    ),
    "not_assessed": (
        "The Assess step did not finish for the table.",
        "Read its error in the execution's history (icelake migrate status RUN_ID) and assess it again.",
    ),
    # A run's (report.json): the states a table is left in, and its warnings
    "source_dropped": (
        "The source table is gone; its target, which icelake created, was left as it is.",
        "Drop the target when nothing reads it any more, or leave the table out of the request.",
    ),
    "stranded": (
        "The source got commits after the table was promoted at cutover; the run names each.",
        "Carry them over (mode carry_over) or apply them to the promoted table by hand.",
    ),
    "damaged": (
        "A check of the target found files missing or changed.",
        "Read the table's error for the files, then migrate the table again.",
    ),
    "earlier_target": (
        "The table's target name has changed since an earlier run: the earlier target (icelake created it) "
        "was left as it is.",
        "Drop the earlier target when nothing reads it any more.",
    ),
    "unmapped_principal": (
        "A principal holds Lake Formation permissions on the source table but has no entry in "
        "target.lake_formation.principal_map: nothing was granted for it on the target.",
        "Add the principal to principal_map and run again, or grant it on the target by hand.",
    ),
    "data_filter": (
        "A source data cells filter was carried, but a principal of its grants has no principal_map "
        "entry, or a listed reader held the source only through filters (it got the filters, not the "
        "whole table).",
        "Add the principal to principal_map and run again; grant the whole table by hand only if meant.",
    ),
    "target_object_lock": (
        "The target bucket has Object Lock: a rollback or a prune could not delete what icelake wrote.",
        "Migrate to a bucket (or prefix of one) without Object Lock.",
    ),
    "target_lifecycle": (
        "A lifecycle rule of the target bucket expires or transitions objects under the migration prefix.",
        "Narrow the rule's filter so that it leaves the table locations alone.",
    ),
    "target_archive": (
        "An Intelligent-Tiering configuration of the target bucket archives objects under the prefix.",
        "Exclude the migration prefix from the archive tiers.",
    ),
    "target_encryption": (
        "The target bucket's default encryption is weaker than the source's.",
        "Set target.kms_key_id, or the target bucket's default encryption.",
    ),
    "bucket_kms_region": (
        "A bucket's default KMS key is of another region than the bucket.",
        "Use a key of the bucket's region.",
    ),
    "target_unversioned": (
        "The source keeps object versions and the target bucket does not.",
        "Enable versioning on the target bucket.",
    ),
    "target_replication": (
        "The target bucket replicates the migration prefix: every copy is copied again.",
        "Accept the cost, or exclude the prefix; enable delete marker replication for rollbacks.",
    ),
    "target_notifications": (
        "The target bucket sends event notifications for objects under the migration prefix.",
        "Expect one per migrated file, or filter the prefix out.",
    ),
    "s3_error": (
        "S3 refused a read of the source.",
        "Check the source role's access to the table's bucket and objects.",
    ),
}


class KindSummary(BaseModel):
    """One kind of warning or blocker across the tables: `count` tables (`tables`, sorted) have it."""

    model_config = ConfigDict(frozen=True)
    count: int
    tables: list[str]
    message: str  # what it means (or, for a kind not known here, the first table's own message)
    hint: str = ""  # what to do


def by_kind(
    found: Iterable[tuple[str, str, str]], hints: Mapping[str, str] | None = None
) -> dict[str, KindSummary]:
    """(table, kind, message) triples grouped by kind, kinds sorted by how many tables they touch
    (most first), then by name. `hints`: what to do for kinds not described here."""
    tables: dict[str, set[str]] = {}
    first: dict[str, str] = {}
    for table, kind, message in found:
        tables.setdefault(kind, set()).add(table)
        first.setdefault(kind, message)
    summaries = {}
    for kind in sorted(tables, key=lambda k: (-len(tables[k]), k)):
        meaning, hint = KINDS.get(kind, (first[kind], (hints or {}).get(kind, "")))
        summaries[kind] = KindSummary(
            count=len(tables[kind]), tables=sorted(tables[kind]), message=meaning, hint=hint
        )
    return summaries
