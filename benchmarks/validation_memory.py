"""Peak memory of `rows` validation per byte of Parquet data: the figure behind
`icelake.migrate.check.validate.ROWS_MAX_BYTES`. Run: `python -m benchmarks.validation_memory`.

One pyiceberg table (a realistic mix: ids, timestamps, decimals, strings) of `--rows` rows in one
snapshot, copied by icelake, then validated with tier `rows` in a fresh process whose peak RSS
(ru_maxrss) is compared with the same process's RSS before validating."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

import pyarrow as pa

COLUMNS = 5


def build(root: Path, rows: int) -> tuple[str, int]:
    from pyiceberg.catalog.sql import SqlCatalog

    root.mkdir(parents=True, exist_ok=True)
    cat = SqlCatalog("m", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.create_namespace("db")
    ids = pa.array(range(rows), pa.int64())
    data = pa.table(
        {
            "id": ids,
            "ts": pa.array([1_700_000_000_000_000 + i for i in range(rows)], pa.timestamp("us")),
            "amount": pa.array([Decimal(i % 100_000) / 100 for i in range(rows)], pa.decimal128(12, 2)),
            "name": pa.array([f"customer {i:09d} of the benchmark" for i in range(rows)]),
            "country": pa.array([("FR", "DE", "US", "JP")[i % 4] for i in range(rows)]),
        }
    )
    table = cat.create_table("db.t", schema=data.schema)
    table.append(data)
    table = cat.load_table("db.t")
    size = sum(t.file.file_size_in_bytes for t in table.scan().plan_files())
    return table.metadata_location, size


def measure(source: str, target: str) -> None:
    from icelake.migrate.check.validate import validate_tables

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = validate_tables(source, target, tier="rows", rows_max_values=1 << 62)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert report.ok and report.tier == "rows", report
    print(json.dumps({"rss_before_kib": before, "rss_peak_kib": peak}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        measure(*args.measure)
        return
    from icelake.aws.fileio import LocalFileIO
    from icelake.migrate import migrate_table

    with tempfile.TemporaryDirectory() as tmp:
        source, data_bytes = build(Path(tmp) / "src", args.rows)
        io = LocalFileIO()
        target = migrate_table(source, f"{tmp}/copy", src_io=io, dst_io=io).target_metadata_location
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.validation_memory", "--measure", source, target],
            capture_output=True,
            text=True,
            check=True,
        )
        rss = json.loads(out.stdout.strip().splitlines()[-1])
        grown = (rss["rss_peak_kib"] - rss["rss_before_kib"]) * 1024
        print(
            json.dumps(
                {
                    "rows": args.rows,
                    "data_bytes": data_bytes,
                    "peak_growth_mib": round(grown / 2**20, 1),
                    "bytes_per_data_byte": round(grown / data_bytes, 1),
                    "bytes_per_value": round(grown / (args.rows * COLUMNS), 1),
                }
            )
        )


if __name__ == "__main__":
    main()
