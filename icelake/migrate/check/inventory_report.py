"""An S3 Inventory report of the target bucket in place of the verify's listing
(`options.inventory_report`: the S3 URI of the report's manifest.json).

S3 Inventory writes, daily or weekly, every object of a bucket (or a prefix) with the fields its
configuration names, as CSV (gzip), Parquet or ORC data files, and a manifest.json naming them:
`sourceBucket`, `destinationBucket` (an ARN), `fileFormat`, `fileSchema` (CSV: the field names,
", " between them; Parquet: the schema's message), `creationTimestamp` (milliseconds since the
epoch, when the scan began) and `files` (`key`, `size`, `MD5checksum`), as AWS's "Locating your
inventory list" describes it. A report with `Size` and `ETag` answers for every copy the record
proves by its ETag, as the listing does, with a GET per data file of the report instead of a LIST
per 1,000 keys; the rewritten files, proved by their SHA-256, are HEADed as always.

What it costs and how fresh it is: S3 bills the report per million objects listed (S3's pricing
page, "Management & Insights"), once a day or a week whoever reads it; reading it costs its data
files' GETs. It is as old as its `creationTimestamp`: a file damaged since is not seen by it, and
a file written since (a sync after the report) is not in it and is HEADed. The verify's outcome
says the report's time and age. ORC reports are not read (refused, naming the format to choose).
"""

from __future__ import annotations

import csv
import gzip
import io as _io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import unquote_plus

import pyarrow as pa
import pyarrow.parquet as pq

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.errors import IcelakeError
from icelake.uris import canonical, is_under

NEEDED = ("Bucket", "Key", "Size", "ETag")  # the CSV fields read (Parquet: bucket, key, size, e_tag)
PARQUET_COLUMNS = ("bucket", "key", "size", "e_tag")


@dataclass(frozen=True)
class InventoryReport:
    manifest: str
    created: datetime  # when S3 began the scan the report holds
    objects: dict[str, ObjectInfo] = field(default_factory=dict)  # canonical uri -> size, ETag
    data_files: int = 0  # the report's data files read (a GET each)

    def age_note(self, now: datetime | None = None) -> str:
        hours = ((now or datetime.now(UTC)) - self.created).total_seconds() / 3600
        return (
            f"copies checked against the S3 Inventory report {self.manifest} of "
            f"{self.created:%Y-%m-%d %H:%M} UTC ({hours:.0f} h old: a file damaged since is not seen, "
            "one written since is HEADed)"
        )


def read_inventory(io: FileIO, manifest_uri: str, location: str) -> InventoryReport:
    """The objects under `location` as the report at `manifest_uri` lists them."""
    try:
        manifest = json.loads(io.read(manifest_uri))
        fmt, schema = manifest["fileFormat"], manifest["fileSchema"]
        source, files = manifest["sourceBucket"], manifest["files"]
        destination = str(manifest["destinationBucket"]).rsplit(":", 1)[-1]
        created = datetime.fromtimestamp(int(manifest["creationTimestamp"]) / 1000, UTC)
    except (KeyError, TypeError, ValueError) as exc:
        raise _refused(
            manifest_uri, f"is not an S3 Inventory manifest.json ({type(exc).__name__}: {exc})"
        ) from exc
    root = canonical(location)
    bucket = root.removeprefix("s3://").split("/", 1)[0]
    if source != bucket:
        raise _refused(manifest_uri, f"lists bucket {source}, not the target's {bucket}")
    objects: dict[str, ObjectInfo] = {}
    for entry in files:
        data = io.read(f"s3://{destination}/{entry['key']}")
        rows = (
            _csv_rows(data, schema, manifest_uri) if fmt == "CSV" else _parquet_rows(data, fmt, manifest_uri)
        )
        for key, size, etag in rows:
            uri = f"s3://{bucket}/{key}"
            if is_under(uri, root):
                objects[uri] = ObjectInfo(size=size, etag=etag.strip('"') or None)
    return InventoryReport(manifest_uri, created, objects, len(files))


def _csv_rows(data: bytes, schema: str, manifest_uri: str) -> list[tuple[str, int, str]]:
    names = [n.strip() for n in schema.split(",")]
    missing = [n for n in NEEDED if n not in names]
    if missing:
        raise _refused(manifest_uri, f"has no {', '.join(missing)} field: add them to the inventory's fields")
    at = [names.index(n) for n in NEEDED[1:]]
    reader = csv.reader(_io.StringIO(gzip.decompress(data).decode()))
    # Keys are URL-encoded in a CSV report
    return [(unquote_plus(r[at[0]]), int(r[at[1]]), r[at[2]]) for r in reader if r]


def _parquet_rows(data: bytes, fmt: str, manifest_uri: str) -> list[tuple[str, int, str]]:
    if fmt != "Parquet":
        raise _refused(manifest_uri, f"is in {fmt}, which icelake does not read: configure CSV or Parquet")
    table = pq.read_table(pa.BufferReader(data))
    missing = [c for c in PARQUET_COLUMNS if c not in table.column_names]
    if missing:
        raise _refused(manifest_uri, f"has no {', '.join(missing)} column: add Size and ETag to its fields")
    keys, sizes, etags = (table.column(c).to_pylist() for c in PARQUET_COLUMNS[1:])
    return list(zip(keys, sizes, etags, strict=True))


def _refused(manifest_uri: str, why: str) -> IcelakeError:
    return IcelakeError(
        f"options.inventory_report {manifest_uri} {why}: name the manifest.json of an S3 Inventory "
        "report of the target bucket (CSV or Parquet, with Size and ETag), or leave it out to list"
    )
