"""Behaviour users rely on: incremental runs, clear refusals, dry runs and the CLI contract."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws.fileio import LocalFileIO
from icelake.errors import (
    MissingSourceFilesError,
    NotAMetadataFileError,
    TargetConflictError,
    TargetHoldsOtherTableError,
    UnmappedPrefixesError,
    UnsafeTargetError,
    UnsupportedFileError,
)
from icelake.migrate import migrate_table
from icelake.migrate.copy import cpu_pool
from icelake.migrate.settings import EngineSettings
from tests.pool_starts import count_pool_starts
from tests.verify import assert_same_table

IO = LocalFileIO()


def _catalog(root: Path) -> SqlCatalog:
    root.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("c", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    catalog.create_namespace_if_not_exists("db")
    return catalog


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([f"v{i}" for i in ids], pa.string())})


@pytest.fixture
def source(tmp_path: Path) -> tuple[SqlCatalog, str]:
    catalog = _catalog(tmp_path / "src")
    table = catalog.create_table("db.t", schema=_rows([1]).schema)
    table.append(_rows([1, 2]))
    table.append(_rows([3]))
    return catalog, catalog.load_table("db.t").metadata_location


def _snapshot_tree(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_incremental_run_copies_only_new_files(source: tuple[SqlCatalog, str], tmp_path: Path) -> None:
    # Given a migrated table
    catalog, meta = source
    target = tmp_path / "dst" / "t"
    first = migrate_table(meta, str(target), src_io=IO, dst_io=IO)
    assert first.files_copied == 2  # two data files

    # When the source gets one more commit and the migration runs again from its new metadata
    table = catalog.load_table("db.t")
    table.append(_rows([4, 5]))
    new_meta = catalog.load_table("db.t").metadata_location
    second = migrate_table(new_meta, str(target), src_io=IO, dst_io=IO)

    # Then only the new data file is copied, and only the new manifest, manifest list and
    # metadata.json are written
    assert second.files_copied == 1
    assert second.files_rewritten == 3
    assert second.files_skipped == first.files_copied + first.files_rewritten
    assert_same_table(new_meta, second.target_metadata_location)


def test_dry_run_writes_nothing_and_reports_the_plan(source: tuple[SqlCatalog, str], tmp_path: Path) -> None:
    _, meta = source
    result = migrate_table(
        meta,
        str(tmp_path / "dst"),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(dry_run=True),
    )
    assert not (tmp_path / "dst").exists()
    assert result.dry_run and result.files_copied == 2 and result.bytes_copied > 0
    assert result.files_planned >= 2 + 1 + 2 + 2  # data, current metadata, manifests, manifest lists


def test_not_a_metadata_file_is_refused(source: tuple[SqlCatalog, str], tmp_path: Path) -> None:
    bogus = tmp_path / "x.json"
    bogus.write_text('{"hello": 1}')
    with pytest.raises(NotAMetadataFileError, match="not an Iceberg table metadata file"):
        migrate_table(str(bogus), str(tmp_path / "dst"), src_io=IO, dst_io=IO)
    with pytest.raises(NotAMetadataFileError, match="it does not exist"):
        migrate_table(str(tmp_path / "missing.metadata.json"), str(tmp_path / "dst"), src_io=IO, dst_io=IO)


def test_missing_source_files_are_listed_and_nothing_is_written(
    source: tuple[SqlCatalog, str], tmp_path: Path
) -> None:
    catalog, meta = source
    data_files = [t.file.file_path for t in catalog.load_table("db.t").scan().plan_files()]
    os.remove(data_files[0].removeprefix("file://"))
    with pytest.raises(MissingSourceFilesError) as info:
        migrate_table(meta, str(tmp_path / "dst"), src_io=IO, dst_io=IO)
    assert info.value.missing == [data_files[0]]
    assert "1 file(s) that do not exist" in str(info.value)
    assert not (tmp_path / "dst").exists()


def test_a_source_file_of_the_wrong_size_is_named_as_such(
    source: tuple[SqlCatalog, str], tmp_path: Path
) -> None:
    catalog, meta = source
    data_file = next(iter(catalog.load_table("db.t").scan().plan_files())).file.file_path
    with open(data_file.removeprefix("file://"), "ab") as fh:
        fh.write(b"x")
    with pytest.raises(MissingSourceFilesError) as info:
        migrate_table(meta, str(tmp_path / "dst"), src_io=IO, dst_io=IO)
    message = str(info.value)
    assert "1 file(s) whose size differs from the metadata" in message
    assert "do not exist" not in message
    assert info.value.missing == []
    assert not (tmp_path / "dst").exists()


def test_unmapped_prefix_is_refused_with_the_prefix_named(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path / "src")
    elsewhere = tmp_path / "other-bucket" / "data"
    table = catalog.create_table(
        "db.t", schema=_rows([1]).schema, properties={"write.data.path": str(elsewhere)}
    )
    table.append(_rows([1]))
    meta = catalog.load_table("db.t").metadata_location
    with pytest.raises(UnmappedPrefixesError, match="other-bucket") as info:
        migrate_table(meta, str(tmp_path / "dst" / "t"), src_io=IO, dst_io=IO)
    # the hint is the prefix itself (write.data.path), not its parent
    assert list(info.value.prefixes) == [f"file://{elsewhere}"]
    assert not (tmp_path / "dst").exists()
    # With the prefix mapped, the table moves and its data lands under the mapped prefix
    result = migrate_table(
        meta,
        str(tmp_path / "dst" / "t"),
        [(str(elsewhere), str(tmp_path / "dst" / "data"))],
        src_io=IO,
        dst_io=IO,
    )
    assert len(list((tmp_path / "dst" / "data").rglob("*.parquet"))) == 1
    assert_same_table(meta, result.target_metadata_location)


def test_target_with_another_table_is_refused(source: tuple[SqlCatalog, str], tmp_path: Path) -> None:
    catalog, meta = source
    other = catalog.create_table("db.other", schema=_rows([1]).schema)
    other.append(_rows([9]))
    target = tmp_path / "dst" / "t"
    migrate_table(catalog.load_table("db.other").metadata_location, str(target), src_io=IO, dst_io=IO)
    before = _snapshot_tree(target)
    with pytest.raises(TargetHoldsOtherTableError, match="different Iceberg table"):
        migrate_table(meta, str(target), src_io=IO, dst_io=IO)
    assert _snapshot_tree(target) == before


def test_differing_target_file_is_not_overwritten_unless_asked(
    source: tuple[SqlCatalog, str], tmp_path: Path
) -> None:
    _, meta = source
    target = tmp_path / "dst" / "t"
    migrate_table(meta, str(target), src_io=IO, dst_io=IO)
    victim = next(target.rglob("*.parquet"))
    good = victim.read_bytes()
    victim.write_bytes(b"not the same bytes")
    with pytest.raises(TargetConflictError, match="--overwrite"):
        migrate_table(meta, str(target), src_io=IO, dst_io=IO)
    assert victim.read_bytes() == b"not the same bytes"
    result = migrate_table(
        meta,
        str(target),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(overwrite=True),
    )
    assert result.files_copied == 1 and victim.read_bytes() == good


def test_target_inside_the_source_is_refused(source: tuple[SqlCatalog, str], tmp_path: Path) -> None:
    catalog, meta = source
    location = catalog.load_table("db.t").metadata.location
    before = _snapshot_tree(tmp_path / "src")
    with pytest.raises(UnsafeTargetError, match="never written"):
        migrate_table(meta, location + "/copy", src_io=IO, dst_io=IO)
    assert _snapshot_tree(tmp_path / "src") == before


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("icelake", path=os.path.dirname(sys.executable)) or "icelake"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_cli_json_contract(source: tuple[SqlCatalog, str], tmp_path: Path) -> None:
    _, meta = source
    target = f"file://{tmp_path}/dst/t"
    out = _cli("migrate", "path", "--metadata", meta, "--target-location", target, "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["target_metadata_location"].startswith(target + "/metadata/")
    assert (result["files_copied"], result["files_skipped"]) == (2, 0)
    assert result["files_rewritten"] > 0 and result["bytes_copied"] > 0

    again = json.loads(
        _cli("migrate", "path", "--metadata", meta, "--target-location", target, "--json").stdout
    )
    assert (again["files_copied"], again["files_rewritten"]) == (0, 0)


def test_cli_failure_is_one_line_on_stderr(tmp_path: Path) -> None:
    out = _cli(
        "migrate", "path", "--metadata", str(tmp_path / "nope.json"), "--target-location", str(tmp_path)
    )
    assert out.returncode != 0
    assert out.stdout == ""
    assert out.stderr.strip().count("\n") == 0 and out.stderr.startswith("icelake: error:")


def test_cli_dry_run_prints_plan(source: tuple[SqlCatalog, str], tmp_path: Path) -> None:
    _, meta = source
    out = _cli("migrate", "path", "--metadata", meta, "--target-location", str(tmp_path / "d"), "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "Dry run" in out.stdout and "prefix" in out.stdout
    assert not (tmp_path / "d").exists()


def test_logged_metadata_files_that_are_gone_are_dropped_from_the_log(
    source: tuple[SqlCatalog, str], tmp_path: Path
) -> None:
    # Given a source whose metadata log names a file that was deleted
    _, meta = source
    log = json.loads(Path(meta.removeprefix("file://")).read_text())["metadata-log"]
    assert len(log) >= 2
    gone = log[0]["metadata-file"]
    os.remove(gone.removeprefix("file://"))

    # When it is migrated
    result = migrate_table(meta, str(tmp_path / "dst" / "t"), src_io=IO, dst_io=IO)

    # Then the target log keeps exactly the entries whose files exist, and each of them exists at the target
    target_log = json.loads(Path(result.target_metadata_location.removeprefix("file://")).read_text())[
        "metadata-log"
    ]
    assert len(target_log) == len(log) - 1
    assert all(Path(e["metadata-file"].removeprefix("file://")).is_file() for e in target_log)
    assert result.metadata_files == len(log)  # the current file and the logged ones that exist


def test_rewrites_are_identical_across_processes(source: tuple[SqlCatalog, str], tmp_path: Path) -> None:
    # Given two processes with different hash seeds (Python's set and dict-of-set orders differ)
    _, meta = source
    script = (
        "import sys, hashlib\n"
        "from icelake.aws.fileio import LocalFileIO\n"
        "from icelake.migrate import migrate_table\n"
        "io = LocalFileIO()\n"
        "r = migrate_table(sys.argv[1], sys.argv[2], src_io=io, dst_io=io)\n"
        "print(sorted((u, hashlib.sha256(io.read(u)).hexdigest()) for u, _ in io.list(sys.argv[2])))\n"
    )
    outputs = []
    for seed in ("1", "2"):
        shutil.rmtree(tmp_path / "t", ignore_errors=True)
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", script, meta, str(tmp_path / "t")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        outputs.append(run.stdout)
    # Then every rewritten file has the same bytes, so a re-run from anywhere recognises its own output
    assert outputs[0] == outputs[1]
    assert outputs[0].count(".avro") >= 4


def test_manifests_rewritten_in_worker_processes_match_in_process_rewrites(
    source: tuple[SqlCatalog, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the same table migrated once in-process and once with manifests spread over processes
    # (two manifests: worker processes for any number of them; a pool started is counted)
    _, meta = source
    monkeypatch.setattr(cpu_pool, "MIN_MANIFESTS_FOR_PROCESSES", 1)
    started = count_pool_starts(monkeypatch)
    migrate_table(
        meta,
        str(tmp_path / "t"),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(processes=1),
    )
    inline = _snapshot_tree(tmp_path / "t")
    assert started == []
    shutil.rmtree(tmp_path / "t")
    result = migrate_table(
        meta,
        str(tmp_path / "t"),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(processes=2),
    )

    # Then worker processes ran, both produce the same bytes, and the table reads like its source
    assert started == [2]
    assert _snapshot_tree(tmp_path / "t") == inline
    assert_same_table(meta, result.target_metadata_location)


def test_target_file_check_finds_wrong_sizes_missing_files_and_source_paths(
    source: tuple[SqlCatalog, str], tmp_path: Path
) -> None:
    from icelake.migrate.check.validate import check_target_files

    # Given a correctly migrated table
    catalog, meta = source
    source_location = catalog.load_table("db.t").metadata.location
    result = migrate_table(meta, str(tmp_path / "dst" / "t"), src_io=IO, dst_io=IO)
    assert check_target_files(IO, result.target_metadata_location, [source_location]) == []

    # When a data file changes size and another disappears
    data = sorted((tmp_path / "dst" / "t").rglob("*.parquet"))
    data[0].write_bytes(data[0].read_bytes() + b"x")
    data[1].unlink()
    problems = check_target_files(IO, result.target_metadata_location, [source_location])

    # Then both are reported, and a target checked against itself as "source" is all flagged
    assert any("metadata says" in p and data[0].name in p for p in problems)
    assert any("missing" in p and data[1].name in p for p in problems)
    flagged = check_target_files(IO, result.target_metadata_location, [str(tmp_path / "dst" / "t")])
    assert any("under a source prefix" in p for p in flagged)


def test_the_glue_job_checks_the_target_files_next_to_the_copy(
    source: tuple[SqlCatalog, str], tmp_path: Path
) -> None:
    from glue_jobs import migrate_table as glue_job
    from icelake.migrate.copy.distributed import executor_spec

    # Given a migrated table
    _catalog, meta = source
    result = migrate_table(meta, str(tmp_path / "dst" / "t"), src_io=IO, dst_io=IO)
    dst = executor_spec(str(tmp_path / "dst" / "t"), None)
    # When the Glue job checks its files; Then every one was checked and none is wrong
    checked = glue_job.files_check(result, meta, dst)
    assert checked.error is None and checked.problems == [] and checked.files >= result.files_planned - 1
    # When a data file then loses a byte; Then the check names it (Validate fails the table with it)
    data = sorted((tmp_path / "dst" / "t").rglob("*.parquet"))[0]
    data.write_bytes(data.read_bytes()[:-1])
    (problem,) = glue_job.files_check(result, meta, dst).problems
    assert data.name in problem and "metadata says" in problem
    # When the target metadata cannot be read; Then the check's own failure is reported, not raised
    Path(result.target_metadata_location.removeprefix("file://")).unlink()
    failed = glue_job.files_check(result, meta, dst)
    assert failed.error is not None and failed.error.startswith(("FileNotFoundError", "OSError"))


def test_target_file_check_reads_what_a_full_decode_reads(source: tuple[SqlCatalog, str]) -> None:
    from icelake.migrate import metadata_json as mj
    from icelake.migrate.avro.files import manifest_entries, manifest_refs
    from icelake.migrate.check.reachable import referenced_files

    # Given a table whose deleted manifest entries name files no live entry names (an overwrite
    # replaced its files, and the snapshots before it expired)
    catalog, _meta = source
    before = len(catalog.load_table("db.t").snapshots())
    catalog.load_table("db.t").overwrite(_rows([7, 8]))  # pyiceberg: a delete, then an append
    table = catalog.load_table("db.t")
    table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in table.snapshots()[:before]]).commit()
    location = catalog.load_table("db.t").metadata_location
    meta, _gz = mj.parse_metadata(location, IO.read(location))
    # When the target check lists what the metadata reaches; Then it is what decoding every
    # manifest entry with fastavro finds: every list and manifest, and every file not deleted
    expected = set()
    deleted = set()
    for manifest_list in mj.manifest_lists(meta):
        expected.add((manifest_list, None, "manifest list"))
        for ref in manifest_refs(manifest_list, IO.read(manifest_list)):
            expected.add((ref.path, ref.length, "manifest"))
            for entry in manifest_entries(ref.path, IO.read(ref.path)):
                df = entry["data_file"]
                found = (df["file_path"], df["file_size_in_bytes"], "data file")
                (deleted if entry["status"] == 2 else expected).add(found)
    assert deleted - expected  # files only deleted entries name: the status check leaves them out
    for every_entry, wanted in ((False, expected), (True, expected | deleted)):  # True: what a prune keeps
        reached = referenced_files(IO, meta, every_entry=every_entry)
        assert {f for f in reached if f[2] != "logged metadata file"} == wanted, every_entry


def test_a_manifest_with_a_damaged_magic_is_refused_not_repaired(
    source: tuple[SqlCatalog, str], tmp_path: Path
) -> None:
    catalog, meta = source
    snapshot = catalog.load_table("db.t").current_snapshot()
    assert snapshot is not None
    manifest = snapshot.manifests(catalog.load_table("db.t").io)[0].manifest_path.removeprefix("file://")
    data = Path(manifest).read_bytes()
    Path(manifest).write_bytes(b"Obj\x02" + data[4:])
    with pytest.raises(UnsupportedFileError, match="is not an Avro file"):
        migrate_table(meta, str(tmp_path / "dst"), src_io=IO, dst_io=IO)
    assert not (tmp_path / "dst").exists()
