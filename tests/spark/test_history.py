"""The history a target keeps (icelake/migrate/history.py), on a table whose writer expired
snapshots without deleting their files (pyiceberg): `live` copies what the current metadata
reaches and reports the rest, `all` copies every file a logged version reaches, and a later
incremental sync with prune keeps every logged version whole."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from typer.testing import CliRunner

from icelake.aws.fileio import LocalFileIO
from icelake.cli import app
from icelake.migrate import migrate_table
from icelake.migrate.check.reachable import reachable_files
from icelake.migrate.history import dangling_versions, reached_by_history, to_source_map
from icelake.migrate.journal import write_journal
from icelake.migrate.prune import prune_target
from icelake.migrate.settings import EngineSettings
from icelake.uris import canonical, local_path
from tests.spark import corpus
from tests.spark.corpus import SourceTable
from tests.verify import assert_same_table, read_metadata_json

pytestmark = [pytest.mark.spark, pytest.mark.slow]
IO = LocalFileIO()


def _reached(metadata: str) -> set[str]:
    """Local paths of every file one version reaches (any entry), read with fastavro: the
    reference, independent of icelake's readers."""
    meta = read_metadata_json(IO, metadata)
    out = {
        local_path(s["statistics-path"])
        for k in ("statistics", "partition-statistics")
        for s in meta.get(k, [])
    }
    for snapshot in meta.get("snapshots", []):
        listed = local_path(snapshot["manifest-list"])
        out.add(listed)
        if not os.path.exists(listed):
            continue
        for manifest in fastavro.reader(io.BytesIO(IO.read(listed))):
            path = local_path(manifest["manifest_path"])
            out.add(path)
            if os.path.exists(path):
                out.update(
                    local_path(e["data_file"]["file_path"])
                    for e in fastavro.reader(io.BytesIO(IO.read(path)))
                )
    return out


def _orphans_at_source(metadata: str) -> tuple[int, int, int]:
    """(files, bytes, manifest lists) reached only from the older logged versions, present."""
    current = _reached(metadata)
    log = [e["metadata-file"] for e in read_metadata_json(IO, metadata).get("metadata-log", [])]
    older = set().union(*(_reached(v) for v in log)) - current
    present = [p for p in older if os.path.exists(p)]
    lists = [p for p in present if os.path.basename(p).startswith("snap-")]
    return len(present), sum(os.path.getsize(p) for p in present), len(lists)


def _versions(metadata: str) -> list[str]:
    """Every version a metadata file logs, oldest first, then itself."""
    return [*(e["metadata-file"] for e in read_metadata_json(IO, metadata).get("metadata-log", [])), metadata]


def assert_every_version_reads_alike(source: str, target: str, spark: Any) -> int:
    """Each logged version of the target reads like its source counterpart in pyiceberg and Spark;
    returns the versions with snapshots compared."""
    sources, targets = _versions(source), _versions(target)
    assert [os.path.basename(local_path(t)) for t in targets] == [
        os.path.basename(local_path(s)) for s in sources
    ]
    compared = 0
    for s, t in zip(sources, targets, strict=True):
        if read_metadata_json(IO, s).get("snapshots"):
            assert_same_table(s, t, spark=spark)
            compared += 1
    return compared


def test_live_copies_what_the_current_metadata_reaches_and_reports_the_orphans(
    source_tables: dict[str, SourceTable], tmp_path: Path
) -> None:
    # Given a table whose older logged versions reach files the current one does not
    table = source_tables["py_expired"]
    files, size, lists = _orphans_at_source(table.metadata)
    assert files > lists > 0

    # When it is planned (dry run) from the command line, and migrated with the default history
    cli = CliRunner().invoke(
        app,
        [
            "migrate",
            "path",
            "--metadata",
            table.metadata,
            "--target-location",
            str(tmp_path / "dry"),
            "--dry-run",
            "--json",
        ],
    )
    result = migrate_table(table.metadata, str(tmp_path / "t"), src_io=IO, dst_io=IO)

    # Then both report the orphans the source holds, as counted here, and say what to do
    assert cli.exit_code == 0, cli.stderr
    planned = json.loads(cli.stdout)
    assert planned["history"] == "live" and planned["orphans"] == {
        "files": files,
        "bytes": size,
        "manifest_lists": lists,
    }
    assert "remove_orphan_files" in cli.stderr and "--history all" in cli.stderr
    assert not (tmp_path / "dry").exists()
    assert (result.orphans.files, result.orphans.bytes, result.history) == (files, size, "live")
    # and none of them was copied: the older versions dangle on the target, and the `all` rule
    # (what Validate checks under history all) says where
    target_files = {canonical(u) for u, _ in IO.list(str(tmp_path / "t"))}
    assert target_files == reachable_files(IO, result.target_metadata_location) & target_files
    to_source = to_source_map(result.prefix_mappings)
    dangling = dangling_versions(IO, IO, result.target_metadata_location, to_source)
    assert len(dangling) >= lists and all("manifest list" in d for d in dangling)


