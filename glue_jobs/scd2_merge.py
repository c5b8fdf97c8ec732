"""Glue entry point of the ingestion workflow: merge pending raw batches into an SCD2 Iceberg table
(a batch that cannot merge for a reason in its data goes to quarantine/, the others go on),
or run the table's maintenance. Arguments resolve through awsglue when present, else argparse
(same names), so the same script runs in AWS Glue and locally.

  --mode merge     --spec '<Scd2Spec JSON>' --batch-uris '["s3://raw/raw/src/ep/run/", ...]'
  --mode maintain  --spec '<Scd2Spec JSON>' [--expire-older-than-days 7 --retain-last 10
                   --orphan-older-than-hours 72 --delete-file-threshold 1
                   --target-file-size-bytes 134217728]
  --local-warehouse DIR   (local runs only) a Hadoop catalog named after the spec's catalog
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from icelake.aws.fileio import io_for
from icelake.glue_args import resolve_options
from icelake.ingest.landing import read_manifest
from icelake.ingest.models import MaintenanceConfig, PendingBatch, Scd2Spec
from icelake.ingest.scd2 import maintain, merge_pending

MAINTENANCE_OPTIONS = (
    "expire_older_than_days",
    "retain_last",
    "orphan_older_than_hours",
    "delete_file_threshold",
    "target_file_size_bytes",
)
OPTIONS = ("mode", "spec", "batch_uris", *MAINTENANCE_OPTIONS)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    raw = resolve_options(
        argv,
        (*OPTIONS, "local_warehouse"),
        prog="scd2_merge",
        required=("mode", "spec"),
        defaults={"batch_uris": "[]"},
    )
    if raw["mode"] not in ("merge", "maintain"):
        raise SystemExit(f"scd2_merge: --mode must be merge or maintain, got {raw['mode']!r}")
    return argparse.Namespace(**raw)


def build_session(spec: Scd2Spec, local_warehouse: str | None) -> Any:
    if local_warehouse:
        from icelake.local.spark import local_spark

        return local_spark({spec.table.split(".")[0]: local_warehouse}, app_name="scd2_merge")
    from pyspark.sql import SparkSession  # in Glue, catalogs come from the job's --conf

    return SparkSession.builder.getOrCreate()


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    spec = Scd2Spec.model_validate_json(args.spec)
    spark = build_session(spec, args.local_warehouse)
    if args.mode == "maintain":
        given = {k: getattr(args, k) for k in MAINTENANCE_OPTIONS if getattr(args, k) not in (None, "")}
        report = maintain(spark, spec.table, MaintenanceConfig.model_validate(given))
        print(json.dumps({"table": spec.table, **report}))
        return report
    uris = json.loads(args.batch_uris)
    batches = []
    for given_uri in uris:
        uri = given_uri.rstrip("/")
        batches.append(PendingBatch(uri=uri, manifest=read_manifest(io_for(uri), uri)))
    io = io_for(batches[0].uri) if batches else None
    results = merge_pending(spark, spec, io, batches, quarantine=True) if io is not None else []
    report = {
        "table": spec.table,
        "results": [r.model_dump() for r in results],
        "quarantined": [r.quarantined_to for r in results if r.quarantined_to],
    }
    print(json.dumps(report, default=str))
    return report


if __name__ == "__main__":
    main()
