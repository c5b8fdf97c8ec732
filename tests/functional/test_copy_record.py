"""The copy record (icelake/migrate/check/record.py) on the embedded AWS: every object a migration
writes is on it with the proof S3 gave, a HEAD of an untouched object agrees with it, one
overwritten with bytes of the same length does not (and says what differs), a retried attempt
adds to its run's record, and a table's records read as one with the later run winning."""

from __future__ import annotations

from icelake.aws.fileio import S3FileIO
from icelake.migrate import migrate_table
from icelake.migrate.check.proved import Damage, proved_files
from icelake.migrate.check.record import (
    COPY,
    Proof,
    Record,
    RecordBuilder,
    add_to_record,
    differs,
    read_record,
    write_record,
)
from icelake.migrate.check.repair import RepairSources, plan_repairs, write_repairs
from icelake.migrate.settings import EngineSettings
from icelake.uris import PrefixMap
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, add_source_table


def test_every_object_written_is_on_the_record_and_a_same_length_overwrite_differs(lake: Lake) -> None:
    # Given a table migrated S3 to S3 under the target's KMS key, its record kept
    metadata = add_source_table(lake, "orders", [[1, 2], [3]])
    src, dst = S3FileIO(lake.source.client("s3")), S3FileIO(lake.target.client("s3"), kms_key_id=lake.kms_key)
    builder = RecordBuilder()
    target = f"s3://{TARGET_BUCKET}/w/orders"
    result = migrate_table(metadata, target, src_io=src, dst_io=dst, settings=EngineSettings(record=builder))
    uri = f"s3://{TARGET_BUCKET}/records/r1/record.parquet"
    write_record(dst, uri, builder.table())
    record, absent = read_record(dst, [f"s3://{TARGET_BUCKET}/records/r0/record.parquet", uri])

    # Then every object of the target is on it, each proof is what a HEAD says now
    written = {u for u, _info in dst.list(target)}
    assert {p.target for p in record} == written and absent == [
        f"s3://{TARGET_BUCKET}/records/r0/record.parquet"
    ]
    assert all(differs(p, dst.stat(p.target)) is None for p in record)
    copies = [p for p in record if p.kind == COPY]
    assert len(copies) == result.files_copied == 2
    assert all(p.checksum and p.source.startswith(f"s3://{SOURCE_BUCKET}/") and p.source_etag for p in copies)
    rewritten = [p for p in record if p.kind != COPY]
    assert {p.kind for p in rewritten} == {"data manifest", "manifest list", "metadata"}
    assert all(p.checksum and p.checksum.startswith("SHA256:") for p in rewritten)
    # and the verify's check finds it whole: the rewritten files (recorded by their SHA-256) by a
    # HEAD each, and so the two copies (a listing answers for 50 copies or more: test_verify_listing)
    whole = proved_files(dst, result.target_metadata_location, record)
    assert (whole.files, whole.heads, whole.problems) == (len(written), len(written), [])

    # When a copy and a manifest list are overwritten with bytes of the same length
    s3 = lake.target.client("s3")
    for proof in (copies[0], next(p for p in rewritten if p.kind == "manifest list")):
        key = proof.target.split("/", 3)[3]
        s3.put_object(Bucket=TARGET_BUCKET, Key=key, Body=b"\0" * proof.size)
        # Then the record tells, naming what differs
        said = differs(proof, dst.stat(proof.target))
        assert said is not None and "recorded" in said, said
    assert differs(copies[1], None) == "missing at the target"
    damaged = proved_files(dst, result.target_metadata_location, record).damaged
    assert {d.path for d in damaged} == {
        copies[0].target,
        next(p for p in rewritten if p.kind == "manifest list").target,
    }
    assert all("recorded" in d.problem and d.snapshots for d in damaged), damaged


