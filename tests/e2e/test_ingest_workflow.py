"""The ingestion workflow on the real ASL file, run by moto's Step Functions interpreter with the
repo's fetch/complete Lambdas and the SCD2 Glue script on the local SparkSession, against a real
HTTP API on 127.0.0.1 whose data changes from run to run."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest

from icelake.ingest import scd2
from icelake.ingest.deploy import IngestDeployment, deploy_ingest_workflow
from icelake.ingest.landing import COMPLETE, PENDING
from icelake.ingest.local_api import ApiServer, GeneratedSource, serve_pages
from icelake.ingest.local_run import (
    API_SECRET,
    IngestRunSummary,
    batch_as_of,
    batch_id_of,
    demo_fetch_config,
    demo_spec,
    run_ingest,
    summarise,
)
from icelake.ingest.models import FetchConfig, Scd2Spec
from icelake.ingest.resources import FETCH_FUNCTION
from icelake.ingest.scd2 import merge as merge_module
from icelake.local.embedded import start_embedded_aws
from tests.ingest.reference import RefBatch, reference_history

pytestmark = [pytest.mark.slow, pytest.mark.spark]
REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cr3t"
COLUMNS = ["id", "name", "email", "tier", "updated_at"]
_n = itertools.count()


@dataclass
class World:
    deployment: IngestDeployment
    source: GeneratedSource
    api: ApiServer
    fetch: FetchConfig
    spec: Scd2Spec
    spark: Any
    served: dict[str, list[dict[str, Any]]]  # batch id -> the records the API served for it

    def run(self, number: int) -> IngestRunSummary:
        result = run_ingest(
            self.deployment.state_machine_arn, self.fetch, self.spec, name=f"run-{number}", timeout=600
        )
        assert result.status == "SUCCEEDED", result.failure()
        return summarise(self.spark, self.spec.table, number, result)

    def record_served(self) -> None:
        """A batch landed since the last call was served what the source holds now."""
        for uri in sorted(raw_markers(self)):
            self.served.setdefault(batch_id_of(uri), self.source.records())

    def history(self) -> list[dict[str, Any]]:
        rows = self.spark.sql(f"SELECT * FROM {self.spec.table} ORDER BY id, _valid_from").collect()
        return [r.asDict() for r in rows]


@pytest.fixture
def world(spark: Any, tmp_path: Path) -> Iterator[World]:
    catalog = f"e2e_ingest_{next(_n)}"
    source = GeneratedSource(initial=30, seed=11, change_rate=0.2)
    with (
        ApiServer(serve_pages(source.records, token=TOKEN)) as api,
        start_embedded_aws(REPO),
    ):
        deployment = deploy_ingest_workflow(
            local_warehouse=str(tmp_path / "warehouse"),
            secrets={API_SECRET: json.dumps({"token": TOKEN})},
        )
        yield World(
            deployment=deployment,
            source=source,
            api=api,
            fetch=demo_fetch_config(api.url + "/customers", page_size=7),
            spec=demo_spec(f"{catalog}.crm.customers"),
            spark=spark,
            served={},
        )


def raw_markers(world: World) -> dict[str, set[str]]:
    """batch directory -> marker names in the raw bucket."""
    s3 = boto3.client("s3")
    found: dict[str, set[str]] = defaultdict(set)
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=world.deployment.raw_bucket):
        for obj in page.get("Contents", []):
            directory, _, name = obj["Key"].rpartition("/")
            found[directory].add(name) if name in (PENDING, COMPLETE) else found[directory]
    return dict(found)


def expected_history(world: World, batch_ids: list[str]) -> list[dict[str, Any]]:
    times = batch_as_of(world.spark, world.spec.table, batch_ids)
    assert len(times) == len(batch_ids), "every merged batch is recorded in a snapshot summary"
    batches = [
        RefBatch(b, t, datetime.now(UTC), (("p", tuple(world.served[b])),), True)
        for b, t in zip(batch_ids, times, strict=True)
    ]
    return reference_history(batches, key="id", columns=COLUMNS, order_by="updated_at", tracked=COLUMNS[1:])


def project(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    cols = [*COLUMNS, "_is_current", "_is_deleted", "_valid_from", "_valid_to"]

    def norm(v: Any) -> Any:
        return v.replace(tzinfo=None) if isinstance(v, datetime) and v.tzinfo is not None else v

    return sorted((tuple(norm(r[c]) for c in cols) for r in rows), key=repr)


def assert_scd2_invariants(rows: list[dict[str, Any]]) -> None:
    by_key: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_key[row["id"]].append(row)
    for key, versions in by_key.items():
        versions.sort(key=lambda r: r["_valid_from"])
        assert sum(r["_is_current"] for r in versions) <= 1, f"key {key}: more than one current row"
        for older, newer in itertools.pairwise(versions):
            assert older["_valid_to"] is not None and older["_valid_to"] <= newer["_valid_from"], (
                f"key {key}: overlapping validity {older} / {newer}"
            )
        for version in versions:
            assert (version["_valid_to"] is None) == bool(version["_is_current"]), version
            if version["_valid_to"] is not None:
                assert version["_valid_from"] < version["_valid_to"]


def test_runs_build_the_scd2_history_and_a_rerun_adds_nothing(world: World) -> None:
    merged: list[str] = []

    def remember() -> None:
        merged.extend(b for b in pending_ids(world) if b not in merged)
        assert_scd2_invariants(world.history())
        assert project(world.history()) == project(expected_history(world, merged))

    def pending_ids(w: World) -> list[str]:
        return sorted(b for b in w.served if b not in merged)

    # Run 1: the initial load
    first = world.run(1)
    world.record_served()
    assert (first.records_fetched, first.batches_merged) == (30, 1)
    assert (first.inserted, first.closed, first.deleted, first.current_rows) == (30, 0, 0, 30)
    remember()

    # Run 2: inserts, changes (NULL -> value, value -> NULL, other columns), deletes, a stale duplicate
    changes = world.source.advance()
    second = world.run(2)
    world.record_served()
    assert second.records_fetched == 30 + len(changes.inserted) - len(changes.deleted) + 1
    assert second.inserted == len(changes.inserted) + len(changes.changed)
    assert (second.closed, second.deleted) == (len(changes.changed), len(changes.deleted))
    assert second.current_rows == len(world.source.current)
    remember()
    rows = world.history()
    for key in changes.null_transitions:
        emails = [r["email"] for r in rows if r["id"] == key]
        assert len(emails) == 2 and (emails[0] is None) != (emails[1] is None), (key, emails)
    assert all(r["_is_deleted"] and not r["_is_current"] for r in rows if r["id"] in changes.deleted)
    assert not any(r["tier"] == "stale" for r in rows), "the stale duplicate lost to the newer record"

    # A run dies after its fetch (its batch stays .pending); the source changes again; run 3
    # merges both batches, oldest first, and marks both complete.
    world.source.advance()
    died = boto3.client("lambda").invoke(
        FunctionName=FETCH_FUNCTION, Payload=json.dumps({"fetch": world.fetch.model_dump(mode="json")})
    )
    assert "FunctionError" not in died, died["Payload"].read()
    world.record_served()
    assert any(names == {PENDING} for names in raw_markers(world).values())
    world.source.advance()
    third = world.run(3)
    world.record_served()
    assert third.batches_merged == 2
    remember()

    # Every landed batch is complete, none pending
    markers = raw_markers(world)
    assert len(markers) == 4 and all(names == {COMPLETE} for names in markers.values()), markers

    # Run 4 re-delivers the same data: a new batch, no new versions
    world.source.advance(quiet=True)
    before = world.history()
    fourth = world.run(4)
    world.record_served()
    assert (fourth.batches_merged, fourth.inserted, fourth.closed, fourth.deleted) == (1, 0, 0, 0)
    assert project(world.history()) == project(before)
    assert all(names == {COMPLETE} for names in raw_markers(world).values())
    assert {r.headers.get("authorization") for r in world.api.requests} == {f"Bearer {TOKEN}"}


def test_a_merge_that_dies_after_its_commit_is_retried_by_the_workflow_and_adds_nothing_twice(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Glue run commits batch 2, then dies before it can report success (a lost executor, a
    timeout). The state machine's Retry starts the job again on the same pending batches: it finds
    batch 2 in the snapshot summaries, skips it, and the run ends SUCCEEDED with the history a
    single merge gives."""
    world.run(1)
    world.record_served()
    world.source.advance()

    real_commit = merge_module.with_commit_properties
    crashes: list[str] = []

    def commit_then_die(spark: Any, properties: dict[str, str], action: Any) -> Any:
        result = real_commit(spark, properties, action)
        if not crashes:
            crashes.append(properties[scd2.BATCH_ID_PROPERTY])
            raise RuntimeError("simulated Glue worker loss after the Iceberg commit")
        return result

    monkeypatch.setattr(merge_module, "with_commit_properties", commit_then_die)
    result = run_ingest(
        world.deployment.state_machine_arn, world.fetch, world.spec, name="crash", timeout=600
    )
    assert result.status == "SUCCEEDED", result.failure()
    world.record_served()

    scheduled = [e for e in result.events if e["type"] == "TaskScheduled"]
    merge_runs = [
        e["id"] for e in scheduled if '"--mode": "merge"' in e["taskScheduledEventDetails"]["parameters"]
    ]
    failures = [e for e in result.events if e["type"] == "TaskFailed"]
    assert len(merge_runs) == 2, "the workflow retried the merge job once"
    assert [e["taskFailedEventDetails"]["resourceType"] for e in failures] == ["glue"]
    assert "simulated Glue worker loss" in failures[0]["taskFailedEventDetails"]["cause"]
    assert merge_runs[0] < failures[0]["id"] < merge_runs[1]
    batch_ids = sorted(world.served)
    assert crashes == [batch_ids[1]], "the crash came after batch 2's commit"
    per_batch = world.spark.sql(
        f"SELECT summary['{scd2.BATCH_ID_PROPERTY}'] AS b, count(1) AS n FROM {world.spec.table}.snapshots "
        f"WHERE summary['{scd2.BATCH_ID_PROPERTY}'] IS NOT NULL GROUP BY 1"
    ).collect()
    assert {r["b"]: r["n"] for r in per_batch} == dict.fromkeys(batch_ids, 1), "one commit per batch"
    assert_scd2_invariants(world.history())
    assert project(world.history()) == project(expected_history(world, batch_ids))
    assert all(names == {COMPLETE} for names in raw_markers(world).values())
