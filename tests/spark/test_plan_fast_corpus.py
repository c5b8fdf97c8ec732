"""`build_plan` reading only the fields it needs gives exactly the plan of the fastavro path."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from icelake.aws.fileio import LocalFileIO
from icelake.errors import NotPatchable, TargetConflictError
from icelake.migrate import migrate_table
from icelake.migrate.avro_entries import read_entry_fields
from icelake.migrate.plan import FAST_READS, TablePlan, build_plan
from icelake.migrate.plan_scan import entry_fields, entry_fields_fastavro
from icelake.migrate.progress import NoProgress
from tests.reference_plan import REFERENCE_READS
from tests.spark.corpus import SourceTable

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
            overwrite=overwrite,
            workers=3,
            progress=NoProgress(),
            reads=FAST_READS if fast else REFERENCE_READS,
        )
    except Exception as exc:  # the same refusal, with the same message
        return f"{type(exc).__name__}: {exc}"


def _fields(plan: TablePlan | str) -> Any:
    if isinstance(plan, str):
        return plan
    out = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    out["prefix_map"] = [(m.source, m.target) for m in plan.prefix_map.mappings]
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
            table.metadata, str(done / table.name), _maps(table, done), src_io=IO, dst_io=IO, workers=3
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
        meta = json.loads(IO.read(table.metadata))
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
