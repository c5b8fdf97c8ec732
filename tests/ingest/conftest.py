"""Fixtures for the ingestion tests: a real HTTP API on loopback, embedded AWS (moto)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from icelake.ingest.local_api import ApiServer, Behaviour, Reply, SeenRequest, paged_records

__all__ = ["ApiServer", "Behaviour", "Reply", "SeenRequest", "paged_records"]


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer() as server:
        yield server


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in-process, with fake credentials and no endpoint override."""
    for key in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        yield


@pytest.fixture(scope="session")
def ingest_catalog(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Hadoop Iceberg catalog `ingest` in a temp dir, added to the shared SparkSession."""
    warehouse = tmp_path_factory.mktemp("ingest-warehouse")
    spark.conf.set("spark.sql.catalog.ingest", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.ingest.type", "hadoop")
    spark.conf.set("spark.sql.catalog.ingest.warehouse", str(warehouse))
    return "ingest"
