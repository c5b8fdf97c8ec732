"""A large synthetic Iceberg v2 table, built through the Iceberg Java API without writing data files.

Only metadata is real: every snapshot is a `FastAppend` of `files_per_snapshot` DataFile entries
whose paths point at Parquet files that were never written. The column statistics of every entry
are those of one real Parquet file (written by Spark into a small seed table), so the manifests
have the size and shape of a real table's manifests (bounds, value counts, column sizes...).

py4j cost, measured on a 2-core machine: about 0.3 ms per data file (three round trips: withPath,
build, appendFile, plus the proxies' garbage collection), so 50,000 files take about 15 s; each
commit (one manifest + one manifest list + one metadata.json) takes tens of milliseconds. That is
fast enough that no Java-side helper class is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from icelake.uris import local_path

# Sizes recorded for every synthetic data file (a typical compacted Parquet file).
FILE_SIZE_BYTES = 134_217_728
RECORDS_PER_FILE = 1_000_000
FIRST_DAY = date(2024, 1, 1)

SCHEMA_SQL = """(
    id BIGINT,
    ts TIMESTAMP,
    customer_id BIGINT,
    order_id STRING,
    status STRING,
    country STRING,
    amount DECIMAL(12, 2),
    quantity INT,
    discount DOUBLE,
    note STRING
)"""

SEED_ROWS_SQL = """SELECT
    id,
    TIMESTAMP '2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS ts,
    id * 7919 % 100000 AS customer_id,
    concat('order-', lpad(CAST(id AS STRING), 12, '0')) AS order_id,
    CASE id % 3 WHEN 0 THEN 'NEW' WHEN 1 THEN 'SHIPPED' ELSE 'DELIVERED' END AS status,
    CASE id % 4 WHEN 0 THEN 'FR' WHEN 1 THEN 'DE' WHEN 2 THEN 'US' ELSE 'JP' END AS country,
    CAST(id * 1.37 AS DECIMAL(12, 2)) AS amount,
    CAST(id % 17 AS INT) AS quantity,
    (id % 10) / 100.0 AS discount,
    CASE WHEN id % 5 = 0 THEN NULL ELSE concat('note for order ', CAST(id AS STRING)) END AS note
FROM range(1000)"""


@dataclass(frozen=True)
class BuiltTable:
    identifier: str  # catalog.db.table
    location: str  # table location, as written in its metadata
    metadata_dir: str
    current_metadata: str  # the newest vN.metadata.json
    snapshots: int
    data_files: int
    build_seconds: float  # create + appends + commits
    append_seconds: float  # building DataFile entries through py4j
    commit_seconds: float

    def metadata_after(self, snapshots: int) -> str:
        """The metadata.json of the table as it was after `snapshots` appends (v1 is the CREATE)."""
        return f"{self.metadata_dir}/v{snapshots + 1}.metadata.json"


def _sparse_file(uri: str, size: int) -> None:
    path = local_path(uri)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)


def _seed_data_file(spark: Any, catalog: str) -> Any:
    """One real DataFile of the same schema and spec; its metrics are reused by every entry."""
    seed = f"{catalog}.db.seed"
    spark.sql(f"DROP TABLE IF EXISTS {seed}")
    spark.sql(
        f"CREATE TABLE {seed} {SCHEMA_SQL} USING iceberg PARTITIONED BY (days(ts)) "
        "TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(f"INSERT INTO {seed} {SEED_ROWS_SQL}")
    jvm = spark._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, seed)
    return table.currentSnapshot().addedDataFiles(table.io()).iterator().next()


def build_synthetic_table(
    spark: Any,
    catalog: str,
    *,
    snapshots: int,
    files_per_snapshot: int,
    partitions_per_snapshot: int,
    progress: Callable[[int], None] | None = None,
    file_size: int = FILE_SIZE_BYTES,
    touch: bool = False,
    day_of: Callable[[int, int], int] | None = None,
) -> BuiltTable:
    """`snapshots` fast appends of `files_per_snapshot` files each into `<catalog>.db.t`. `touch`:
    each data file is also created, sparse (its recorded size, no disk blocks), so that listings
    and HEADs find it as on a real lake. `day_of(snapshot, i)`: the partition (days after
    FIRST_DAY) of each file, instead of `partitions_per_snapshot` runs of files."""
    started = time.monotonic()
    ident = f"{catalog}.db.t"
    jvm = spark._jvm
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.db")
    spark.sql(f"DROP TABLE IF EXISTS {ident}")
    # previous-versions-max: keep every metadata.json in the log (the default keeps 100), so that
    # both tools rewrite the whole history.
    spark.sql(
        f"CREATE TABLE {ident} {SCHEMA_SQL} USING iceberg PARTITIONED BY (days(ts)) "
        "TBLPROPERTIES ('format-version'='2', 'write.metadata.previous-versions-max'='100000')"
    )
    seed_file = _seed_data_file(spark, catalog)
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, ident)
    location = table.location()
    builder = (
        jvm.org.apache.iceberg.DataFiles.builder(table.spec())
        .copy(seed_file)
        .withFileSizeInBytes(file_size)
        .withRecordCount(RECORDS_PER_FILE)
    )
    append_s = commit_s = 0.0
    per_partition = max(1, -(-files_per_snapshot // partitions_per_snapshot))
    for s in range(snapshots):
        t0 = time.monotonic()
        append = table.newFastAppend()
        job = uuid.uuid4()
        day_index = -1
        for i in range(files_per_snapshot):
            now = day_of(s, i) if day_of else s * partitions_per_snapshot + i // per_partition
            if now != day_index:
                day_index = now
                partition = f"ts_day={(FIRST_DAY + timedelta(days=day_index)).isoformat()}"
                builder.withPartitionPath(partition)
            path = f"{location}/data/{partition}/{i:05d}-{s}-{job}-{i:05d}.parquet"
            builder.withPath(path)
            if touch:
                _sparse_file(path, file_size)
            append.appendFile(builder.build())
        t1 = time.monotonic()
        append.commit()
        t2 = time.monotonic()
        append_s += t1 - t0
        commit_s += t2 - t1
        if progress:
            progress(s + 1)
    table.refresh()
    metadata_location = table.operations().current().metadataFileLocation()
    return BuiltTable(
        identifier=ident,
        location=location,
        metadata_dir=metadata_location.rsplit("/", 1)[0],
        current_metadata=metadata_location,
        snapshots=snapshots,
        data_files=snapshots * files_per_snapshot,
        build_seconds=round(time.monotonic() - started, 3),
        append_seconds=round(append_s, 3),
        commit_seconds=round(commit_s, 3),
    )


def build_with_progress_bar(
    spark: Any,
    catalog: str,
    console: Any,
    *,
    snapshots: int,
    files_per_snapshot: int,
    partitions_per_snapshot: int,
    file_size: int = FILE_SIZE_BYTES,
    day_of: Callable[[int, int], int] | None = None,
) -> BuiltTable:
    """`build_synthetic_table` with touched data files, showing a progress bar on `console`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(f"build: {snapshots} x {files_per_snapshot} files", total=snapshots)
        return build_synthetic_table(
            spark,
            catalog,
            snapshots=snapshots,
            files_per_snapshot=files_per_snapshot,
            partitions_per_snapshot=partitions_per_snapshot,
            progress=lambda n: bar.update(task, completed=n),
            file_size=file_size,
            touch=True,
            day_of=day_of,
        )


