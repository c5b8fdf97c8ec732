"""The source and target buckets compared (docs/assessment.md "Buckets"): what each bucket does to
the objects in it that a migration would not see table by table.

Read for each source bucket and the target bucket, read only: versioning, default encryption (and
the KMS key's region), lifecycle rules, Object Lock, replication, notifications and
Intelligent-Tiering archive configurations. The target's are matched against the target prefix
a request writes under. Warned of: a target rule that would expire, transition or archive
migrated objects; default encryption weaker than the source's (the run's own KMS key counts);
a versioned source moving to an unversioned target; the target replicating or notifying on
every migrated object. Blocked: Object Lock on the target, under which Rollback cannot delete
what a failed run wrote.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from icelake.assess.schema import Finding
from icelake.request.deps import Sessions
from icelake.request.models import WorkItem

# What S3 answers for a configuration the bucket does not have (each Get* has its own code).
_ABSENT = (
    "ServerSideEncryptionConfigurationNotFoundError",
    "NoSuchLifecycleConfiguration",
    "ObjectLockConfigurationNotFoundError",
    "ReplicationConfigurationNotFoundError",
    "NoSuchConfiguration",
)
_STRENGTH = {None: 0, "AES256": 1, "aws:kms": 2, "aws:kms:dsse": 3}


@dataclass(frozen=True)
class BucketSettings:
    bucket: str
    region: str
    versioning: str  # Enabled, Suspended or "" (never enabled)
    encryption: str | None  # AES256, aws:kms, aws:kms:dsse or None
    kms_key: str | None = None
    kms_region: str | None = None  # from the key's ARN; None for a key id (the bucket's region)
    lifecycle: tuple[dict[str, Any], ...] = ()
    object_lock: dict[str, Any] | None = None
    replication: tuple[dict[str, Any], ...] = ()
    notifications: tuple[tuple[str, str], ...] = ()  # (kind, prefix filter)
    tiering: tuple[dict[str, Any], ...] = ()
    unread: tuple[str, ...] = ()  # configurations S3 (or the embedded AWS) would not say


def _get(s3: Any, operation: str, bucket: str, unread: list[str]) -> dict[str, Any] | None:
    try:
        return dict(getattr(s3, operation)(Bucket=bucket))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in _ABSENT:
            return None
        unread.append(f"{operation}: {exc.response.get('Error', {}).get('Code')}")
        return None


def read_bucket(s3: Any, bucket: str, region: str) -> BucketSettings:
    unread: list[str] = []
    versioning = (_get(s3, "get_bucket_versioning", bucket, unread) or {}).get("Status", "")
    rules = (
        (_get(s3, "get_bucket_encryption", bucket, unread) or {}).get("ServerSideEncryptionConfiguration", {})
    ).get("Rules", [])
    default = rules[0].get("ApplyServerSideEncryptionByDefault", {}) if rules else {}
    key = default.get("KMSMasterKeyID")
    lock = (_get(s3, "get_object_lock_configuration", bucket, unread) or {}).get("ObjectLockConfiguration")
    replication = (_get(s3, "get_bucket_replication", bucket, unread) or {}).get(
        "ReplicationConfiguration", {}
    )
    notified = _get(s3, "get_bucket_notification_configuration", bucket, unread) or {}
    tiering = _get(s3, "list_bucket_intelligent_tiering_configurations", bucket, unread) or {}
    return BucketSettings(
        bucket=bucket,
        region=region,
        versioning=versioning,
        encryption=default.get("SSEAlgorithm"),
        kms_key=key,
        kms_region=key.split(":")[3] if key and key.startswith("arn:") else None,
        lifecycle=tuple(
            (_get(s3, "get_bucket_lifecycle_configuration", bucket, unread) or {}).get("Rules", [])
        ),
        object_lock=lock if lock and lock.get("ObjectLockEnabled") == "Enabled" else None,
        replication=tuple(replication.get("Rules", [])),
        notifications=_notifications(notified),
        tiering=tuple(tiering.get("IntelligentTieringConfigurationList", [])),
        unread=tuple(unread),
    )


def _notifications(config: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    out = []
    for kind in ("TopicConfigurations", "QueueConfigurations", "LambdaFunctionConfigurations"):
        for entry in config.get(kind, []):
            rules = entry.get("Filter", {}).get("Key", {}).get("FilterRules", [])
            prefix = next((r["Value"] for r in rules if r.get("Name", "").lower() == "prefix"), "")
            out.append((kind.removesuffix("Configurations"), prefix))
    if config.get("EventBridgeConfiguration") is not None:
        out.append(("EventBridge", ""))
    return tuple(out)


def _rule_prefix(rule: dict[str, Any]) -> str | None:
    """The key prefix a lifecycle, replication or tiering rule applies to; None when it also needs
    tags, which objects icelake writes never carry."""
    filt = rule.get("Filter")
    if filt is None:
        return str(rule.get("Prefix", ""))
    if "Tag" in filt or filt.get("And", {}).get("Tags"):
        return None
    return str(filt.get("Prefix", filt.get("And", {}).get("Prefix", "")))


def _overlaps(rule_prefix: str, prefix: str) -> bool:
    return prefix.startswith(rule_prefix) or rule_prefix.startswith(prefix)


def compare(
    sources: list[BucketSettings], target: BucketSettings, prefix: str, run_key: bool
) -> tuple[list[Finding], list[Finding]]:
    """(blockers, warnings) for migrating from `sources` to `target` under `prefix`; `run_key`:
    the request names a KMS key, which encrypts every copy whatever the bucket's default."""
    blockers: list[Finding] = []
    warnings = _lifecycle_findings(target, prefix) + _tiering_findings(target, prefix)
    if target.object_lock is not None:
        retention = target.object_lock.get("Rule", {}).get("DefaultRetention")
        blockers.append(
            Finding(
                kind="target_object_lock",
                message=f"target bucket {target.bucket} has Object Lock enabled"
                + (f" (default retention {retention})" if retention else "")
                + ": Rollback could not remove what a failed run wrote, nor a prune what the source "
                "expired; migrate to a bucket without Object Lock",
            )
        )
    warnings += _encryption_findings(sources, target, run_key)
    versioned = [s.bucket for s in sources if s.versioning == "Enabled"]
    if versioned and target.versioning != "Enabled":
        warnings.append(
            Finding(
                kind="target_unversioned",
                message=f"source bucket(s) {', '.join(versioned)} keep versions, target bucket "
                f"{target.bucket} does not: an overwritten or deleted migrated object cannot be recovered "
                "there; enable versioning on the target",
            )
        )
    warnings += _copies_findings(target, prefix)
    return blockers, warnings


