"""The icelake package that the Glue jobs get through `--extra-py-files` is importable on the
Spark executors, where manifests are rewritten and files copied.

Spark (PySpark's addPyFile, which Glue uses for that argument) puts only .zip, .egg and .py files
on the executors' Python path: a .whl reaches the driver but not the executors. The test runs a
local Spark whose driver and executors see no icelake but the shipped file: the interpreter runs
with -S, so the editable install of this checkout is not on any path."""

from __future__ import annotations

import json
import os
import site
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cdk.build import build_glue_package
from icelake.local.spark import iceberg_runtime_jar

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PROBE = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.jars", sys.argv[3]).getOrCreate())
    sc = spark.sparkContext

    def where(_rows):
        try:
            import icelake.migrate.copy.engine as engine
            return [engine.__file__]
        except ImportError as exc:
            return ["ImportError: " + str(exc)]

    found = {}
    for label, path in (("whl", sys.argv[1]), ("zip", sys.argv[2])):
        sc.addPyFile(path)
        found[label] = sorted(set(sc.parallelize(range(2), 2).mapPartitions(where).collect()))
    print(json.dumps(found))
    spark.stop()
    """
)


def test_only_the_zip_reaches_the_executors(tmp_path: Path) -> None:
    package = build_glue_package(tmp_path / "build")
    wheel = tmp_path / "icelake-as-wheel-py3-none-any.whl"
    wheel.write_bytes(package.read_bytes())  # the same bytes under a wheel's name
    # Executors start the same interpreter without site processing: no .pth, no editable install.
    python = tmp_path / "python-no-site"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    env = {
        **os.environ,
        "PYSPARK_PYTHON": str(python),
        "PYSPARK_DRIVER_PYTHON": str(python),
        "PYTHONPATH": os.pathsep.join(site.getsitepackages()),  # pyspark and py4j, not this checkout
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    done = subprocess.run(
        [str(python), str(probe), str(wheel), str(package), iceberg_runtime_jar()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(f.startswith("ImportError") for f in found["whl"]), found  # what Glue did before
    assert found["zip"] and all(
        f"{package.name}/icelake/migrate/copy/engine.py" in f for f in found["zip"]
    ), found
