"""The verify's files check on the embedded AWS: copies answered by listing the table location in
ranges side by side (check/proof_chunks.py), and by an S3 Inventory report of the target bucket in
place of the listing (check/inventory_report.py), written here as S3 writes one (manifest.json
naming gzip CSV or Parquet data files); damage is found either way, and what the report cannot
know (a file written since) is HEADed."""

from __future__ import annotations

import csv
import gzip
import io
import json
from typing import Any
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icelake.aws.fileio import S3FileIO
from icelake.migrate import migrate_table
from icelake.migrate.check import proof_chunks
from icelake.migrate.check.inventory_report import read_inventory
from icelake.migrate.check.proof_chunks import FileToProve, check_chunk, chunks_of
from icelake.migrate.check.proved import proved_files
from icelake.migrate.check.record import COPY, Proof, Record, RecordBuilder
from icelake.migrate.settings import EngineSettings
from icelake.request.models import Options
from tests.lake import TARGET_BUCKET, Lake, add_source_table

LOCATION = f"s3://{TARGET_BUCKET}/v/t"
pytestmark = pytest.mark.slow  # each builds or migrates on the embedded AWS (5 to 9 s)


def _objects(lake: Lake, n: int) -> list[Proof]:
    """`n` objects under the location, each with the proof of its PUT's ETag (as a copy's)."""
    s3 = lake.target.client("s3")
    proofs = []
    for i in range(n):
        key = f"v/t/data/part-{i:04d}.parquet"
        etag = s3.put_object(Bucket=TARGET_BUCKET, Key=key, Body=b"x" * (10 + i))["ETag"].strip('"')
        proofs.append(Proof(f"s3://{TARGET_BUCKET}/{key}", COPY, 10 + i, etag, None, f"s3://src/{i}"))
    return proofs


def test_ranges_of_the_location_answer_for_copies_and_find_damage(lake: Lake, monkeypatch: Any) -> None:
    # Given 120 copies on the record, one overwritten with bytes of its length, one deleted, and
    # objects not on the record between them (other files of the location)
    proofs = _objects(lake, 120)
    s3 = lake.target.client("s3")
    s3.put_object(Bucket=TARGET_BUCKET, Key=proofs[7].target.split("/", 3)[3], Body=b"y" * proofs[7].size)
    s3.delete_object(Bucket=TARGET_BUCKET, Key=proofs[64].target.split("/", 3)[3])
    s3.put_object(Bucket=TARGET_BUCKET, Key="v/t/data/part-0050.parquet.crc", Body=b"c")
    monkeypatch.setattr(proof_chunks, "RANGE_KEYS", 50)  # three ranges side by side
    files = [FileToProve(p.target, p.size, "data file", p) for p in reversed(proofs)]
    chunks = chunks_of(files, LOCATION)
    assert [(c.location is not None, len(c.files)) for c in chunks] == [(True, 50), (True, 50), (True, 20)]

    # When each range is checked by its listing alone
    io = S3FileIO(s3)
    results = [check_chunk(lambda: io, c) for c in chunks]

    # Then the overwritten and the deleted copy are named, with what differs, and nothing else
    damaged = {path: problem for r in results for path, _what, problem in r.damaged}
    assert set(damaged) == {proofs[7].target, proofs[64].target}, damaged
    assert "ETag" in damaged[proofs[7].target] and damaged[proofs[64].target] == "missing at the target"
    assert sum(r.heads for r in results) == 0 and sum(r.unrecorded for r in results) == 0


