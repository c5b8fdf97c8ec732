"""A local SparkSession with the real Iceberg runtime, the way the Glue jobs get one in AWS.

The Iceberg Spark runtime jar comes from the `snowpark-connect-deps-iceberg` wheel (PyPI), so no
Maven download happens. Catalogs are Hadoop catalogs over local directories.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


def iceberg_runtime_jar() -> str:
    import snowpark_connect_deps_iceberg as deps

    pattern = os.path.join(os.path.dirname(deps.__file__), "jars", "iceberg-spark-runtime-3.5_2.12-*.jar")
    jars = sorted(glob.glob(pattern))
    if not jars:
        raise RuntimeError(f"Iceberg Spark runtime jar not found ({pattern}); run `make setup`")
    return jars[-1]


def local_spark(
    catalogs: dict[str, str],
    app_name: str = "icelake",
    driver_memory: str = "2g",
    extra_conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Session `local[2]` with one Hadoop Iceberg catalog per name -> warehouse directory, and any
    `extra_conf` on top (the tests tune the JVM for their many tiny jobs)."""
    from pyspark.sql import SparkSession

    # Bind to loopback: local runs never listen on other interfaces.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers run this interpreter (with icelake, boto3, pyarrow), not whatever is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.jars", iceberg_runtime_jar())
        .config("spark.sql.extensions", ICEBERG_EXTENSIONS)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # icelake prints its own progress and tables
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.session.timeZone", "UTC")
    )
    for name, warehouse in catalogs.items():
        os.makedirs(warehouse, exist_ok=True)
        builder = (
            builder.config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
            .config(f"spark.sql.catalog.{name}.type", "hadoop")
            .config(f"spark.sql.catalog.{name}.warehouse", warehouse)
        )
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