def test_all_keeps_every_logged_version_readable_and_a_pruned_sync_keeps_it(
    spark: Any, tmp_path: Path
) -> None:
    # Given a table written and expired without deletion by pyiceberg (the corpus's own recipe,
    # in a catalog of this test: it is changed below)
    (tmp_path / "src").mkdir()
    catalog = SqlCatalog("h", uri=f"sqlite:///{tmp_path}/h.db", warehouse=f"file://{tmp_path}/src")
    catalog.create_namespace("db")
    source = corpus.expired_without_deletion(catalog)  # the corpus recipe, in a catalog of its own
    target = tmp_path / "dst" / "t"
    files, size, _lists = _orphans_at_source(source.metadata)

    # When it is migrated with history all
    first = migrate_table(
        source.metadata,
        str(target),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(history="all"),
    )

    # Then every logged version reads on the target as its source counterpart does
    assert assert_every_version_reads_alike(source.metadata, first.target_metadata_location, spark) >= 3
    assert (first.orphans.files, first.orphans.bytes, first.history) == (files, size, "all")
    to_source = to_source_map(first.prefix_mappings)
    assert dangling_versions(IO, IO, first.target_metadata_location, to_source) == []
    # and a second run copies nothing
    again = migrate_table(
        source.metadata,
        str(target),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(history="all"),
    )
    assert (again.files_copied, again.files_rewritten) == (0, 0)

    # When the source commits, expires its previous snapshot without deleting it, and an
    # incremental sync with prune follows (each run's keys journaled as the workflow does)
    written = sorted({canonical(u) for u, _ in IO.list(str(target))})
    write_journal(IO, str(tmp_path / "run-1.json.gz"), written)
    table = catalog.load_table("db.py_expired")
    previous = table.current_snapshot()
    assert previous is not None
    table.append(pa.Table.from_pydict({"id": [13], "v": ["v13"]}, table.schema().as_arrow()))
    table.maintenance.expire_snapshots().by_id(previous.snapshot_id).commit()
    newest = catalog.load_table("db.py_expired").metadata_location
    second = migrate_table(
        newest,
        str(target),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(history="all"),
    )
    added = sorted({canonical(u) for u, _ in IO.list(str(target))} - set(written))
    write_journal(IO, str(tmp_path / "run-2.json.gz"), added)
    journals = [str(tmp_path / "run-1.json.gz"), str(tmp_path / "run-2.json.gz")]
    kept_by_history = reached_by_history(IO, second.target_metadata_location) - reachable_files(
        IO, second.target_metadata_location
    )
    deleted = prune_target(IO, IO, journals, str(target), second.target_metadata_location, keep_history=True)

    # Then the prune kept what the logged versions reach (a live prune would have taken it), and
    # every logged version, the new one too, still reads like the source's
    assert kept_by_history & set(written) and not kept_by_history & {canonical(k) for k in deleted}
    assert assert_every_version_reads_alike(newest, second.target_metadata_location, spark) >= 4
    assert dangling_versions(IO, IO, second.target_metadata_location, to_source) == []


def test_the_glue_job_keeps_history_all_and_checks_the_rule_next_to_the_copy(
    source_tables: dict[str, SourceTable], spark: Any, tmp_path: Path
) -> None:
    from glue_jobs import migrate_table as glue_job

    # Given the table expired without deletion, and what the engine makes of it under history all
    table = source_tables["py_expired"]
    engine = migrate_table(
        table.metadata,
        str(tmp_path / "engine"),
        src_io=IO,
        dst_io=IO,
        settings=EngineSettings(history="all"),
    )

    # When the Glue job migrates it with --history all on Spark executors
    argv = ["--source-metadata", table.metadata, "--target-location", str(tmp_path / "t"), "--run-id", "h1"]
    result = glue_job.main([*argv, "--history", "all"])

    # Then it copied the orphans the engine copies, its file check next to the copy walked the
    # logged versions and found none dangling, and every version reads like the source's
    assert (result.history, result.orphans) == ("all", engine.orphans)
    assert (result.files_copied, result.files_rewritten) == (engine.files_copied, engine.files_rewritten)
    checked = result.files_check
    assert checked is not None and checked.problems == [] and checked.error is None
    assert assert_every_version_reads_alike(table.metadata, result.target_metadata_location, spark) >= 3
    # and a history it does not know is refused before any work
    with pytest.raises(SystemExit, match="--history must be one of live, all"):
        glue_job.main([*argv, "--history", "everything"])