def _report(lake: Lake, fmt: str, rows: list[tuple[str, int, str]], created_ms: int) -> str:
    """An S3 Inventory report of the target bucket, as S3 writes one, in the artifacts' bucket."""
    s3 = lake.target.client("s3")
    s3.create_bucket(Bucket="inventory-reports")
    base = f"inv/{TARGET_BUCKET}/daily"
    if fmt == "CSV":
        out = io.StringIO()
        writer = csv.writer(out, quoting=csv.QUOTE_ALL)
        for key, size, etag in rows:
            writer.writerow([TARGET_BUCKET, quote_plus(key), size, "2026-12-06T00:00:00.000Z", etag])
        body, schema, name = (
            gzip.compress(out.getvalue().encode()),
            "Bucket, Key, Size, LastModifiedDate, ETag",
            "a.csv.gz",
        )
    else:
        table = pa.table(
            {
                "bucket": [TARGET_BUCKET] * len(rows),
                "key": [r[0] for r in rows],
                "size": pa.array([r[1] for r in rows], pa.int64()),
                "e_tag": [r[2] for r in rows],
            }
        )
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        body, name = buffer.getvalue(), "a.parquet"
        schema = (
            "message s3.inventory { required binary bucket (STRING); required binary key (STRING); "
            "optional int64 size; optional binary e_tag (STRING);}"
        )
    s3.put_object(Bucket="inventory-reports", Key=f"{base}/data/{name}", Body=body)
    manifest = {
        "sourceBucket": TARGET_BUCKET,
        "destinationBucket": "arn:aws:s3:::inventory-reports",
        "version": "2016-11-30",
        "creationTimestamp": str(created_ms),
        "fileFormat": fmt,
        "fileSchema": schema,
        "files": [{"key": f"{base}/data/{name}", "size": len(body), "MD5checksum": "0"}],
    }
    key = f"{base}/2026-12-06T00-00Z/manifest.json"
    s3.put_object(Bucket="inventory-reports", Key=key, Body=json.dumps(manifest).encode())
    return f"s3://inventory-reports/{key}"


@pytest.mark.parametrize("fmt", ["CSV", "Parquet"])
def test_an_inventory_report_stands_in_for_the_listing(lake: Lake, fmt: str) -> None:
    # Given a migrated table and its record, and an inventory report of the target bucket taken
    # after a data file was overwritten (same length) and before another was lost and written again
    metadata = add_source_table(lake, "orders", [[1, 2], [3], [4]])
    src, dst = S3FileIO(lake.source.client("s3")), S3FileIO(lake.target.client("s3"))
    builder = RecordBuilder()
    target = f"s3://{TARGET_BUCKET}/w/orders"
    result = migrate_table(metadata, target, src_io=src, dst_io=dst, settings=EngineSettings(record=builder))
    record = Record(Proof(*row.values()) for row in builder.table().to_pylist())
    copies = [p for p in record if p.kind == COPY]
    s3 = lake.target.client("s3")
    s3.put_object(Bucket=TARGET_BUCKET, Key=copies[0].target.split("/", 3)[3], Body=b"\0" * copies[0].size)
    listed = {
        f"s3://{TARGET_BUCKET}/{k}": info
        for k, info in ((u.split("/", 3)[3], i) for u, i in dst.list(target))
    }
    rows = [(u.split("/", 3)[3], i.size, i.etag or "") for u, i in listed.items() if u != copies[1].target]
    manifest = _report(lake, fmt, rows, 1_765_000_000_000)

    # When the files are checked with the report
    report = read_inventory(dst, manifest, target)
    check = proved_files(dst, result.target_metadata_location, record, inventory=report)

    # Then the overwritten copy is named by the report's ETag, the copy the report does not hold is
    # HEADed (and whole), no listing is read, and the check says how old the report is
    assert [d.path for d in check.damaged] == [copies[0].target], check.damaged
    assert "ETag" in check.damaged[0].problem
    assert check.ranges == 0 and check.files == len(record)
    assert check.heads == len(record) - len(copies) + 1  # the rewritten files, and the copy not in it
    assert "S3 Inventory report" in check.note and "h old" in check.note


def test_an_inventory_report_is_named_in_the_request_and_checked() -> None:
    assert Options(inventory_report="s3://b/inv/t/daily/2026-12-06T00-00Z/manifest.json").inventory_report
    with pytest.raises(ValueError, match="inventory_report"):
        Options(inventory_report="s3://b/inv/data/a.csv.gz")
