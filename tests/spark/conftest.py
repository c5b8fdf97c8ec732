"""The source-table corpus, built once per test session by Spark's Iceberg writer and by pyiceberg."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.spark import corpus


@pytest.fixture(scope="session")
def source_tables(spark: Any, spark_warehouse: Path) -> dict[str, corpus.SourceTable]:
    tables = {name: build(spark) for name, build in corpus.SPARK_CASES.items()}
    tables["data_elsewhere"] = corpus.data_elsewhere(spark, spark_warehouse)
    tables.update(corpus.pyiceberg_tables(spark_warehouse / "pyiceberg"))
    return tables


@pytest.fixture
def hadoop_catalog(spark: Any, tmp_path: Path) -> Callable[[str], str]:
    """Registers, on the shared session, an Iceberg catalog of Hadoop tables (the paths written
    as plain paths, as Iceberg's Hadoop tables write them) whose warehouse is in this test's
    tmp_path; returns the catalog's name."""

    def register(name: str) -> str:
        spark.conf.set(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
        spark.conf.set(f"spark.sql.catalog.{name}.type", "hadoop")
        spark.conf.set(f"spark.sql.catalog.{name}.warehouse", str(tmp_path / "warehouse"))
        return name

    return register
