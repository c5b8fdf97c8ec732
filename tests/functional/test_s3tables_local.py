"""S3 Tables on the embedded AWS (icelake/local/s3tables): the operations moto lacks answer in
botocore's s3tables shapes (every raw answer checked member by member, with the model's HTTP
status), keep what AWS keeps, refuse what AWS refuses; a table bucket's storage serves only the
object operations AWS lists for it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError

from icelake.local.moto_server import embedded_aws
from icelake.local.s3tables import api, installed, storage
from tests.shapes import BASE_TYPES, check_shape

MODEL = botocore.session.get_session().get_service_model("s3tables")
TYPES = {**BASE_TYPES, "timestamp": str, "map": dict}
POLICY = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "*"}]}
)


def _check(shape: Any, value: Any, where: str) -> None:
    """check_shape, every structure's required members present, and into maps' values (the
    maintenance configurations are maps)."""
    check_shape(shape, value, where, TYPES)
    if shape.type_name == "map":
        for key, item in value.items():
            _check(shape.value, item, f"{where}[{key}]")
    elif shape.type_name == "list":
        for i, item in enumerate(value):
            _check(shape.member, item, f"{where}[{i}]")
    elif shape.type_name == "structure":
        missing = sorted(set(shape.required_members) - set(value))
        assert not missing, f"{where}: required members {missing} of {shape.name} missing"
        for name, member in value.items():
            _check(shape.members[name], member, f"{where}.{name}")


class Answers:
    """Every answer of a client, raw: (operation, HTTP status, body)."""

    def __init__(self, client: Any) -> None:
        self.seen: list[tuple[str, int, bytes]] = []
        client.meta.events.register("after-call.s3tables", self._keep)

    def _keep(self, http_response: Any, model: Any, **_: Any) -> None:
        self.seen.append((model.name, http_response.status_code, http_response.content))

    def check(self) -> set[str]:
        """Each success in its operation's status and output shape; the operations seen."""
        for name, status, body in self.seen:
            if status >= 300:
                continue
            operation = MODEL.operation_model(name)
            assert status == operation.http.get("responseCode", 200), (name, status)
            if operation.output_shape is not None and body:
                _check(operation.output_shape, json.loads(body), name)
        return {name for name, status, _ in self.seen if status < 300}


@pytest.fixture
def aws() -> Iterator[boto3.Session]:
    """A moto server with the S3 Tables patches (every embedded AWS installs them)."""
    with embedded_aws():
        yield boto3.Session(region_name="us-east-1")


def _table(s3tables: Any, bucket_tags: dict[str, str] | None = None) -> dict[str, str]:
    arn = s3tables.create_table_bucket(name="lake", tags=bucket_tags or {})["arn"]
    s3tables.create_namespace(tableBucketARN=arn, namespace=["sales"])
    s3tables.create_table(
        tableBucketARN=arn, namespace="sales", name="orders", format="ICEBERG", tags={"owner": "icelake"}
    )
    return {"tableBucketARN": arn, "namespace": "sales", "name": "orders"}


