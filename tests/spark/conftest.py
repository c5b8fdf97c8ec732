"""The source-table corpus, built once per test run by Spark's Iceberg writer and by pyiceberg,
and shared read-only by every worker of the run."""

from __future__ import annotations

import dataclasses
import fcntl
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.spark import corpus


@pytest.fixture(scope="session")
def source_tables(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> dict[str, corpus.SourceTable]:
    """The corpus, under the run's base directory (the parent of every xdist worker's): the first
    worker to need it builds it while holding a lock, the others wait and read what it recorded.
    Tests read the tables through their metadata files and never write them."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent
    root = shared / "corpus"
    spark.conf.set(f"spark.sql.catalog.{corpus.CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{corpus.CATALOG}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{corpus.CATALOG}.warehouse", str(root / "spark"))
    built = root / "built.json"
    with open(shared / "corpus.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not built.exists():
            tables = {name: build(spark) for name, build in corpus.SPARK_CASES.items()}
            tables["data_elsewhere"] = corpus.data_elsewhere(spark, root)
            tables.update(corpus.pyiceberg_tables(root / "pyiceberg"))
            built.write_text(json.dumps({k: dataclasses.asdict(v) for k, v in tables.items()}))
    return {k: corpus.SourceTable(**v) for k, v in json.loads(built.read_text()).items()}


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
