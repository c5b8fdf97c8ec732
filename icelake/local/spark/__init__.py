"""A local SparkSession with the real Iceberg runtime, the way the Glue jobs get one in AWS.

The Iceberg Spark runtime jar comes from the `snowpark-connect-deps-iceberg` wheel (PyPI), so no
Maven download happens. Catalogs are Hadoop catalogs over local directories.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
# The Python workers' daemon: PySpark's, reading zip archives again only when they change.
DAEMON_MODULE = "icelake.local.spark.daemon"
# Extra Spark settings for every local session of this process, as a JSON object: the test suite
# tunes the JVM for its thousands of tiny jobs this way, whichever code starts the session first
# (a test's fixture or a Glue job run by the embedded AWS).
ENV_LOCAL_SPARK_CONF = "ICELAKE_LOCAL_SPARK_CONF"


def iceberg_runtime_jar() -> str:
    import snowpark_connect_deps_iceberg as deps

    pattern = os.path.join(os.path.dirname(deps.__file__), "jars", "iceberg-spark-runtime-3.5_2.12-*.jar")
    jars = sorted(glob.glob(pattern))
    if not jars:
        raise RuntimeError(f"Iceberg Spark runtime jar not found ({pattern}); run `make setup`")
    return jars[-1]


def local_spark(
    catalogs: dict[str, str], app_name: str = "icelake", driver_memory: str = "2g"
) -> SparkSession:
    """Session `local[2]` with one Hadoop Iceberg catalog per name -> warehouse directory, and the
    settings of ICELAKE_LOCAL_SPARK_CONF on top."""
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
        .config("spark.python.daemon.module", DAEMON_MODULE)
    )
    for name, warehouse in catalogs.items():
        os.makedirs(warehouse, exist_ok=True)
        builder = (
            builder.config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
            .config(f"spark.sql.catalog.{name}.type", "hadoop")
            .config(f"spark.sql.catalog.{name}.warehouse", warehouse)
        )
    for key, value in _extra_conf().items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _extra_conf() -> dict[str, str]:
    raw = os.environ.get(ENV_LOCAL_SPARK_CONF, "").strip()
    if not raw:
        return {}
    try:
        conf = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{ENV_LOCAL_SPARK_CONF} is not JSON ({exc}): give an object of Spark settings"
        ) from exc
    if not isinstance(conf, dict):
        raise ValueError(f"{ENV_LOCAL_SPARK_CONF} must be a JSON object of Spark settings, got {raw!r}")
    return {str(k): str(v) for k, v in conf.items()}