def _code(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, int]:
    return exc.value.response["Error"]["Code"], exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_maintenance_starts_at_aws_defaults_and_keeps_what_is_put(aws: boto3.Session) -> None:
    s3tables = aws.client("s3tables")
    answers = Answers(s3tables)
    table = _table(s3tables)
    bucket = {"tableBucketARN": table["tableBucketARN"]}

    found = s3tables.get_table_maintenance_configuration(**table)
    assert found["tableARN"] == f"{table['tableBucketARN']}/table/orders"
    assert found["configuration"] == api.TABLE_DEFAULTS
    assert found["configuration"]["icebergSnapshotManagement"]["settings"] == {
        "icebergSnapshotManagement": {"minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 120}
    }
    # A status alone keeps the settings; settings given replace them
    s3tables.put_table_maintenance_configuration(
        **table, type="icebergCompaction", value={"status": "disabled"}
    )
    snapshots = {"icebergSnapshotManagement": {"minSnapshotsToKeep": 7, "maxSnapshotAgeHours": 2160}}
    s3tables.put_table_maintenance_configuration(
        **table, type="icebergSnapshotManagement", value={"status": "enabled", "settings": snapshots}
    )
    configuration = s3tables.get_table_maintenance_configuration(**table)["configuration"]
    assert configuration["icebergCompaction"] == {
        "status": "disabled",
        "settings": {"icebergCompaction": {"targetFileSizeMB": 512, "strategy": "auto"}},
    }
    assert configuration["icebergSnapshotManagement"] == {"status": "enabled", "settings": snapshots}

    # The bucket's unreferenced-file removal
    assert s3tables.get_table_bucket_maintenance_configuration(**bucket)["configuration"] == {
        "icebergUnreferencedFileRemoval": {
            "status": "enabled",
            "settings": {"icebergUnreferencedFileRemoval": {"unreferencedDays": 3, "nonCurrentDays": 10}},
        }
    }
    removal = {"icebergUnreferencedFileRemoval": {"unreferencedDays": 30, "nonCurrentDays": 60}}
    s3tables.put_table_bucket_maintenance_configuration(
        **bucket, type="icebergUnreferencedFileRemoval", value={"status": "enabled", "settings": removal}
    )
    removal_now = s3tables.get_table_bucket_maintenance_configuration(**bucket)["configuration"]
    assert removal_now["icebergUnreferencedFileRemoval"]["settings"] == removal

    # RenameTable keeps the settings; a table created again under the name starts from the defaults
    s3tables.rename_table(**table, newName="orders_v2")
    renamed = {**table, "name": "orders_v2"}
    assert s3tables.get_table_maintenance_configuration(**renamed)["configuration"] == configuration
    s3tables.delete_table(**renamed)
    s3tables.create_table(**renamed, format="ICEBERG")
    assert s3tables.get_table_maintenance_configuration(**renamed)["configuration"] == api.TABLE_DEFAULTS

    assert answers.check() >= {
        "GetTableMaintenanceConfiguration",
        "PutTableMaintenanceConfiguration",
        "GetTableBucketMaintenanceConfiguration",
        "PutTableBucketMaintenanceConfiguration",
    }


@pytest.mark.parametrize(
    ("kind", "value", "says"),
    [
        (
            "icebergCompaction",
            {"status": "enabled", "settings": {"icebergCompaction": {"targetFileSizeMB": 32}}},
            "64 to 512",
        ),
        (
            "icebergCompaction",
            {"status": "enabled", "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 2}}},
            "hold icebergCompaction",
        ),
        ("icebergCompaction", {"status": "paused"}, "enabled or disabled"),
    ],
)
def test_maintenance_settings_aws_refuses_are_refused(
    aws: boto3.Session, kind: str, value: dict[str, Any], says: str
) -> None:
    s3tables = aws.client("s3tables")
    table = _table(s3tables)
    with pytest.raises(ClientError, match=says) as refused:
        s3tables.put_table_maintenance_configuration(**table, type=kind, value=value)
    assert _code(refused) == ("BadRequestException", 400)
    assert s3tables.get_table_maintenance_configuration(**table)["configuration"] == api.TABLE_DEFAULTS
    with pytest.raises(ClientError) as missing:
        s3tables.get_table_maintenance_configuration(**{**table, "name": "absent"})
    assert _code(missing) == ("NotFoundException", 404)


def test_tags_and_policies_on_tables_and_buckets(aws: boto3.Session) -> None:
    s3tables = aws.client("s3tables")
    answers = Answers(s3tables)
    table = _table(s3tables, bucket_tags={"team": "data"})
    bucket_arn = table["tableBucketARN"]
    table_arn = s3tables.get_table(**table)["tableARN"]

    # CreateTableBucket's and CreateTable's tags are kept; TagResource adds, UntagResource removes
    assert s3tables.list_tags_for_resource(resourceArn=bucket_arn)["tags"] == {"team": "data"}
    assert s3tables.list_tags_for_resource(resourceArn=table_arn)["tags"] == {"owner": "icelake"}
    s3tables.tag_resource(resourceArn=table_arn, tags={"run": "r1", "stage": "sync"})
    s3tables.untag_resource(resourceArn=table_arn, tagKeys=["stage", "never-set"])
    assert s3tables.list_tags_for_resource(resourceArn=table_arn)["tags"] == {"owner": "icelake", "run": "r1"}
    with pytest.raises(ClientError, match="aws:") as reserved:
        s3tables.tag_resource(resourceArn=table_arn, tags={"aws:owner": "x"})
    assert _code(reserved) == ("BadRequestException", 400)
    with pytest.raises(ClientError, match="at most 50"):
        s3tables.tag_resource(resourceArn=bucket_arn, tags={f"k{i}": "v" for i in range(50)})
    with pytest.raises(ClientError, match="at most 50"):  # refused before the table is made
        s3tables.create_table(
            **{**table, "name": "crowded"}, format="ICEBERG", tags={f"k{i}": "v" for i in range(51)}
        )
    assert [t["name"] for t in s3tables.list_tables(tableBucketARN=bucket_arn)["tables"]] == ["orders"]
    with pytest.raises(ClientError) as unknown:
        s3tables.list_tags_for_resource(resourceArn=f"{bucket_arn}/table/absent")
    assert _code(unknown) == ("NotFoundException", 404)

    # Resource policies: none until put, JSON checked, deleted
    for read, put, delete, key in (
        (s3tables.get_table_policy, s3tables.put_table_policy, s3tables.delete_table_policy, table),
        (
            s3tables.get_table_bucket_policy,
            s3tables.put_table_bucket_policy,
            s3tables.delete_table_bucket_policy,
            {"tableBucketARN": bucket_arn},
        ),
    ):
        with pytest.raises(ClientError) as none:
            read(**key)
        assert _code(none) == ("NotFoundException", 404)
        with pytest.raises(ClientError, match="not JSON"):
            put(**key, resourcePolicy="{not json")
        put(**key, resourcePolicy=POLICY)
        assert json.loads(read(**key)["resourcePolicy"]) == json.loads(POLICY)
        delete(**key)
        with pytest.raises(ClientError, match="no resource policy"):
            read(**key)

    assert answers.check() >= {
        "TagResource",
        "UntagResource",
        "ListTagsForResource",
        "GetTablePolicy",
        "PutTablePolicy",
        "DeleteTablePolicy",
        "GetTableBucketPolicy",
        "PutTableBucketPolicy",
        "DeleteTableBucketPolicy",
    }


def test_table_answers_and_metadata_location_commits_in_the_models_shapes(aws: boto3.Session) -> None:
    s3tables = aws.client("s3tables")
    answers = Answers(s3tables)
    table = _table(s3tables)
    got = s3tables.get_table(**table)
    assert got["modifiedBy"] == got["createdBy"] == got["ownerAccountId"]
    warehouse = got["warehouseLocation"]
    assert warehouse.startswith("s3://") and warehouse.endswith("--table-s3")
    before = s3tables.get_table_metadata_location(**table)
    assert "metadataLocation" not in before  # no commit yet

    location = f"{warehouse}/metadata/00000-a.metadata.json"
    done = s3tables.update_table_metadata_location(
        **table, versionToken=before["versionToken"], metadataLocation=location
    )
    assert done["tableARN"] == got["tableARN"] and done["namespace"] == ["sales"]
    assert done["metadataLocation"] == location and done["versionToken"] != before["versionToken"]
    # A stale token: someone else committed (the token at Plan no longer holds)
    with pytest.raises(ClientError) as stale:
        s3tables.update_table_metadata_location(
            **table, versionToken=before["versionToken"], metadataLocation=location
        )
    assert _code(stale) == ("ConflictException", 409)
    # Outside the warehouse location's bucket, or not a metadata file: refused, nothing changed
    for wrong in (f"{warehouse}-other/metadata/00001-b.metadata.json", f"{warehouse}/metadata/snap-1.avro"):
        with pytest.raises(ClientError) as refused:
            s3tables.update_table_metadata_location(
                **table, versionToken=done["versionToken"], metadataLocation=wrong
            )
        assert _code(refused) == ("BadRequestException", 400)
    assert s3tables.get_table_metadata_location(**table)["metadataLocation"] == location
    # moto's own listings and reads, in the model's shapes too
    bucket = table["tableBucketARN"]
    s3tables.get_table_bucket(tableBucketARN=bucket)
    s3tables.list_table_buckets()
    s3tables.get_namespace(tableBucketARN=bucket, namespace="sales")
    s3tables.list_namespaces(tableBucketARN=bucket)
    (listed,) = s3tables.list_tables(tableBucketARN=bucket, namespace="sales")["tables"]
    assert listed["tableARN"] == got["tableARN"] and listed["type"] == "customer"
    assert answers.check() >= {
        "GetTable",
        "GetTableMetadataLocation",
        "UpdateTableMetadataLocation",
        "GetTableBucket",
        "ListTableBuckets",
        "GetNamespace",
        "ListNamespaces",
        "ListTables",
    }


# ------------------------------------------------------------------------- the table's storage


def _storage(aws: boto3.Session) -> tuple[Any, str]:
    s3tables = aws.client("s3tables")
    warehouse = s3tables.get_table(**_table(s3tables))["warehouseLocation"]
    return aws.client("s3"), warehouse.removeprefix("s3://")


def test_table_storage_serves_the_supported_object_operations(aws: boto3.Session) -> None:
    s3, bucket = _storage(aws)
    with storage.recorded() as calls:
        _use_every_supported_operation(s3, bucket)
    assert set(calls) == storage.SUPPORTED  # each served, none refused
    assert calls["PutObject"] == 1 and calls["UploadPart"] == 2


def _use_every_supported_operation(s3: Any, bucket: str) -> None:
    s3.put_object(Bucket=bucket, Key="data/a.parquet", Body=b"0123456789", ChecksumAlgorithm="CRC64NVME")
    head = s3.head_object(Bucket=bucket, Key="data/a.parquet", ChecksumMode="ENABLED")
    assert head["ContentLength"] == 10 and head["ServerSideEncryption"] == "AES256"
    assert "ChecksumCRC64NVME" in head
    ranged = s3.get_object(Bucket=bucket, Key="data/a.parquet", Range="bytes=2-5")["Body"].read()
    assert ranged == b"2345"

    part = b"x" * (5 * 1024 * 1024)
    upload = s3.create_multipart_upload(Bucket=bucket, Key="data/big.parquet")["UploadId"]
    etags = [
        s3.upload_part(Bucket=bucket, Key="data/big.parquet", UploadId=upload, PartNumber=n, Body=body)[
            "ETag"
        ]
        for n, body in ((1, part), (2, b"tail"))
    ]
    assert [
        p["PartNumber"]
        for p in s3.list_parts(Bucket=bucket, Key="data/big.parquet", UploadId=upload)["Parts"]
    ] == [1, 2]
    s3.complete_multipart_upload(
        Bucket=bucket,
        Key="data/big.parquet",
        UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in enumerate(etags, 1)]},
    )
    big = s3.head_object(Bucket=bucket, Key="data/big.parquet")
    assert big["ContentLength"] == len(part) + 4 and big["ServerSideEncryption"] == "AES256"
    dropped = s3.create_multipart_upload(Bucket=bucket, Key="data/dropped.parquet")["UploadId"]
    s3.abort_multipart_upload(Bucket=bucket, Key="data/dropped.parquet", UploadId=dropped)