def test_a_retried_attempt_adds_to_its_runs_record_and_later_runs_win(lake: Lake) -> None:
    io = S3FileIO(lake.target.client("s3"))
    first = RecordBuilder()
    for i in range(3):
        first.add(
            Proof(f"s3://t/d/{i}.parquet", COPY, 10, f"e{i}", None, f"s3://s/d/{i}.parquet", 10, f"e{i}")
        )
    uri = f"s3://{TARGET_BUCKET}/runs/r1/t/record.parquet"
    add_to_record(io, uri, first)  # an attempt that died after its copies
    retried = RecordBuilder()
    retried.add(Proof("s3://t/d/2.parquet", COPY, 10, "again", None, "s3://s/d/2.parquet", 10, "e2"))
    retried.add(Proof("s3://t/m/l.avro", "manifest list", 5, None, "SHA256:x", "s3://s/m/l.avro"))
    add_to_record(io, uri, retried)  # the retry found 0 and 1 identical and skipped them
    later = RecordBuilder()
    later.add(Proof("s3://t/d/0.parquet", COPY, 11, "newer", None, "s3://s/d/0.parquet", 11, "n0"))
    later_uri = f"s3://{TARGET_BUCKET}/runs/r2/t/record.parquet"
    add_to_record(io, later_uri, later)

    record, absent = read_record(io, [uri, later_uri])
    assert absent == []
    assert {p.target: p.etag for p in record} == {
        "s3://t/d/0.parquet": "newer",
        "s3://t/d/1.parquet": "e1",
        "s3://t/d/2.parquet": "again",
        "s3://t/m/l.avro": None,
    }
    assert record.get("s3://t/m/l.avro") == Proof(
        "s3://t/m/l.avro", "manifest list", 5, None, "SHA256:x", "s3://s/m/l.avro"
    )


def test_every_kind_of_metadata_file_is_repaired_to_the_bytes_recorded(lake: Lake) -> None:
    # Given a migrated table (three commits: logged metadata.json files, lists, manifests), its record
    metadata = add_source_table(lake, "orders", [[1, 2], [3], [4]])
    src, dst = S3FileIO(lake.source.client("s3")), S3FileIO(lake.target.client("s3"), kms_key_id=lake.kms_key)
    builder = RecordBuilder()
    target = f"s3://{TARGET_BUCKET}/w/orders"
    result = migrate_table(metadata, target, src_io=src, dst_io=dst, settings=EngineSettings(record=builder))
    record = Record(Proof(*row.values()) for row in builder.table().to_pylist())
    current = result.target_metadata_location
    # When the current and a logged metadata.json, a manifest and a list are deleted, and a data
    # file overwritten
    lost = {
        k: [p.target for p in record if p.kind == k] for k in ("metadata", "data manifest", "manifest list")
    }
    gone = [
        current,
        next(p for p in lost["metadata"] if p != current),
        lost["data manifest"][0],
        lost["manifest list"][-1],
    ]
    for uri in gone:
        lake.target.client("s3").delete_object(Bucket=TARGET_BUCKET, Key=uri.split("/", 3)[3])
    data = next(p for p in record if p.kind == COPY)
    lake.target.client("s3").put_object(
        Bucket=TARGET_BUCKET, Key=data.target.split("/", 3)[3], Body=b"\0" * data.size
    )
    damaged = [Damage(uri, "file", "missing at the target") for uri in gone] + [
        Damage(data.target, "data file", "x")
    ]

    # Then each is rewritten from its source to the recorded bytes (or copied again), journaled
    # first, the current metadata.json last; and the table checks whole again
    prefix_map = PrefixMap([(f"s3://{SOURCE_BUCKET}/lake/sales/orders", target)])
    repairs, refused = plan_repairs(damaged, RepairSources(src, prefix_map, record, current))
    assert refused == [] and repairs[-1].proof.target == current
    journaled: list[list[str]] = []
    written = write_repairs(repairs, src, dst, journaled.append)
    assert journaled == [sorted([*gone, data.target])] and {p.target for p in written} == {*gone, data.target}
    check = proved_files(dst, current, record)
    assert check.problems == [] and check.files == len(record)
