"""The embedded AWS server's port: one the system binds when none is given (two test processes
start servers at once), and a clear refusal, not a hang, when the given one is taken. This
process's own requests reach it without a socket and read exactly what they read over loopback."""

from __future__ import annotations

import gc
import io
import os
import socket
import urllib.request
from typing import Any

import boto3
import pytest
import urllib3.util.connection
from botocore.exceptions import ClientError, EndpointConnectionError

from icelake.errors import PortInUseError
from icelake.heap import ROOMY_GC_THRESHOLDS
from icelake.local.moto_server import embedded_aws


def _answers(endpoint: str) -> bool:
    with urllib.request.urlopen(f"{endpoint}/moto-api/data.json", timeout=10) as response:
        return bool(response.status == 200)


def test_without_a_port_the_server_binds_one_the_system_picks_and_names_it() -> None:
    before = os.environ.get("AWS_ENDPOINT_URL")
    with embedded_aws() as first, embedded_aws() as second:
        assert first != second
        assert _answers(first) and _answers(second)
        assert second == f"http://127.0.0.1:{os.environ['MOTO_PORT']}"  # the innermost server's port
        assert os.environ["AWS_ENDPOINT_URL"] == second
    assert os.environ.get("AWS_ENDPOINT_URL") == before  # restored


def test_the_collector_is_roomy_while_the_server_runs_and_as_it_was_after(
    python_gc_defaults: tuple[int, int, int],
) -> None:
    with embedded_aws():
        assert gc.get_threshold() == ROOMY_GC_THRESHOLDS
    assert gc.get_threshold() == python_gc_defaults


@pytest.mark.timeout(60)
def test_a_taken_port_is_refused_at_once_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = pytest.raises(PortInUseError, match=rf"port {port} on 127.0.0.1 is in use.*--port 0")
        with refused, embedded_aws(port):
            pass


def _scenario() -> list[Any]:
    """Answers of a mix of calls whose requests and answers differ in shape: S3 keys that need
    quoting, metadata with an underscore, a range, a listing with a delimiter, a missing key, a
    body streamed from a file with a trailing checksum, a multipart upload; JSON (DynamoDB, Glue)
    and query (STS) protocols; an error. Volatile fields (request ids, dates) left out."""
    s3 = boto3.client("s3")
    seen: list[Any] = [s3.create_bucket(Bucket="answers")["Location"]]
    key = "dir/ü a+b=c.txt"
    put = s3.put_object(
        Bucket="answers", Key=key, Body=b"0123456789", Metadata={"x_under": "1", "dash-ed": "2"}
    )
    seen.append(put["ETag"])
    got = s3.get_object(Bucket="answers", Key=key, Range="bytes=2-5")
    seen += [got["Body"].read(), got["ContentRange"], got["Metadata"]]
    head = s3.head_object(Bucket="answers", Key=key)
    seen += [head["ContentLength"], head["ETag"], head["Metadata"]]
    streamed = io.BytesIO(b"x" * 70_000)
    seen.append(
        s3.put_object(Bucket="answers", Key="dir/streamed", Body=streamed, ChecksumAlgorithm="CRC32")[
            "ChecksumCRC32"
        ]
    )
    upload = s3.create_multipart_upload(Bucket="answers", Key="big")["UploadId"]
    part = s3.upload_part(
        Bucket="answers", Key="big", UploadId=upload, PartNumber=1, Body=io.BytesIO(b"p" * 1024)
    )
    done = s3.complete_multipart_upload(
        Bucket="answers",
        Key="big",
        UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    seen.append(done["ETag"])
    listing = s3.list_objects_v2(Bucket="answers", Prefix="dir/", Delimiter="/")
    seen.append([(o["Key"], o["Size"], o["ETag"]) for o in listing["Contents"]])
    with pytest.raises(ClientError) as missing:
        s3.get_object(Bucket="answers", Key="dir/none")
    seen.append(missing.value.response["Error"]["Code"])
    dynamodb = boto3.client("dynamodb")
    dynamodb.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.put_item(TableName="t", Item={"k": {"S": "ü"}, "n": {"N": "1"}})
    seen.append(dynamodb.get_item(TableName="t", Key={"k": {"S": "ü"}})["Item"])
    glue = boto3.client("glue")
    glue.create_database(DatabaseInput={"Name": "db"})
    seen.append(glue.get_database(Name="db")["Database"]["Name"])
    with pytest.raises(ClientError) as no_table:
        glue.get_table(DatabaseName="db", Name="none")
    seen.append(no_table.value.response["Error"]["Code"])
    seen.append(boto3.client("sts").get_caller_identity()["Account"])
    return seen


def test_this_process_reaches_the_server_without_a_socket_and_reads_the_same_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with embedded_aws(over_loopback_only=True):
        over_loopback = _scenario()
    with embedded_aws(), monkeypatch.context() as no_sockets:
        no_sockets.setattr(urllib3.util.connection, "create_connection", _no_connection)
        in_process = _scenario()
        with embedded_aws(over_loopback_only=True), pytest.raises(EndpointConnectionError):
            boto3.client("s3").list_buckets()  # a server reached over loopback needs the socket
    assert in_process == over_loopback
    assert in_process[1] == '"781e5e245d69b566979b86e28d23f2c7"'  # the MD5 of b"0123456789"
    assert in_process[2:5] == [b"2345", "bytes 2-5/10", {"x_under": "1", "dash-ed": "2"}]


def _no_connection(*args: Any, **kwargs: Any) -> Any:
    raise OSError("no socket may be opened in this test")