def test_table_storage_refuses_what_aws_does_not_serve_there(aws: boto3.Session) -> None:
    s3, bucket = _storage(aws)
    s3.create_bucket(Bucket="plain")
    s3.put_object(Bucket="plain", Key="a", Body=b"source")
    s3.put_object(Bucket=bucket, Key="data/a.parquet", Body=b"written")
    upload = s3.create_multipart_upload(Bucket=bucket, Key="data/c.parquet")["UploadId"]
    refused = {
        "CopyObject": lambda: s3.copy_object(
            Bucket=bucket, Key="data/b", CopySource={"Bucket": "plain", "Key": "a"}
        ),
        "UploadPartCopy": lambda: s3.upload_part_copy(
            Bucket=bucket,
            Key="data/c.parquet",
            UploadId=upload,
            PartNumber=1,
            CopySource={"Bucket": "plain", "Key": "a"},
        ),
        "DeleteObject": lambda: s3.delete_object(Bucket=bucket, Key="data/a.parquet"),
        "DeleteObjects": lambda: s3.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": "data/a.parquet"}]}
        ),
        "ListObjectsV2": lambda: s3.list_objects_v2(Bucket=bucket),
        "ListObjects": lambda: s3.list_objects(Bucket=bucket),
        "ListMultipartUploads": lambda: s3.list_multipart_uploads(Bucket=bucket),
        "PutObjectTagging": lambda: s3.put_object_tagging(
            Bucket=bucket, Key="data/a.parquet", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]}
        ),
        "GetBucketLocation": lambda: s3.get_bucket_location(Bucket=bucket),
    }
    with storage.recorded() as calls:
        for operation, call in refused.items():
            with pytest.raises(ClientError) as refusal:
                call()
            assert _code(refusal) == ("MethodNotAllowed", 405), operation
    assert calls == {f"{operation} (refused)": 1 for operation in refused}
    with pytest.raises(ClientError) as head_bucket:
        s3.head_bucket(Bucket=bucket)
    assert head_bucket.value.response["ResponseMetadata"]["HTTPStatusCode"] == 405
    # Nothing refused changed anything
    assert s3.get_object(Bucket=bucket, Key="data/a.parquet")["Body"].read() == b"written"
    with pytest.raises(ClientError) as absent:
        s3.head_object(Bucket=bucket, Key="data/b")
    assert absent.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # An encryption, storage class or ACL other than the fixed ones is refused, not ignored
    for fixed in ({"ServerSideEncryption": "aws:kms"}, {"StorageClass": "GLACIER"}, {"ACL": "public-read"}):
        with pytest.raises(ClientError) as invalid:
            s3.put_object(Bucket=bucket, Key="data/d.parquet", Body=b"d", **fixed)
        assert _code(invalid) == ("InvalidArgument", 400), fixed
    s3.put_object(
        Bucket=bucket, Key="data/d.parquet", Body=b"d", ServerSideEncryption="AES256", StorageClass="STANDARD"
    )
    # A general purpose bucket keeps every operation
    s3.copy_object(Bucket="plain", Key="b", CopySource={"Bucket": "plain", "Key": "a"})
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="plain")["Contents"]] == ["a", "b"]
    s3.delete_object(Bucket="plain", Key="b")


