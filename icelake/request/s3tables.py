"""What a request says of an S3 Tables target (`target.kind: s3tables`): the table bucket's ARN,
the names S3 Tables accepts for namespaces and tables, and `options.s3tables_maintenance`, the
maintenance a table gets at cutover. Checked when the request is parsed, so a name the service
would refuse is named, with the rule it breaks, before anything is written."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

# arn:aws:s3tables:<region>:<account>:bucket/<name> (botocore's TableBucketARN, named parts).
_TABLE_BUCKET_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):s3tables:(?P<region>[a-z]{2}(-[a-z]+)+-\d):(?P<account>\d{12}):"
    r"bucket/(?P<name>[a-z0-9-]{3,63})$"
)
TABLE_BUCKET_EXAMPLE = "arn:aws:s3tables:us-east-1:222222222222:bucket/lake"
# AWS's "Naming rules for tables and namespaces" (s3-tables-buckets-naming.html, read 2026-12-07).
MAX_NAME = 255
_ALLOWED = set(string.ascii_lowercase + string.digits + "_")


class TableBucket(BaseModel):
    """A table bucket ARN taken apart."""

    model_config = ConfigDict(frozen=True)

    arn: str
    region: str
    account_id: str
    name: str


def parse_table_bucket_arn(value: str) -> TableBucket:
    found = _TABLE_BUCKET_ARN.match(value)
    if not found:
        raise ValueError(
            f"table_bucket_arn {value!r} is not a table bucket ARN: give one such as {TABLE_BUCKET_EXAMPLE!r}"
        )
    name = found.group("name")
    if (
        name.startswith(("xn--", "sthree-", "amzn-s3-demo-", "aws"))
        or name.endswith(("-s3alias", "--ol-s3", "--x-s3", "--table-s3"))
        or not (name[0].isalnum() and name[-1].isalnum())
    ):
        raise ValueError(
            f"table_bucket_arn {value!r} names {name!r}, which is not a table bucket name (3-63 lower-case "
            "letters, digits or '-', starting and ending with a letter or digit, no reserved prefix or "
            f"suffix): give one such as {TABLE_BUCKET_EXAMPLE!r}"
        )
    return TableBucket(arn=value, region=found.group("region"), account_id=found.group("account"), name=name)


def _broken_rule(name: str, what: str) -> str | None:
    """The S3 Tables naming rule `name` breaks (a namespace or a table: `what`), or None."""
    if not 1 <= len(name) <= MAX_NAME:
        return f"names are 1 to {MAX_NAME} characters (this one is {len(name)})"
    if set(name) - _ALLOWED:
        odd = "".join(sorted(set(name) - _ALLOWED))
        return f"names are lower-case letters, digits and '_' only, no '-', '.' or capitals (found {odd!r})"
    if not (name[0].isalnum() and name[-1].isalnum()):
        return "names begin and end with a letter or a digit"
    if what == "namespace" and name.startswith("aws"):
        return "namespace names do not start with 'aws', a prefix the service reserves"
    return None


def name_problem(name: str, what: str) -> str | None:
    """Why S3 Tables would refuse `name` as a `what` ('namespace' or 'table'), or None.

    The rules (AWS's "Naming rules for tables and namespaces"): 1-255 characters; lower-case
    letters, digits and '_' only; beginning and ending with a letter or a digit; a namespace not
    starting with 'aws'."""
    rule = _broken_rule(name, what)
    return f"the {what} name {name!r} breaks S3 Tables' rule: {rule}" if rule else None


def template_problem(template: str, what: str) -> str | None:
    """The rule every name a `target.names` template (or `database_prefix` + '{database}') makes
    breaks by its own text: each placeholder filled with a letter, which no rule refuses."""
    rule = _broken_rule(template.format(database="a", table="a"), what)
    return f"{template!r} makes {what} names that break S3 Tables' rule: {rule}" if rule else None


class _Target(Protocol):
    """The fields of a request's target these checks read (icelake.request.models.TargetSpec)."""

    @property
    def kind(self) -> str: ...
    @property
    def account_id(self) -> str: ...
    @property
    def region(self) -> str | None: ...
    @property
    def table_bucket_arn(self) -> str | None: ...
    @property
    def bucket(self) -> str | None: ...
    @property
    def prefix(self) -> str: ...
    @property
    def kms_key_id(self) -> str | None: ...
    @property
    def prefix_maps(self) -> Sequence[object]: ...
    @property
    def database_prefix(self) -> str: ...
    @property
    def renames(self) -> Mapping[str, str]: ...
    @property
    def names(self) -> object | None: ...


def s3tables_problems(target: _Target) -> list[str]:
    """What of a target is wrong for its kind: with s3tables, the table bucket (its account and
    region are the target's) and every name the request already says (database_prefix, the
    literal text of target.names, the renames) under S3 Tables' rules, and the fields a table
    bucket has no use for, refused rather than silently ignored; with glue, a table_bucket_arn."""
    if target.kind != "s3tables":
        if target.table_bucket_arn is not None:
            return ["table_bucket_arn is for target.kind 's3tables': set kind, or remove table_bucket_arn"]
        return []
    if target.table_bucket_arn is None:
        return [f"target.kind 's3tables' needs table_bucket_arn, such as {TABLE_BUCKET_EXAMPLE!r}"]
    try:
        bucket = parse_table_bucket_arn(target.table_bucket_arn)
    except ValueError as exc:
        return [str(exc)]
    problems = []
    if bucket.account_id != target.account_id:
        problems.append(
            f"table_bucket_arn is a table bucket of account {bucket.account_id}, and the target account "
            f"is {target.account_id}: give a table bucket of the target account"
        )
    if target.region and bucket.region != target.region:
        problems.append(
            f"table_bucket_arn is a table bucket of {bucket.region}, and the target region is "
            f"{target.region}: give a table bucket of {target.region}, or leave region out (it is then "
            "the table bucket's)"
        )
    unused = {
        "bucket": (
            target.bucket is not None,
            "each table's files go to the storage the table bucket gives it",
        ),
        "prefix": (bool(target.prefix), "each table's files go to the storage the table bucket gives it"),
        "kms_key_id": (target.kms_key_id is not None, "a table bucket encrypts its objects itself (SSE-S3)"),
        "prefix_maps": (
            bool(target.prefix_maps),
            "a table bucket's table keeps every file under its own storage, which readers are given",
        ),
    }
    problems += [
        f"{field} is not used with target.kind 's3tables' ({why}): remove it"
        for field, (given, why) in unused.items()
        if given
    ]
    return problems + _name_problems(target)


def _name_problems(target: _Target) -> list[str]:
    found: list[str | None] = []
    names = target.names
    database_template = getattr(names, "database", None) or f"{target.database_prefix}{{database}}"
    found.append(template_problem(database_template, "namespace"))
    if names is not None:
        found.append(template_problem(str(getattr(names, "table", "{table}")), "table"))
    for source, renamed in sorted(target.renames.items()):
        namespace, _, table = renamed.partition(".")
        for problem in (name_problem(namespace, "namespace"), name_problem(table, "table")):
            found.append(f"renames[{source!r}]: {problem}" if problem else None)
    return [
        f"{p} (target.database_prefix, target.names and target.renames make the names)"
        if not p.startswith("renames")
        else p
        for p in found
        if p
    ]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CompactionSetting(_Frozen):
    """icebergCompaction at cutover: on by default (S3 Tables' default: 512 MB files, auto)."""

    enabled: bool = True
    target_file_size_mb: int | None = Field(default=None, ge=64, le=512)  # None: the service's (512)
    strategy: str | None = Field(default=None, pattern=r"^(auto|binpack|sort|z-order)$")


class SnapshotSetting(_Frozen):
    """icebergSnapshotManagement at cutover: which snapshots S3 Tables expires."""

    enabled: bool = True
    min_snapshots_to_keep: int | None = Field(default=None, ge=1)  # None: the source's retention
    max_snapshot_age_hours: int | None = Field(default=None, ge=1)  # None: the source's retention


class S3TablesMaintenance(_Frozen):
    """`options.s3tables_maintenance`: what cutover sets on each S3 Tables target. While icelake
    syncs a table, compaction and snapshot management are off (their commits would make the target
    diverge, and the service's 120-hour default would expire the history carried). Absent, or a
    setting left out: compaction enabled, and snapshot management from the source table's own
    retention (`history.expire.max-snapshot-age-ms`, `history.expire.min-snapshots-to-keep`)."""

    compaction: CompactionSetting = Field(default_factory=CompactionSetting)
    snapshot_management: SnapshotSetting | None = None  # None: from the source's retention
