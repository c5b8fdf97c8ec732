"""S3 under load: with 10% of requests answered 503 SlowDown and 5% of answers lost after the
request took effect, a migration completes on the first try and the target is byte-identical to
a fault-free run's. Before icelake configured its clients (botocore's legacy 3 attempts), 2 of 3
seeds failed with `SlowDown ... reached max retries: 2`."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws.clients import ENV_MAX_ATTEMPTS, client_config, max_attempts, new_session
from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.local.moto_server import embedded_aws
from icelake.migrate import migrate_table
from icelake.migrate.settings import EngineSettings
from tests.reliability.fault_proxy import fault_proxy

SOURCE = "s3://source-lake/wh/events"
TARGET = "s3://target-lake/wh/events"


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with embedded_aws() as endpoint:
        s3 = new_session().client("s3")
        s3.create_bucket(Bucket="source-lake")
        s3.create_bucket(Bucket="target-lake")
        yield endpoint


@pytest.fixture(scope="module")
def source_metadata(moto: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A pyiceberg table with 6 snapshots (appends and an overwrite), seeded into the source bucket."""
    root = tmp_path_factory.mktemp("throttled")
    cat = SqlCatalog("t", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = cat.create_table("db.events", schema=schema)
    for i in range(5):
        table.append(pa.table({"id": list(range(i * 10, i * 10 + 10)), "v": [f"r{i}"] * 10}, schema=schema))
    table.overwrite(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    metadata = cat.load_table("db.events").metadata_location
    seeded = migrate_table(
        metadata, SOURCE, src_io=LocalFileIO(), dst_io=S3FileIO(new_session().client("s3"))
    )
    return seeded.target_metadata_location


def _target_objects(endpoint: str) -> dict[str, str]:
    s3 = new_session().client("s3", endpoint_url=endpoint)
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="target-lake"):
        for obj in page.get("Contents", []):
            body = s3.get_object(Bucket="target-lake", Key=obj["Key"])["Body"].read()
            out[obj["Key"]] = hashlib.sha256(body).hexdigest()
    return out


def _clear_target(endpoint: str) -> None:
    s3 = new_session().client("s3", endpoint_url=endpoint)
    keys = [{"Key": k} for k in _target_objects(endpoint)]
    if keys:
        s3.delete_objects(Bucket="target-lake", Delete={"Objects": keys})


def _migrate(source_metadata: str, endpoint: str) -> None:
    src = S3FileIO(new_session().client("s3", endpoint_url=endpoint))
    dst = S3FileIO(new_session().client("s3", endpoint_url=endpoint))
    migrate_table(
        source_metadata,
        TARGET,
        src_io=src,
        dst_io=dst,
        settings=EngineSettings(workers=4, processes=1),
    )


def test_every_client_retries_with_bounded_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    config = new_session(region_name="us-east-1").client("s3")._client_config
    assert config.retries == {"mode": "standard", "total_max_attempts": 10}
    assert (config.connect_timeout, config.read_timeout) == (10, 120)
    monkeypatch.setenv(ENV_MAX_ATTEMPTS, "4")
    assert client_config().retries == {"mode": "standard", "total_max_attempts": 4}
    monkeypatch.setenv(ENV_MAX_ATTEMPTS, "many")
    with pytest.raises(ValueError, match="ICELAKE_AWS_MAX_ATTEMPTS='many': give a whole number"):
        max_attempts()


@pytest.mark.slow
def test_migration_survives_slow_down_and_lost_answers(moto: str, source_metadata: str) -> None:
    _clear_target(moto)
    _migrate(source_metadata, moto)
    reference = _target_objects(moto)
    assert any(k.endswith(".metadata.json") for k in reference)
    for seed in (1, 2, 3):
        _clear_target(moto)
        with fault_proxy(moto, seed=seed) as (proxy, stats):
            _migrate(source_metadata, proxy)
        # the faults really happened, and the run still completed with the same bytes
        assert stats.slowed > 0 and stats.dropped > 0, stats
        assert _target_objects(moto) == reference, f"seed {seed}"