def test_put_if_none_match_never_overwrites(aws: boto3.Session) -> None:
    s3, bucket = _storage(aws)
    s3.put_object(Bucket=bucket, Key="metadata/v1.metadata.json", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as taken:
        s3.put_object(Bucket=bucket, Key="metadata/v1.metadata.json", Body=b"second", IfNoneMatch="*")
    assert _code(taken) == ("PreconditionFailed", 412)
    upload = s3.create_multipart_upload(Bucket=bucket, Key="metadata/v1.metadata.json")["UploadId"]
    etag = s3.upload_part(
        Bucket=bucket, Key="metadata/v1.metadata.json", UploadId=upload, PartNumber=1, Body=b"third"
    )["ETag"]
    with pytest.raises(ClientError, match="PreconditionFailed"):
        s3.complete_multipart_upload(
            Bucket=bucket,
            Key="metadata/v1.metadata.json",
            UploadId=upload,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]},
            IfNoneMatch="*",
        )
    assert s3.get_object(Bucket=bucket, Key="metadata/v1.metadata.json")["Body"].read() == b"first"

    # Writers racing for one key: exactly one wins, and its bytes stay
    won: list[bytes] = []

    def put(body: bytes) -> None:
        try:
            s3.put_object(Bucket=bucket, Key="metadata/v2.metadata.json", Body=body, IfNoneMatch="*")
            won.append(body)
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "PreconditionFailed"

    writers = [threading.Thread(target=put, args=(f"writer {i}".encode(),)) for i in range(8)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert len(won) == 1
    assert s3.get_object(Bucket=bucket, Key="metadata/v2.metadata.json")["Body"].read() == won[0]


@pytest.mark.usefixtures("aws_env")
def test_the_in_process_mock_serves_s3_tables_as_the_server_does() -> None:
    assert installed()
    session = boto3.Session(region_name="us-east-1")
    s3tables = session.client("s3tables")
    table = _table(s3tables)
    assert s3tables.get_table_maintenance_configuration(**table)["configuration"] == api.TABLE_DEFAULTS
    s3 = session.client("s3")
    bucket = s3tables.get_table(**table)["warehouseLocation"].removeprefix("s3://")
    s3.put_object(Bucket=bucket, Key="data/a", Body=b"a")
    with pytest.raises(ClientError) as refused:
        s3.copy_object(Bucket=bucket, Key="data/b", CopySource={"Bucket": bucket, "Key": "data/a"})
    assert _code(refused) == ("MethodNotAllowed", 405)


def test_the_patches_come_off_with_the_last_embedded_aws() -> None:
    from moto.s3.responses import S3Response
    from moto.s3tables.responses import S3TablesResponse

    already = installed()  # e.g. a session-wide embedded AWS of another module
    with embedded_aws(), embedded_aws():
        assert installed() and "get_table_maintenance_configuration" in S3TablesResponse.__dict__
    assert installed() == already
    if not already:
        assert "get_table_maintenance_configuration" not in S3TablesResponse.__dict__
        assert S3Response.__dict__["_key_response"].__module__ == "moto.s3.responses"
