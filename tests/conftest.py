"""Shared fixtures: one SparkSession per test session (starting Spark costs seconds), and moto
in-process."""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto import mock_aws

from icelake.heap import ROOMY_GC_THRESHOLDS
from icelake.local import s3tables
from icelake.local.embedded import ENV_RETRY_WAIT_SCALE
from icelake.local.spark import ENV_LOCAL_SPARK_CONF
from tests.schedule import pytest_addoption, pytest_collection_modifyitems, record_if_asked

__all__ = ["pytest_addoption", "pytest_collection_modifyitems"]  # the files' order: tests/schedule.py

# The tests run thousands of Spark jobs on a few rows each, where per-query work dominates:
# whole-stage code generation per query and adaptive re-planning, both off here (the product's
# sessions keep Spark's defaults). Measured on tests/ingest with -n 0 (one JVM the whole run, as a
# worker's): 304 s wall and 401 s CPU with them off; 322 s and 409 s with Spark's defaults.
# Expressions are interpreted too (`factoryMode`, the switch Spark's own test suites use): each
# query's generated classes were compiled by Janino and then by the JVM's JIT, whose threads took 80
# of the JVM's 169 s of CPU in test_scd2_properties. tests/ingest: 280 s wall and 375 s CPU (the
# JVM 310 s) against 296 s and 420 s (354 s) with only the two above. With no generated classes,
# the JIT's C1 alone is enough (while they were generated, C1-only cost more than it saved: 411 s
# against 401 s): tests/ingest 291 s wall and 339 s CPU (JVM 282 s), the whole suite 922 s and
# 1,595 s of CPU against 947 s and 1,682 s. The serial collector, tried too, cost more (435 s).
TINY_JOBS = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}


# The embedded AWS's Retry waits, shortened: the tests prove what a retry does, not how long AWS
# waits before it (the ingest workflow's retried merge waited its 30 s in full).
RETRY_WAIT_SCALE = "0.05"


def pytest_configure(config: pytest.Config) -> None:
    # Whichever starts this process's session (a fixture, or a Glue job the embedded AWS runs).
    os.environ[ENV_LOCAL_SPARK_CONF] = json.dumps(TINY_JOBS)
    os.environ.setdefault(ENV_RETRY_WAIT_SCALE, RETRY_WAIT_SCALE)
    # The embedded AWS's collector thresholds (icelake.heap.roomy_gc) for the whole test process: its
    # moto, botocore models and Spark stay loaded between the tests. tests/e2e took 243 s, 69 s of
    # them in the collector, against 205 s (28 s) with them.
    gc.set_threshold(*ROOMY_GC_THRESHOLDS)
    record_if_asked(config)


@pytest.fixture
def python_gc_defaults() -> Iterator[tuple[int, int, int]]:
    """Python's own collector thresholds for one test (the suite runs at the roomy ones)."""
    saved = gc.get_threshold()
    defaults = (700, 10, 10)
    gc.set_threshold(*defaults)
    yield defaults
    gc.set_threshold(*saved)


@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark(spark_warehouse: Path) -> Iterator[object]:
    """local[2] Spark with the Iceberg runtime; catalog `src` is a Hadoop catalog in a temp dir."""
    from icelake.local.spark import local_spark

    warehouses = {"src": str(spark_warehouse / "src")}
    session = local_spark(warehouses, app_name="icelake-tests")
    yield session
    session.stop()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in-process, with fake credentials and no endpoint override."""
    for key in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws(), s3tables.patched():  # S3 Tables as AWS serves it, as in every embedded AWS
        yield
