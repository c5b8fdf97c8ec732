"""`build_plan` reading only the fields it needs gives exactly the plan of the fastavro path."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import fastavro
import pytest
from pyiceberg.table import StaticTable

from icelake.aws.fileio import LocalFileIO
from icelake.errors import NotPatchable, TargetConflictError
from icelake.migrate import migrate_table
from icelake.migrate.avro.entries import read_entry_fields
from icelake.migrate.check.reachable import reachable_files
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.plan.reads import FAST_READS
from icelake.migrate.plan_scan import entry_fields, entry_fields_fastavro
from icelake.migrate.progress import NoProgress
from icelake.migrate.settings import EngineSettings
from icelake.uris import canonical
from tests.reference_plan import REFERENCE_READS
from tests.spark.corpus import SourceTable
from tests.verify import read_metadata_json

pytestmark = [pytest.mark.spark, pytest.mark.slow]
IO = LocalFileIO()


def _maps(table: SourceTable, target_root: Path) -> list[tuple[str, str]]:
    return [(src, str(target_root / suffix)) for src, suffix in table.extra_prefixes.items()]


def _plan(table: SourceTable, target_root: Path, *, fast: bool, overwrite: bool = False) -> TablePlan | str:
    try:
        return build_plan(
            table.metadata,
            str(target_root / table.name),
            _maps(table, target_root),
            IO,
            IO,
            settings=EngineSettings(
                overwrite=overwrite,
                workers=3,
                progress=NoProgress(),
                reads=FAST_READS if fast else REFERENCE_READS,
            ),
        )
    except Exception as exc:  # the same refusal, with the same message
        return f"{type(exc).__name__}: {exc}"


def _fields(plan: TablePlan | str) -> Any:
    if isinstance(plan, str):
        return plan
    out = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    out["prefix_map"] = [(m.source, m.target) for m in plan.prefix_map.mappings]
    # Where the fast reads found data manifests' paths (the reference reads record none): only
    # data manifests of the plan; the splices they make are checked byte for byte elsewhere
    # (test_avro_patch_corpus, test_avro_patch).
    assert set(out.pop("planned_manifests")) <= {p for p, ref in plan.manifests.items() if ref.content == 0}
    return out


def test_fast_plan_equals_fastavro_plan_on_every_corpus_table(
    source_tables: dict[str, SourceTable], tmp_path: Path
) -> None:
    for name, table in source_tables.items():
        # Given an empty target; When both paths plan the migration; Then the plans are equal
        empty = tmp_path / name / "empty"
        fast = _plan(table, empty, fast=True)
        assert isinstance(fast, TablePlan), fast
        assert _fields(fast) == _fields(_plan(table, empty, fast=False)), name
        assert fast.copies, name

        # Given a target holding a previous migration; Then both skip the same files
        done = tmp_path / name / "done"
        migrate_table(
            table.metadata,
            str(done / table.name),
            _maps(table, done),
            src_io=IO,
            dst_io=IO,
            settings=EngineSettings(workers=3),
        )
        again = _plan(table, done, fast=True)
        assert _fields(again) == _fields(_plan(table, done, fast=False)), name

        # Given a target whose copies differ; Then both refuse in the same words, or overwrite alike
        copies = [c.target for c in fast.copies]
        for target in copies[:3]:
            IO.write(target.replace(str(empty), str(done)), b"something else")
        refused = _plan(table, done, fast=True)
        assert refused == _plan(table, done, fast=False), name
        assert isinstance(refused, str) and refused.startswith(TargetConflictError.__name__), refused
        forced = [_fields(_plan(table, done, fast=f, overwrite=True)) for f in (True, False)]
        assert forced[0] == forced[1], name


def test_entry_fields_equal_fastavro_on_every_corpus_manifest(source_tables: dict[str, SourceTable]) -> None:
    read = fell_back = 0
    for table in source_tables.values():
        meta = read_metadata_json(IO, table.metadata)
        manifests = {
            m["manifest_path"]  # type: ignore[call-overload]
            for snap in meta["snapshots"]
            for m in fastavro.reader(io.BytesIO(IO.read(snap["manifest-list"])))
        }
        for uri in sorted(manifests):
            data = IO.read(uri)
            assert entry_fields(uri, data) == entry_fields_fastavro(uri, data), uri
            try:
                read_entry_fields(data, lambda _schema: True)
                read += 1
            except NotPatchable:
                fell_back += 1
    # And the corpus manifests, position deletes included, do go the fast way
    assert read > 10, (read, fell_back)


def _reached_by_pyiceberg(metadata: str) -> set[str]:
    """What a prune must keep, read by pyiceberg (another Avro reader): the metadata file, its log,
    statistics and partition statistics files, every snapshot's manifest list and manifests, and
    every entry's file (deleted entries and the data files delete entries refer to included)."""
    table = StaticTable.from_metadata(metadata)
    meta, pio = table.metadata, table.io
    found = {metadata, *(e.metadata_file for e in meta.metadata_log)}
    found.update(s.statistics_path for s in [*meta.statistics, *meta.partition_statistics])
    for snapshot in meta.snapshots:
        assert snapshot.manifest_list is not None
        found.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(pio):
            found.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(pio, discard_deleted=False):
                found.add(entry.data_file.file_path)
                if (referenced := getattr(entry.data_file, "referenced_data_file", None)) is not None:
                    found.add(referenced)
    return {canonical(p) for p in found}


def test_reachable_files_are_what_pyiceberg_reads_on_every_corpus_table(
    source_tables: dict[str, SourceTable],
) -> None:
    for name, table in source_tables.items():
        reached = reachable_files(IO, table.metadata)
        assert reached == _reached_by_pyiceberg(table.metadata), name
        assert reached == reachable_files(IO, table.metadata, entries=entry_fields_fastavro), name