def _lifecycle_findings(target: BucketSettings, prefix: str) -> list[Finding]:
    out = []
    for rule in target.lifecycle:
        rule_prefix = _rule_prefix(rule)
        if rule.get("Status") != "Enabled" or rule_prefix is None or not _overlaps(rule_prefix, prefix):
            continue
        name = rule.get("ID") or "(no id)"
        does = []
        expiration = rule.get("Expiration", {})
        if "Days" in expiration or "Date" in expiration:
            does.append(
                f"expires them after {expiration['Days']} days"
                if "Days" in expiration
                else f"expires them on {expiration['Date']}"
            )
        does += [
            f"moves them to {t.get('StorageClass')} after {t.get('Days', t.get('Date'))} days"
            for t in rule.get("Transitions", [])
        ]
        if does:
            out.append(
                Finding(
                    kind="target_lifecycle",
                    message=f"target bucket {target.bucket}'s lifecycle rule {name!r} (prefix "
                    f"{rule_prefix!r}) covers the migration prefix {prefix!r} and {' and '.join(does)}: "
                    "migrated table files would be deleted or become unreadable; narrow the rule's filter",
                    objects=[name],
                    count=1,
                )
            )
    return out


def _tiering_findings(target: BucketSettings, prefix: str) -> list[Finding]:
    out = []
    for config in target.tiering:
        rule_prefix = _rule_prefix(config)
        tiers = [t.get("AccessTier") for t in config.get("Tierings", [])]
        if (
            config.get("Status") == "Enabled"
            and tiers
            and rule_prefix is not None
            and _overlaps(rule_prefix, prefix)
        ):
            out.append(
                Finding(
                    kind="target_archive",
                    message=f"target bucket {target.bucket}'s Intelligent-Tiering configuration "
                    f"{config.get('Id')!r} archives objects under {rule_prefix!r} "
                    f"({', '.join(map(str, tiers))}): "
                    "an archived table file cannot be read until restored",
                    objects=[str(config.get("Id"))],
                    count=1,
                )
            )
    return out


