"""The FileIO of S3 (`S3FileIO`), through boto3: each bucket's requests to a client of its own
region, writes checksummed (and KMS-encrypted when asked), conditional creates, batched deletes,
and an AWS failure that names the object it was about. Also what S3's answers mean to icelake:
the full-object checksum a copy is verified against, and the bucket and key of an s3:// URI."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Concatenate, ParamSpec

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from icelake.aws.fileio.base import FileIO, ObjectInfo, R, is_absent, sha256_b64
from icelake.explain import about
from icelake.uris import canonical

SOURCE_ETAG_KEY = "icelake-source-etag"
# The suffix of a table's storage bucket (S3 Tables' warehouse locations; S3's naming rules keep it
# for them): icelake/migrate/copy/table_storage.py says what such storage takes.
TABLE_STORAGE_SUFFIX = "--table-s3"

# Full-object checksum algorithms, in the order icelake prefers them (CRC64NVME is what S3 computes
# for every new object since 2025; the others come from writers that asked for them).
CHECKSUM_ALGORITHMS = ("CRC64NVME", "CRC32C", "CRC32", "SHA256", "SHA1")


def full_checksum(head: dict[str, Any]) -> tuple[str, str] | None:
    """The object's full-object checksum from a HeadObject (ChecksumMode=ENABLED) answer; a
    composite one (a multipart upload's checksum of part checksums, 'value-N') cannot verify a copy."""
    if head.get("ChecksumType", "FULL_OBJECT") != "FULL_OBJECT":
        return None
    for algorithm in CHECKSUM_ALGORITHMS:
        value = head.get(f"Checksum{algorithm}")
        if value and "-" not in value:
            return algorithm, value
    return None


def split_s3(uri: str) -> tuple[str, str]:
    c = canonical(uri)
    if not c.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri}")
    bucket, _, key = c[len("s3://") :].partition("/")
    return bucket, key


DELETE_BATCH = 1000  # keys per DeleteObjects request

P = ParamSpec("P")


