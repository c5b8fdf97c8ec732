"""Validate's pyiceberg reads, measured beside the estimate's `validated_reads` (issue 45).

    .venv/bin/python -m benchmarks.validate_reads [--snapshots 1 25 100]

A pyiceberg table of 100 appends is published to embedded AWS as it stood after 1, 25 and 100 of
them; `validate_tables` (the metadata tier: each snapshot's lineage, summary and manifest-list
counts, both sides) is timed on each, twice, against itself. Beside it: the estimate of those
reads (icelake/assess/estimate/model.py `validated_reads`) under the embedded model calibrated now
(`estimate_pairs.calibrated_throughput`). These reads are pyarrow's, outside the run's request
counts; this is where their time is checked. Prints one JSON line; records nothing (the figures
go into benchmarks/WORKFLOW_RESULTS.md by hand, with the load they were measured under).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any


def _published(root: Path, snapshots: list[int]) -> dict[int, str]:
    """The table's local metadata after each of `snapshots` appends."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("reads", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    catalog.create_namespace("db")
    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    table = catalog.create_table("db.t", rows.schema, properties={"format-version": "2"})
    metadata = {}
    for n in range(1, max(snapshots) + 1):
        table.append(rows)
        if n in snapshots:
            metadata[n] = table.metadata_location
    return metadata


def measure(snapshots: list[int]) -> dict[str, Any]:
    import boto3
    from icelake.assess.estimate.model import validated_reads
    from icelake.aws.fileio import LocalFileIO, S3FileIO
    from icelake.local.moto_server import embedded_aws
    from icelake.migrate.check.validate import validate_tables
    from icelake.migrate.copy.engine import migrate_table
    from icelake.migrate.settings import EngineSettings
    from icelake.throughput import ThroughputModel

    from benchmarks.estimate_pairs import calibrated_throughput

    root = Path(tempfile.mkdtemp(prefix="validate-reads-"))
    try:
        local = _published(root, snapshots)
        with embedded_aws() as endpoint:
            model = ThroughputModel.model_validate(calibrated_throughput())
            s3 = boto3.client("s3", region_name="us-east-1")
            s3.create_bucket(Bucket="validate-reads")
            props = {
                "s3.access-key-id": "testing",
                "s3.secret-access-key": "testing",
                "s3.region": "us-east-1",
                "s3.endpoint": endpoint,
            }
            rows = []
            for n, metadata in local.items():
                published = migrate_table(
                    metadata,
                    f"s3://validate-reads/t{n}",
                    src_io=LocalFileIO(),
                    dst_io=S3FileIO(s3),
                    settings=EngineSettings(history="all"),
                ).target_metadata_location
                seconds = []
                for _ in range(2):
                    started = time.perf_counter()
                    report = validate_tables(
                        published, published, source_props=props, target_props=props, tier="metadata"
                    )
                    seconds.append(round(time.perf_counter() - started, 3))
                    assert report.ok, report.problems
                estimated = round(validated_reads(n, model), 3)
                rows.append({"snapshots": n, "measured_s": seconds, "estimated_s": estimated})
                print(f"{n:>4} snapshots: measured {seconds} s, estimated {estimated} s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"rows": rows, "load_average": round(os.getloadavg()[0], 1), "model": model.latency_s}


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.validate_reads", description=__doc__)
    ap.add_argument("--snapshots", type=int, nargs="+", default=[1, 25, 100])
    args = ap.parse_args()
    print(json.dumps(measure(sorted(set(args.snapshots)))))


if __name__ == "__main__":
    main()
