"""The history a target keeps, through the whole workflow S3 to S3 across accounts: a table whose
writer (pyiceberg) expired snapshots without deleting their files is migrated with the default
history (the orphans reported in the outcome, not copied), then with `options.history: all` (copied,
and Validate checks that no logged version dangles where its source's does not)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws.fileio import io_for
from icelake.local.deploy import LocalDeployment
from tests.e2e.conftest import run_workflow
from tests.lake import Lake, s3_props
from tests.spark import corpus
from tests.verify import assert_same_table, read_metadata_json

pytestmark = pytest.mark.slow


def test_orphans_are_reported_and_history_all_copies_them(
    world: tuple[Lake, LocalDeployment], tmp_path: Path
) -> None:
    lake, deployment = world
    # Given a source table whose older logged versions reach files the current one does not
    (tmp_path / "expired").mkdir()
    local = SqlCatalog("x", uri=f"sqlite:///{tmp_path}/x.db", warehouse=f"file://{tmp_path}/expired")
    local.create_namespace("db")
    source = lake.publish("sales", "expired", corpus.expired_without_deletion(local).metadata)

    # When the workflow migrates it with the default history
    live = run_workflow(deployment, lake.request("history-live"))["tables"][0]

    # Then it is migrated, and the outcome counts the orphans and says what to do about them
    assert live["status"] == "migrated", live
    orphans = live["orphans"]
    assert orphans["files"] > orphans["manifest_lists"] > 0 and orphans["bytes"] > 0
    assert "not copied (history: live)" in live["history_note"]
    assert "remove_orphan_files" in live["history_note"]

    # When it runs again with history all
    request = lake.request("history-all")
    request["options"] = {**request["options"], "history": "all"}
    full = run_workflow(deployment, request)["tables"][0]

    # Then the orphans are copied (the data files among them too), Validate passed the all rule,
    # and every logged version of the target reads like its source counterpart
    assert full["status"] == "migrated", full
    assert full["orphans"] == orphans and "copied (history: all)" in full["history_note"]
    assert full["files_copied"] > 0 and full["files_copied"] + full["files_rewritten"] >= orphans["files"]
    target = full["target_metadata_location"]
    sources = [e["metadata-file"] for e in _log(source)] + [source]
    targets = [e["metadata-file"] for e in _log(target)] + [target]
    assert len(targets) == len(sources)
    compared = 0
    for s, t in zip(sources, targets, strict=True):
        if read_metadata_json(io_for(s), s).get("snapshots"):
            assert_same_table(s, t, source_props=s3_props(), target_props=s3_props())
            compared += 1
    assert compared >= 3


def _log(metadata: str) -> list[dict[str, str]]:
    return list(read_metadata_json(io_for(metadata), metadata).get("metadata-log", []))