def _names_uri(fn: Callable[Concatenate[S3FileIO, str, P], R]) -> Callable[Concatenate[S3FileIO, str, P], R]:
    """An AWS failure carries the object it was about, so its one-line message can name it."""

    def call(self: S3FileIO, uri: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(self, uri, *args, **kwargs)
        except (BotoCoreError, ClientError) as exc:
            about(exc, uri)
            raise

    return call


def bucket_region(client: Any, bucket: str) -> str:
    """The bucket's region (GetBucketLocation: its IAM action is granted on the bucket alone,
    where HeadBucket's is s3:ListBucket, which icelake's roles hold only for their prefixes)."""
    constraint = client.get_bucket_location(Bucket=bucket).get("LocationConstraint")
    # us-east-1 answers no constraint; the oldest eu-west-1 buckets answer "EU"
    return str({None: "us-east-1", "": "us-east-1", "EU": "eu-west-1"}.get(constraint, constraint))


class S3FileIO(FileIO):
    """S3 through boto3. `kms_key_id` encrypts every object this IO writes.

    With `regions` (a session), each bucket's requests go to a client of that session made for the
    bucket's own region (a CopyObject to the target bucket's, whatever region its source is in);
    without, everything goes through `client`."""

    listing_waits = True

    def __init__(
        self, client: Any, kms_key_id: str | None = None, *, regions: boto3.Session | None = None
    ) -> None:
        self.client = client
        self.kms_key_id = kms_key_id
        # Told (uri, storage class, whether it has a full-object checksum) of every object a
        # listing or a HEAD describes: an assessment finds GLACIER objects and unchecksummed ones
        # from the requests the plan sends anyway.
        self.observe: Callable[[str, str, bool], None] | None = None
        # Given every client made for another region (a run's request count follows them too).
        self.on_new_client: Callable[[Any], None] | None = None
        self.regions = regions
        self._by_bucket: dict[str, Any] = {}  # bucket -> the client of its region
        self._by_region: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        # Buckets whose copies' ETags cannot verify them (an SSE-KMS or SSE-C source, a target its
        # bucket encrypts with a KMS key): a copy from or to one reads the source's checksum first.
        self.head_first: set[str] = set()

    def client_for(self, bucket: str) -> Any:
        """The client that serves `bucket`: its region asked once per bucket, one client per region.
        A table's storage (S3 Tables) answers no bucket-level call: it is in its table bucket's
        region, the target's, which this IO's own client is made for."""
        if self.regions is None or bucket.endswith(TABLE_STORAGE_SUFFIX):
            return self.client
        with self._clients_lock:
            known = self._by_bucket.get(bucket)
        if known is not None:
            return known
        region = bucket_region(self.client, bucket)
        with self._clients_lock:
            if region == self.client.meta.region_name:
                self._by_region.setdefault(region, self.client)
            elif region not in self._by_region:
                self._by_region[region] = self.regions.client("s3", region_name=region)
                if self.on_new_client is not None:
                    self.on_new_client(self._by_region[region])
            return self._by_bucket.setdefault(bucket, self._by_region[region])

    def clients(self) -> list[Any]:
        """Every client this IO has sent with: its own and those made for other regions."""
        with self._clients_lock:
            return [self.client, *(c for c in self._by_region.values() if c is not self.client)]

    def encryption_args(self) -> dict[str, str]:
        if not self.kms_key_id:
            return {}
        return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self.kms_key_id}

    @_names_uri
    def stat(self, uri: str) -> ObjectInfo | None:
        bucket, key = split_s3(uri)
        try:
            head = self.client_for(bucket).head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        except ClientError as exc:
            if is_absent(exc):
                return None
            raise
        checksum = full_checksum(head)
        if self.observe is not None:
            self.observe(uri, head.get("StorageClass") or "STANDARD", checksum is not None)
        return ObjectInfo(
            size=head["ContentLength"],
            etag=head.get("ETag", "").strip('"') or None,
            sha256=head.get("ChecksumSHA256"),
            source_etag=head.get("Metadata", {}).get(SOURCE_ETAG_KEY),
            checksum=checksum,
        )

    @_names_uri
    def read(self, uri: str) -> bytes:
        bucket, key = split_s3(uri)
        body: bytes = self.client_for(bucket).get_object(Bucket=bucket, Key=key)["Body"].read()
        return body

    @_names_uri
    def read_tail(self, uri: str, nbytes: int) -> bytes:
        bucket, key = split_s3(uri)
        body: bytes = (
            self.client_for(bucket)
            .get_object(Bucket=bucket, Key=key, Range=f"bytes=-{nbytes}")["Body"]
            .read()
        )
        return body

    @_names_uri
    def write(self, uri: str, data: bytes) -> None:
        bucket, key = split_s3(uri)
        # S3 verifies the SHA-256 on arrival and keeps it, which later makes identity checks cheap.
        self.client_for(bucket).put_object(
            Bucket=bucket,
            Key=key,
            Body=data,
            ChecksumAlgorithm="SHA256",
            ChecksumSHA256=sha256_b64(data),
            **self.encryption_args(),
        )

    @_names_uri
    def create_exclusive(self, uri: str, data: bytes) -> bool:
        bucket, key = split_s3(uri)
        try:  # S3 conditional write: If-None-Match "*" fails when the key exists
            self.client_for(bucket).put_object(
                Bucket=bucket, Key=key, Body=data, IfNoneMatch="*", **self.encryption_args()
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in (
                "PreconditionFailed",
                "ConditionalRequestConflict",
            ):
                return False
            raise
        return True

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        bucket, key = split_s3(prefix)
        key = key.rstrip("/") + "/" if key else ""
        try:
            # The key as written after the bucket: not made canonical, which drops a trailing '/'.
            after = {"StartAfter": start_after.split("://", 1)[1].partition("/")[2]} if start_after else {}
            pages = (
                self.client_for(bucket)
                .get_paginator("list_objects_v2")
                .paginate(Bucket=bucket, Prefix=key, **after)
            )
            for page in pages:
                if self.observe is not None:
                    self._observe_listed(bucket, page.get("Contents", []))
                for obj in page.get("Contents", []):
                    yield (
                        f"s3://{bucket}/{obj['Key']}",
                        ObjectInfo(size=obj["Size"], etag=obj.get("ETag", "").strip('"') or None),
                    )
        except (BotoCoreError, ClientError) as exc:
            about(exc, prefix)
            raise

    def _observe_listed(self, bucket: str, contents: Sequence[dict[str, Any]]) -> None:
        assert self.observe is not None
        for obj in contents:
            # A listing names the checksum's algorithm (and, on S3 since 2025, its type): a
            # composite one (a multipart upload's) cannot verify a copy.
            full = bool(obj.get("ChecksumAlgorithm")) and obj.get("ChecksumType") != "COMPOSITE"
            self.observe(f"s3://{bucket}/{obj['Key']}", obj.get("StorageClass") or "STANDARD", full)

    @_names_uri
    def delete(self, uri: str) -> None:
        bucket, key = split_s3(uri)
        self.client_for(bucket).delete_object(Bucket=bucket, Key=key)

    def delete_many(self, uris: Sequence[str]) -> int:
        """DeleteObjects, 1,000 keys a request (S3's maximum); any key S3 could not delete fails."""
        by_bucket: dict[str, list[str]] = {}
        for uri in uris:
            bucket, key = split_s3(uri)
            by_bucket.setdefault(bucket, []).append(key)
        for bucket, keys in by_bucket.items():
            for start in range(0, len(keys), DELETE_BATCH):
                batch = [{"Key": k} for k in keys[start : start + DELETE_BATCH]]
                answer = self.client_for(bucket).delete_objects(
                    Bucket=bucket, Delete={"Objects": batch, "Quiet": True}
                )
                errors = answer.get("Errors") or []
                if errors:
                    shown = ", ".join(f"s3://{bucket}/{e.get('Key')} ({e.get('Code')})" for e in errors[:5])
                    raise OSError(f"S3 did not delete {len(errors)} object(s): {shown}")
        return len(uris)
