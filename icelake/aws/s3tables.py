"""An S3 Tables table as a migration's target: found, created, committed to and undone through the
s3tables API (the table bucket's namespaces and tables, each with a metadata pointer that moves
only from the version token its writer read).

A table bucket gives each table its own storage (GetTable's `warehouseLocation`), which accepts
no DeleteObject: undoing a run never deletes an object, it deletes a table this run created
(DeleteTable) or puts the earlier pointer back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from icelake.errors import ConcurrentCatalogChangeError

OWNER_TAG = "icelake.source"  # as Glue's owner parameter: "<account>:<db>.<table>"
PROMOTED_TAG = "icelake.promoted_at"
ICEBERG = "ICEBERG"


@dataclass(frozen=True)
class TableRef:
    """Where a target table is: its table bucket, namespace and name."""

    bucket_arn: str
    namespace: str
    name: str

    @property
    def args(self) -> dict[str, str]:
        return {"tableBucketARN": self.bucket_arn, "namespace": self.namespace, "name": self.name}

    def __str__(self) -> str:
        return f"{self.bucket_arn.rsplit('/', 1)[-1]}.{self.namespace}.{self.name}"


@dataclass(frozen=True)
class Found:
    """A table as GetTable and GetTableMetadataLocation answer it, with icelake's owner mark."""

    arn: str
    warehouse_location: str
    metadata_location: str | None  # None: created, never committed to
    version_token: str
    owner: str | None  # the owner tag; None: none, or tags not answered


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def find(client: Any, ref: TableRef) -> Found | None:
    """The table, or None when its namespace or the table is absent."""
    try:
        table = client.get_table(**ref.args)
        pointer = client.get_table_metadata_location(**ref.args)
    except ClientError as exc:
        if _code(exc) in ("NotFoundException", "NoSuchTable", "NoSuchNamespace"):
            return None
        raise
    arn = str(table["tableARN"])
    return Found(
        arn=arn,
        warehouse_location=str(pointer.get("warehouseLocation") or table["warehouseLocation"]).rstrip("/"),
        metadata_location=pointer.get("metadataLocation") or None,
        version_token=str(pointer["versionToken"]),
        owner=tags_of(client, arn).get(OWNER_TAG),
    )


def tags_of(client: Any, arn: str) -> dict[str, str]:
    """The table's tags; {} when the service does not answer them (a table bucket without tag
    support, or a caller without s3tables:ListTagsForResource: the ledger's mark then decides)."""
    try:
        return dict(client.list_tags_for_resource(resourceArn=arn).get("tags") or {})
    except ClientError as exc:
        if _code(exc) in ("AccessDeniedException", "NotImplemented", "404", "NotFoundException"):
            return {}
        raise


def create(client: Any, ref: TableRef, owner: str) -> Found:
    """Create the namespace when absent and the table (format ICEBERG, no metadata yet), tagged
    with icelake's owner mark. A table that appeared meanwhile is refused (ConflictException)."""
    try:
        client.create_namespace(tableBucketARN=ref.bucket_arn, namespace=[ref.namespace])
    except ClientError as exc:
        if _code(exc) != "ConflictException":  # it exists: tables of other runs live in it
            raise
    try:
        client.create_table(**ref.args, format=ICEBERG, tags={OWNER_TAG: owner})
    except ClientError as exc:
        if _code(exc) == "ConflictException":
            raise ConcurrentCatalogChangeError(
                f"table {ref} was created by someone else while this run planned it; nothing was "
                "written: run the migration again"
            ) from None
        if _code(exc) not in ("ValidationException", "BadRequestException") or "tag" not in str(exc).lower():
            raise
        client.create_table(**ref.args, format=ICEBERG)  # a service that takes no tags: the ledger marks it
    found = find(client, ref)
    if found is None:
        raise ConcurrentCatalogChangeError(f"table {ref} was dropped right after this run created it")
    return found


def commit(client: Any, ref: TableRef, metadata_location: str, version_token: str) -> str:
    """Move the pointer to `metadata_location`, only from the version read at Plan; returns the
    new version token. A changed token means someone else committed: refused, nothing written."""
    try:
        out = client.update_table_metadata_location(
            **ref.args, metadataLocation=metadata_location, versionToken=version_token
        )
    except ClientError as exc:
        if _code(exc) == "ConflictException":
            raise ConcurrentCatalogChangeError(
                f"table {ref} was committed to by someone else since this run read it (version token "
                f"{version_token} is no longer current); nothing was overwritten: re-run the migration"
            ) from None
        raise
    return str(out["versionToken"])


def delete(client: Any, ref: TableRef, version_token: str | None) -> None:
    """Delete the table whole (its storage goes with it), only at `version_token` when given."""
    kwargs = {"versionToken": version_token} if version_token else {}
    client.delete_table(**ref.args, **kwargs)


def tag(client: Any, arn: str, tags: dict[str, str]) -> bool:
    """Add tags to the table; False when the service does not take them."""
    try:
        client.tag_resource(resourceArn=arn, tags=tags)
    except ClientError as exc:
        if _code(exc) in ("NotImplemented", "404", "NotFoundException", "AccessDeniedException"):
            return False
        raise
    return True
