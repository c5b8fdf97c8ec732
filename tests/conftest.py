"""Shared fixtures: one SparkSession per test session (starting Spark costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark(spark_warehouse: Path) -> Iterator[object]:
    """local[2] Spark with the Iceberg runtime; catalog `src` is a Hadoop catalog in a temp dir."""
    from icelake.local.spark import local_spark

    session = local_spark({"src": str(spark_warehouse / "src")}, app_name="icelake-tests")
    yield session
    session.stop()
