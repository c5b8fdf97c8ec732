"""A long history's metadata.json files are rewritten in worker processes, in order, with the
bytes the in-process rewrite gives; a file a worker cannot rewrite is redone in the caller,
which raises what is wrong with it as icelake explains it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws.fileio import LocalFileIO
from icelake.errors import NotAMetadataFileError, UnsupportedFileError
from icelake.migrate import metadata_json as mj
from icelake.migrate import migrate_table
from icelake.migrate.avro.files import manifest_refs
from icelake.migrate.avro.patch import ListHeads
from icelake.migrate.copy.cpu_pool import MIN_MANIFESTS_FOR_PROCESSES, cpu_pool, rewrite_manifest_lists
from icelake.migrate.copy.engine import rewritten_metadata_files
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.plan.reads import read_metadata
from icelake.migrate.progress import NoProgress
from icelake.migrate.settings import EngineSettings
from icelake.uris import PrefixMap, local_path
from tests.verify import assert_same_table

IO = LocalFileIO()
COMMITS = MIN_MANIFESTS_FOR_PROCESSES + 2  # enough logged metadata files for worker processes


def _long_history(root: Path) -> str:
    catalog = SqlCatalog("c", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    catalog.create_namespace("db")
    rows = pa.table({"id": pa.array([0], pa.int64())})
    table = catalog.create_table("db.t", schema=rows.schema)
    for i in range(COMMITS):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    return catalog.load_table("db.t").metadata_location


@pytest.fixture(scope="module")
def long_history(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _long_history(tmp_path_factory.mktemp("history"))


def _logged(current: str) -> list[str]:
    return mj.metadata_log(read_metadata(IO, current)[0])


def test_processes_give_the_in_process_bytes_in_order(long_history: str, tmp_path: Path) -> None:
    # Given the logged metadata files of a long history
    logged = _logged(long_history)
    assert len(logged) >= MIN_MANIFESTS_FOR_PROCESSES
    meta = read_metadata(IO, long_history)[0]
    prefix_map = PrefixMap([(meta["location"], str(tmp_path / "target"))])
    kept = frozenset([*logged, long_history])
    # When they are rewritten in worker processes and in this process
    with cpu_pool(2) as cpu:
        assert cpu is not None
        in_workers = list(rewritten_metadata_files(logged, IO, prefix_map, kept, cpu))
    here = list(rewritten_metadata_files(logged, IO, prefix_map, kept, None))
    # Then the same bytes come back in the log's order, every path mapped
    assert in_workers == here
    assert [uri for uri, _ in in_workers] == logged
    for uri, data in in_workers:
        rewritten = mj.parse_metadata(uri, data)[0]
        assert rewritten["location"] == prefix_map.require(meta["location"])
        assert all(p.startswith(f"file://{tmp_path}/target/") for p in mj.manifest_lists(rewritten))


def test_a_file_a_worker_cannot_rewrite_is_explained_by_the_caller(long_history: str, tmp_path: Path) -> None:
    # Given a log in which one file is damaged after planning (here: a copy of the log with one
    # file replaced by bytes that are not JSON)
    logged = _logged(long_history)
    damaged = tmp_path / "v0-damaged.metadata.json"
    damaged.write_bytes(b"{not json")
    uris = [*logged[:5], str(damaged), *logged[5:]]
    meta = read_metadata(IO, long_history)[0]
    prefix_map = PrefixMap(
        [(meta["location"], str(tmp_path / "target")), (str(tmp_path), str(tmp_path / "t2"))]
    )
    # When the files are rewritten in worker processes; Then the caller names the file and why
    with (
        cpu_pool(2) as cpu,
        pytest.raises(NotAMetadataFileError, match=r"v0-damaged\.metadata\.json.*not JSON"),
    ):
        list(rewritten_metadata_files(uris, IO, prefix_map, frozenset(uris), cpu))


@pytest.mark.slow
def test_a_long_history_migrates_with_processes_and_reads_like_the_source(
    long_history: str, tmp_path: Path
) -> None:
    # When the whole table is migrated with worker processes
    result = migrate_table(
        long_history,
        str(tmp_path / "target"),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(processes=2),
    )
    # Then every metadata file is there and every snapshot reads like the source's
    assert result.metadata_files == COMMITS + 1  # the table's creation, then one per append
    assert_same_table(long_history, result.target_metadata_location)


def _plan(metadata: str, target: Path, processes: int) -> TablePlan:
    return build_plan(
        metadata,
        str(target),
        [],
        IO,
        IO,
        settings=EngineSettings(overwrite=False, workers=4, progress=NoProgress(), processes=processes),
    )


def test_a_long_log_is_planned_in_processes_as_in_this_process(long_history: str, tmp_path: Path) -> None:
    in_workers, here = _plan(long_history, tmp_path / "a", 2), _plan(long_history, tmp_path / "a", 1)
    assert in_workers.metadata_files == here.metadata_files and len(here.metadata_files) == COMMITS + 1
    assert in_workers.prefix_counts == here.prefix_counts
    assert in_workers.files_planned == here.files_planned


def test_a_damaged_logged_file_is_named_when_planned_in_processes(long_history: str, tmp_path: Path) -> None:
    # Given a copy of the table in which one logged metadata.json is damaged
    source = Path(local_path(long_history)).parents[1]
    copy = tmp_path / "copy"
    shutil.copytree(source, copy)
    current = read_metadata(IO, long_history)[0]
    relocated = copy / "metadata" / Path(local_path(long_history)).name
    damaged = Path(local_path(_logged(long_history)[3])).name
    (copy / "metadata" / damaged).write_bytes(b"{not json")
    meta = json.loads(relocated.read_text().replace(current["location"], f"file://{copy}"))
    relocated.write_text(json.dumps(meta))
    # When it is planned with worker processes; Then the damaged file is named, and why
    with pytest.raises(NotAMetadataFileError, match=rf"{re.escape(damaged)}.*not JSON"):
        _plan(f"file://{relocated}", tmp_path / "target", 2)


def test_a_damaged_manifest_is_named_when_parsed_in_processes(tmp_path: Path) -> None:
    # Given a table of at least 16 manifests, one of them damaged
    (tmp_path / "source").mkdir()
    metadata = _long_history(tmp_path / "source")
    plan = _plan(metadata, tmp_path / "probe", 1)
    assert len(plan.manifests) >= MIN_MANIFESTS_FOR_PROCESSES
    damaged = sorted(plan.manifests)[2]
    Path(local_path(damaged)).write_bytes(b"Obj\x01 not a manifest")
    # When it is planned with worker processes; Then the error names that manifest
    with pytest.raises(UnsupportedFileError, match=re.escape(damaged)):
        _plan(metadata, tmp_path / "target", 2)


def _lists_and_heads(metadata: str, target: Path) -> tuple[list[tuple[str, bytes]], PrefixMap, ListHeads]:
    plan = _plan(metadata, target, 1)
    lengths = {path: ref.length + 7 for path, ref in plan.manifests.items()}  # as if rewritten longer
    lists = [(uri, IO.read(uri)) for uri in plan.manifest_lists]
    return lists, plan.prefix_map, ListHeads(plan.prefix_map.require, lengths)


def test_manifest_lists_rewritten_in_a_worker_give_the_in_process_bytes(
    long_history: str, tmp_path: Path
) -> None:
    # Given a long history's manifest lists, each naming every manifest of its snapshot
    lists, prefix_map, heads = _lists_and_heads(long_history, tmp_path / "target")
    assert len(lists) >= MIN_MANIFESTS_FOR_PROCESSES
    # When they are rewritten as jobs of a worker process and in this process
    with cpu_pool(2) as cpu:
        assert cpu is not None
        in_workers = [
            data
            for i in range(0, len(lists), 5)
            for data in rewrite_manifest_lists(lists[i : i + 5], prefix_map, heads, cpu)
        ]
    here = rewrite_manifest_lists(lists, prefix_map, heads, None)
    # Then the bytes are the same, list by list, and name the mapped manifests with their new lengths
    assert in_workers == here
    for (uri, raw), data in zip(lists, in_workers, strict=True):
        before, after = manifest_refs(uri, raw), manifest_refs(uri, data)
        assert before and [(r.path, r.length) for r in after] == [
            (prefix_map.require(r.path), r.length + 7) for r in before
        ]


def test_a_manifest_list_a_worker_cannot_rewrite_is_explained_by_the_caller(
    long_history: str, tmp_path: Path
) -> None:
    # Given a batch of lists in which one is truncated after planning
    lists, prefix_map, heads = _lists_and_heads(long_history, tmp_path / "target")
    uri, data = lists[3]
    lists[3] = (uri, data[:-40])
    # When the batch is rewritten in a worker process, and in this one
    errors = []
    for processes in (2, 1):
        with cpu_pool(processes) as cpu, pytest.raises(Exception) as raised:
            rewrite_manifest_lists(lists[:8], prefix_map, heads, cpu)
        errors.append((type(raised.value), str(raised.value)))
    # Then the caller raises the error this process gives, naming the list
    assert errors[0] == errors[1]
    assert Path(local_path(uri)).name in errors[0][1]


def test_a_worker_reads_local_files_itself_and_an_absent_one_is_explained_by_the_caller(
    long_history: str, tmp_path: Path
) -> None:
    logged = _logged(long_history)
    with cpu_pool(2) as cpu:
        assert cpu is not None
        # A local file is read in the worker: the job gets the file's own bytes
        assert IO.parse_in(cpu, logged[0], mj.referenced_paths_job) == mj.referenced_paths_job(
            logged[0], IO.read(logged[0])
        )
        # one the worker cannot read comes back as None, for the caller to read and explain
        gone = str(tmp_path / "v9-gone.metadata.json")
        assert IO.parse_in(cpu, gone, mj.referenced_paths_job) is None
        meta = read_metadata(IO, long_history)[0]
        prefix_map = PrefixMap(
            [(meta["location"], str(tmp_path / "target")), (str(tmp_path), str(tmp_path / "t2"))]
        )
        with pytest.raises(NotAMetadataFileError, match=r"v9-gone\.metadata\.json.*does not exist"):
            list(rewritten_metadata_files([*logged[:3], gone], IO, prefix_map, frozenset(logged), cpu))
