"""Fixtures for the ingestion tests: a real HTTP API on loopback, embedded AWS (moto)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from icelake.ingest.local_api import ApiServer, Behaviour, Reply, SeenRequest, paged_records

__all__ = ["ApiServer", "Behaviour", "Reply", "SeenRequest", "paged_records"]


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer() as server:
        yield server


@pytest.fixture(scope="session")
def ingest_catalog(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Hadoop Iceberg catalog `ingest` in a temp dir, added to the shared SparkSession."""
    warehouse = tmp_path_factory.mktemp("ingest-warehouse")
    spark.conf.set("spark.sql.catalog.ingest", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.ingest.type", "hadoop")
    spark.conf.set("spark.sql.catalog.ingest.warehouse", str(warehouse))
    return "ingest"
