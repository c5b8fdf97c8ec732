"""The source-table corpus, built once per test session by Spark's Iceberg writer and by pyiceberg."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spark import corpus


@pytest.fixture(scope="session")
def source_tables(spark: Any, spark_warehouse: Path) -> dict[str, corpus.SourceTable]:
    tables = {name: build(spark) for name, build in corpus.SPARK_CASES.items()}
    tables["data_elsewhere"] = corpus.data_elsewhere(spark, spark_warehouse)
    tables["pyiceberg"] = corpus.pyiceberg_table(spark_warehouse / "pyiceberg")
    return tables
