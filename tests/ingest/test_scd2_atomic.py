"""Evaluate, then change: a batch that is refused, quarantined or fails leaves the table exactly as
it was, schema included (the columns it brings are not added, the types it needs are not widened),
and a merged batch's schema change and its MERGE are one visible change."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from icelake.aws.fileio import LocalFileIO
from icelake.cli import app
from icelake.errors import OutOfOrderBatchError
from icelake.ingest.landing import complete_or_report, list_pending
from icelake.ingest.models import Scd2Spec
from icelake.ingest.scd2 import merge as merge_module
from icelake.ingest.scd2 import merge_pending
from tests.ingest.test_scd2_quarantine import land

pytestmark = pytest.mark.spark

_n = itertools.count()


def table_state(spark: Any, table: str) -> dict[str, Any]:
    """What a reader sees: the current schema (its id and fields, from the newest metadata file),
    the snapshots and the rows."""
    [newest] = spark.sql(
        f"SELECT file FROM {table}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
    ).collect()
    metadata = json.loads(Path(newest["file"].removeprefix("file:")).read_text())
    [schema] = [s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"]]
    return {
        "schema": schema,
        "columns": [(f.name, f.dataType.simpleString()) for f in spark.table(table).schema.fields],
        "snapshots": [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").collect()],
        "rows": sorted(map(tuple, spark.sql(f"SELECT * FROM {table}").collect()), key=repr),
    }


def test_an_out_of_order_batch_with_a_new_column_is_refused_and_adds_no_column(
    spark: Any, ingest_catalog: str, tmp_path: Path
) -> None:
    spec = Scd2Spec(table=f"{ingest_catalog}.atomic.people_{next(_n)}", keys=("id",))
    io = LocalFileIO()
    merge_pending(spark, spec, io, [land(tmp_path, 2, [{"id": 1, "age": 30}])])
    before = table_state(spark, spec.table)
    refetch = land(tmp_path, 1, [{"id": 1, "age": 29, "legacy_only": "x"}])  # an old window again
    with pytest.raises(OutOfOrderBatchError, match="not newer"):
        merge_pending(spark, spec, io, [refetch], quarantine=True)
    assert table_state(spark, spec.table) == before
    assert "legacy_only" not in spark.table(spec.table).columns


def test_a_quarantined_batch_adds_no_column_and_its_requeue_reports_it_added(
    spark: Any, ingest_catalog: str, tmp_path: Path
) -> None:
    """34.1 in a whole-number column quarantines the batch; its new `region` column must not be
    added before that, so the fixed batch, requeued, is the one that adds it and says so."""
    spec = Scd2Spec(table=f"{ingest_catalog}.atomic.people_{next(_n)}", keys=("id",))
    io = LocalFileIO()
    first = land(tmp_path, 1, [{"id": 1, "age": 30}])
    merge_pending(spark, spec, io, [first])
    complete_or_report([first.uri])
    before = table_state(spark, spec.table)
    bad = land(tmp_path, 2, [{"id": 1, "age": 34.1, "region": "eu"}])
    [quarantined] = merge_pending(spark, spec, io, [bad], quarantine=True)
    assert quarantined.quarantined_to is not None and "'age' is bigint" in (quarantined.reason or "")
    assert table_state(spark, spec.table) == before
    where = Path(quarantined.quarantined_to.removeprefix("file:"))
    (where / bad.manifest.pages[0]).write_text(json.dumps({"data": [{"id": 1, "age": 34, "region": "eu"}]}))
    result = CliRunner().invoke(
        app, ["ingest", "requeue", "crm", bad.manifest.run_id, "--root", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    [merged] = merge_pending(spark, spec, io, list_pending(io, str(tmp_path), "crm", "people"))
    assert merged.added_columns == ("region",) and merged.closed == 1
    current = spark.sql(f"SELECT id, age, region FROM {spec.table} WHERE _is_current").collect()
    assert [tuple(r) for r in current] == [(1, 34, "eu")]


@pytest.mark.parametrize("promote", [False, True], ids=["added-column", "added-and-widened"])
def test_a_merge_that_fails_after_its_schema_change_restores_the_schema(
    spark: Any, ingest_catalog: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, promote: bool
) -> None:
    """The MERGE fails (injected where it commits) after the batch's columns were added and, with
    promote_types, `n` widened from int to bigint: the schema before the batch is current again
    (the same schema id: Iceberg cannot narrow a type back, a restore can), no snapshot, same rows;
    the retry merges the batch and adds the column again."""
    spec = Scd2Spec(
        table=f"{ingest_catalog}.atomic.people_{next(_n)}",
        keys=("id",),
        types={"n": "int"},
        promote_types=promote,
    )
    io = LocalFileIO()
    merge_pending(spark, spec, io, [land(tmp_path, 1, [{"id": 1, "n": 1}])])
    before = table_state(spark, spec.table)
    wider = spec.model_copy(update={"types": {"n": "long"}}) if promote else spec
    batch = land(tmp_path, 2, [{"id": 1, "n": 3_000_000_000 if promote else 2, "region": "eu"}])
    real_commit = merge_module.with_commit_properties
    seen: list[list[str]] = []

    def fail_merge(spark: Any, properties: dict[str, str], action: Any) -> Any:
        seen.append([f"{f.name} {f.dataType.simpleString()}" for f in spark.table(spec.table).schema.fields])
        raise RuntimeError("injected: executor lost during the MERGE")

    monkeypatch.setattr(merge_module, "with_commit_properties", fail_merge)
    with pytest.raises(RuntimeError, match="injected"):
        merge_pending(spark, wider, io, [batch], quarantine=True)
    # the failure came after the schema change (so there was something to undo)
    assert "region string" in seen[0] and ("n bigint" in seen[0]) == promote
    assert table_state(spark, spec.table) == before
    monkeypatch.setattr(merge_module, "with_commit_properties", real_commit)
    [merged] = merge_pending(spark, wider, io, [batch])
    assert merged.added_columns == ("region",)
    assert merged.promoted_columns == (("n",) if promote else ())


def test_a_first_batch_whose_merge_fails_leaves_no_table(
    spark: Any, ingest_catalog: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = Scd2Spec(table=f"{ingest_catalog}.atomic.people_{next(_n)}", keys=("id",))
    io = LocalFileIO()
    batch = land(tmp_path, 1, [{"id": 1, "age": 30}])

    def fail_merge(spark: Any, properties: dict[str, str], action: Any) -> Any:
        raise RuntimeError("injected: executor lost during the MERGE")

    monkeypatch.setattr(merge_module, "with_commit_properties", fail_merge)
    with pytest.raises(RuntimeError, match="injected"):
        merge_pending(spark, spec, io, [batch])
    assert not spark.catalog.tableExists(spec.table)
