"""The record of what a run wrote to a target: per object, its key, size, and the ETag or
full-object checksum S3 reported when icelake wrote it, with the source object it came from.

Each copy already proves its result against the source (`copy/objects.py`: the copy's MD5 ETag or
its full-object checksum against the source's); a rewritten file (manifest, manifest list,
metadata.json, delete file) is PUT with its SHA-256, which S3 checks on arrival. The record keeps
that proof, so a later `verify` can tell a damaged object from the one written by one HEAD, and a
`repair` can tell whether the source still holds what was copied.

One Parquet file per run and table in the artifacts bucket (`runs/<run>/<table>/record.parquet`,
beside the journal), never one object per file and never object tags (a request each). An
incremental sync writes the objects it wrote; the table's record is the records of every run the
ledger lists for it (its journals), read in one pass, a later run's row winning.
"""

from __future__ import annotations

import io as _io
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icelake.aws.fileio import FileIO, ObjectInfo, is_absent
from icelake.uris import canonical

RECORD_NAME = "record.parquet"
BATCH_ROWS = 8192  # rows held as Python values before they are packed into Arrow columns

# What a record row says the object is: "copy" (a data, statistics or other unchanged file) or the
# kind of a rewritten file; repair rewrites each kind with the function that wrote it.
COPY = "copy"
REWRITTEN = ("delete file", "data manifest", "delete manifest", "manifest list", "metadata")


class Proof(NamedTuple):
    """One object as written: what the copy or the PUT proved."""

    target: str
    kind: str
    size: int
    etag: str | None  # as S3 answered the write
    checksum: str | None  # "ALGORITHM:base64 value", a full-object checksum as S3 reports it
    source: str
    source_size: int | None = None  # a copy's source, as planned (a rewrite reads the source whole)
    source_etag: str | None = None
    source_checksum: str | None = None


SCHEMA = pa.schema(
    [
        ("target", pa.string()),
        ("kind", pa.string()),
        ("size", pa.int64()),
        ("etag", pa.string()),
        ("checksum", pa.string()),
        ("source", pa.string()),
        ("source_size", pa.int64()),
        ("source_etag", pa.string()),
        ("source_checksum", pa.string()),
    ]
)


def checksum_text(checksum: tuple[str, str] | None) -> str | None:
    return f"{checksum[0]}:{checksum[1]}" if checksum else None


def checksum_pair(text: str | None) -> tuple[str, str] | None:
    if not text:
        return None
    algorithm, _, value = text.partition(":")
    return algorithm, value


class RecordBuilder:
    """The rows of one run, packed into Arrow batches as they come (a million copies' rows are
    about 150 bytes each in columns, several times that as Python tuples)."""

    def __init__(self) -> None:
        self._rows: list[Proof] = []
        self._batches: list[pa.RecordBatch] = []

    def add(self, proof: Proof) -> None:
        self._rows.append(proof)
        if len(self._rows) >= BATCH_ROWS:
            self._pack()

    def _pack(self) -> None:
        if self._rows:
            columns = list(zip(*self._rows, strict=True))
            self._batches.append(pa.RecordBatch.from_arrays(list(columns), schema=SCHEMA))
            self._rows = []

    def table(self) -> pa.Table:
        self._pack()
        return pa.Table.from_batches(self._batches, schema=SCHEMA)

    def __len__(self) -> int:
        return len(self._rows) + int(sum(b.num_rows for b in self._batches))


def write_record(io: FileIO, uri: str, table: pa.Table) -> None:
    buffer = _io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    io.write(uri, buffer.getvalue())


def add_to_record(io: FileIO, uri: str, rows: RecordBuilder) -> None:
    """This attempt's rows added to the run's record: an earlier attempt of the same run (a
    retried step) wrote the objects this one found identical and skipped, and its proofs stay;
    a row of this attempt replaces an earlier one of the same key."""
    table = rows.table()
    try:
        earlier = pq.read_table(pa.BufferReader(io.read(uri))).cast(SCHEMA)
    except Exception as exc:
        if not is_absent(exc):
            raise
    else:
        kept = pc.invert(pc.is_in(earlier.column("target"), value_set=table.column("target")))
        table = pa.concat_tables([earlier.filter(kept), table])
    write_record(io, uri, table)


class Record:
    """A table's record: the newest proof of each target object (canonical key)."""

    def __init__(self, rows: Iterable[Proof] = ()) -> None:
        self.rows: dict[str, Proof] = {canonical(r.target): r for r in rows}

    def get(self, path: str) -> Proof | None:
        return self.rows.get(canonical(path))

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Proof]:
        return iter(self.rows.values())


def read_record(io: FileIO, uris: Iterable[str]) -> tuple[Record, list[str]]:
    """The records at `uris` (oldest first) as one; and the uris that are not there (a run from
    before records were kept, or one whose copy wrote nothing)."""
    rows: list[Proof] = []
    absent: list[str] = []
    for uri in uris:
        try:
            data = io.read(uri)
        except Exception as exc:
            if not is_absent(exc):
                raise
            absent.append(uri)
            continue
        table = pq.read_table(pa.BufferReader(data))
        columns = [table.column(name).to_pylist() for name in SCHEMA.names]
        rows.extend(Proof(*values) for values in zip(*columns, strict=True))
    return Record(rows), absent


def differs(proof: Proof, now: ObjectInfo | None) -> str | None:
    """What differs between the object as recorded and as S3 reports it now (None: it is the
    object written). Sizes first; then the recorded checksum in its own algorithm, else the ETag."""
    if now is None:
        return "missing at the target"
    if now.size != proof.size:
        return f"{now.size} bytes, {proof.size} recorded"
    recorded = checksum_pair(proof.checksum)
    if recorded is not None:
        found = now.checksum if now.checksum and now.checksum[0] == recorded[0] else None
        if found is None and recorded[0] == "SHA256" and now.sha256 and "-" not in now.sha256:
            found = ("SHA256", now.sha256)
        if found is not None:
            return None if found[1] == recorded[1] else f"{recorded[0]} {found[1]}, {recorded[1]} recorded"
    if proof.etag and now.etag:
        return None if now.etag == proof.etag else f"ETag {now.etag}, {proof.etag} recorded"
    if recorded is not None:  # neither the algorithm recorded nor an ETag to compare: rewritten since
        return f"no {recorded[0]} checksum now, {recorded[1]} recorded: replaced since it was written"
    return None  # nothing recorded beyond the size (a local target)