def _encryption_findings(
    sources: list[BucketSettings], target: BucketSettings, run_key: bool
) -> list[Finding]:
    out = []
    effective = "aws:kms" if run_key and _STRENGTH[target.encryption] < 2 else target.encryption
    stronger = [s for s in sources if _STRENGTH.get(s.encryption, 0) > _STRENGTH.get(effective, 0)]
    if stronger:
        out.append(
            Finding(
                kind="target_encryption",
                message=f"target bucket {target.bucket} encrypts with {effective or 'nothing'} by default, "
                f"source bucket {stronger[0].bucket} with {stronger[0].encryption}: the copies would be "
                "encrypted less strongly; set target.kms_key_id or the target bucket's default encryption",
            )
        )
    for bucket in (*sources, target):
        if bucket.kms_region and bucket.kms_region != bucket.region:
            out.append(
                Finding(
                    kind="bucket_kms_region",
                    message=f"bucket {bucket.bucket} (in {bucket.region}) encrypts by default with KMS key "
                    f"{bucket.kms_key} of {bucket.kms_region}: S3 needs a key of the bucket's region",
                )
            )
    return out


def _copies_findings(target: BucketSettings, prefix: str) -> list[Finding]:
    out = []
    replicated = [
        r
        for r in target.replication
        if r.get("Status") == "Enabled" and (p := _rule_prefix(r)) is not None and _overlaps(p, prefix)
    ]
    if replicated:
        out.append(
            Finding(
                kind="target_replication",
                message=f"target bucket {target.bucket} replicates the migration prefix (rule "
                f"{replicated[0].get('ID', '(no id)')!r}): every migrated object is copied again, and a "
                "rollback's deletes reach the replica only with delete marker replication",
            )
        )
    notified = [kind for kind, p in target.notifications if _overlaps(p, prefix)]
    if notified:
        out.append(
            Finding(
                kind="target_notifications",
                message=f"target bucket {target.bucket} sends {', '.join(sorted(set(notified)))} "
                "notifications for objects under the migration prefix: each migrated file triggers them",
            )
        )
    return out


@dataclass
class BucketReads:
    """Each bucket read once per assessment (an estate's tables share their buckets), with the
    session of its side (the source role reads the source's, the target role the target's)."""

    read: dict[str, BucketSettings] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, bucket: str, session: Any) -> BucketSettings:
        with self.lock:
            if bucket not in self.read:
                s3 = session.client("s3")
                region = s3.get_bucket_location(Bucket=bucket).get("LocationConstraint") or "us-east-1"
                self.read[bucket] = read_bucket(s3, bucket, region)
            return self.read[bucket]


def bucket_findings(
    item: WorkItem, sessions: Sessions, reads: BucketReads
) -> tuple[list[Finding], list[Finding]]:
    """(blockers, warnings) of the buckets a work item reads from and writes to."""
    target = item.request.target
    uris = [item.source_metadata_location, *(m.source for m in target.prefix_maps)]
    buckets = dict.fromkeys(u.removeprefix("s3://").split("/", 1)[0] for u in uris if u.startswith("s3://"))
    if not item.target_location.startswith("s3://") or target.bucket is None:
        return [], []  # a table bucket's storage has no bucket settings of the request's to compare
    sources = [reads.get(b, sessions.source) for b in buckets]
    prefix = item.target_location.removeprefix("s3://").partition("/")[2]
    return compare(sources, reads.get(target.bucket, sessions.target), prefix, bool(target.kms_key_id))