def build_in_own_process(
    warehouse: Path, files: int, snapshots: int, file_size: int, *extra: str
) -> dict[str, Any]:
    """`main` in a fresh interpreter (its own JVM, whose memory goes back when it ends); the built
    table as a dict of `BuiltTable`'s fields."""
    repo = Path(__file__).resolve().parent.parent
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.synthetic_table",
        f"--warehouse={warehouse}",
        f"--files={files}",
        f"--snapshots={snapshots}",
        f"--file-size={file_size}",
        *extra,
    ]
    proc = subprocess.run(cmd, cwd=repo, stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"building the synthetic table failed (exit {proc.returncode})")
    built: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return built


def skewed_days(prefixes: int, hot_share: float) -> Callable[[int, int], int]:
    """File i of a snapshot goes to day 0 (the hot partition) for `hot_share` of each run of 100
    files, and round-robin over the other `prefixes - 1` days otherwise."""
    hot = round(hot_share * 100)

    def day_of(_snapshot: int, i: int) -> int:
        at = i % 100
        return 0 if at < hot or prefixes < 2 else 1 + (i * 7919 + at) % (prefixes - 1)

    return day_of


def main(argv: list[str] | None = None) -> None:
    """Build a table in this process's own JVM and print it as one JSON line (for callers that
    must not hold a second SparkSession, or want its memory back when the build is done)."""
    import dataclasses

    from icelake.local.spark import local_spark
    from rich.console import Console

    ap = argparse.ArgumentParser(prog="python -m benchmarks.synthetic_table", description=main.__doc__)
    ap.add_argument("--warehouse", required=True, help="directory of the Hadoop catalog `synthetic`")
    ap.add_argument("--files", type=int, required=True, help="data files in the table")
    ap.add_argument("--snapshots", type=int, required=True, help="fast appends, each of files/snapshots")
    ap.add_argument("--partitions-per-snapshot", type=int, default=5)
    ap.add_argument("--file-size", type=int, default=FILE_SIZE_BYTES, help="bytes recorded (and touched)")
    ap.add_argument(
        "--skewed-prefixes",
        type=int,
        default=0,
        help="spread every snapshot's files over this many partitions, --hot-share of them in the first",
    )
    ap.add_argument("--hot-share", type=float, default=0.3)
    args = ap.parse_args(argv)
    day_of = skewed_days(args.skewed_prefixes, args.hot_share) if args.skewed_prefixes else None
    warehouse = str(Path(args.warehouse).resolve())
    spark = local_spark({"synthetic": warehouse}, app_name="icelake-synthetic-table", driver_memory="4g")
    try:
        built = build_with_progress_bar(
            spark,
            "synthetic",
            Console(stderr=True),
            snapshots=args.snapshots,
            files_per_snapshot=max(1, args.files // args.snapshots),
            partitions_per_snapshot=args.partitions_per_snapshot,
            file_size=args.file_size,
            day_of=day_of,
        )
    finally:
        spark.stop()
    print(json.dumps(dataclasses.asdict(built)))


if __name__ == "__main__":
    main()


def large_table_parser(prog: str, doc: str, work_dir: Path) -> argparse.ArgumentParser:
    """A bench command over one large synthetic table: its files, their size, where it works and
    whether it records its results (the bench adds its own options)."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n", maxsplit=1)[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--file-size", type=int, default=1024, help="bytes of every data file (default 1 KiB)")
    ap.add_argument("--work-dir", default=str(work_dir))
    ap.add_argument("--no-record", action="store_true")
    return ap
