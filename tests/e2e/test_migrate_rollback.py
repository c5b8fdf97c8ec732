"""Rollback on a shared target: it deletes exactly the keys the failed table's run journaled, never
what a listing difference would name. Before, rollback deleted every object under the target
prefixes that was not there when the run began, including other tables' files under a shared
`prefix_maps` target."""

from __future__ import annotations

import hashlib
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icelake.aws import catalog
from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.local.deploy import LocalDeployment
from icelake.migrate import migrate_table
from icelake.workflow.steps import validating
from tests.e2e.conftest import run_workflow
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, bucket_state, catalog_state, s3_props
from tests.verify import assert_same_table

pytestmark = pytest.mark.slow
SHARED_SOURCE = f"s3://{SOURCE_BUCKET}/shared"
SHARED_TARGET = f"s3://{TARGET_BUCKET}/shared"
FOREIGN_KEY = "shared/other-team/part-00000.parquet"


def _add_table_with_shared_data(lake: Lake, name: str, ids: list[int]) -> str:
    """A pyiceberg table whose data files live under the shared prefix, outside its location."""
    root = lake.local_root / "shared-tables" / name
    root.mkdir(parents=True)
    cat = SqlCatalog(name, uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    cat.create_namespace("sales")
    schema = pa.schema([("id", pa.int64())])
    table = cat.create_table(f"sales.{name}", schema=schema)
    for i in ids:
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    local = cat.load_table(f"sales.{name}")
    location = f"s3://{SOURCE_BUCKET}/lake/sales/{name}"
    published = migrate_table(
        local.metadata_location,
        location,
        [(f"{local.location()}/data", f"{SHARED_SOURCE}/{name}")],
        src_io=LocalFileIO(),
        dst_io=S3FileIO(lake.source.client("s3")),
    )
    glue = lake.source.client("glue")
    catalog.ensure_database(glue, "sales")
    params = {"table_type": "ICEBERG", "metadata_location": published.target_metadata_location}
    glue.create_table(
        DatabaseName="sales",
        TableInput={"Name": name, "Parameters": params, "StorageDescriptor": {"Location": location}},
    )
    return published.target_metadata_location


def _objects(lake: Lake, prefix: str) -> dict[str, str]:
    s3 = lake.target.client("s3")
    return {
        k: hashlib.sha256(s3.get_object(Bucket=TARGET_BUCKET, Key=k)["Body"].read()).hexdigest()
        for k in bucket_state(lake.target, TARGET_BUCKET)
        if k.startswith(prefix)
    }


def test_a_failed_table_never_deletes_another_tables_files_under_a_shared_prefix(
    world: tuple[Lake, LocalDeployment], monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, deployment = world
    source_a = _add_table_with_shared_data(lake, "a", [1, 2, 3])
    source_b = _add_table_with_shared_data(lake, "b", [10, 20])
    source_before, source_catalog = bucket_state(lake.source, SOURCE_BUCKET), catalog_state(lake.source)
    real_check = validating.check_target_files

    def fails_for_a_after_its_copy(io: Any, target_metadata: str, prefixes: Any) -> list[str]:
        if "/sales/a/" not in target_metadata:
            return real_check(io, target_metadata, prefixes)
        # Meanwhile another team writes under the shared prefix (icelake never wrote this key).
        lake.target.client("s3").put_object(Bucket=TARGET_BUCKET, Key=FOREIGN_KEY, Body=b"theirs")
        return ["injected failure after the copy of sales.a"]

    monkeypatch.setattr(validating, "check_target_files", fails_for_a_after_its_copy)
    request = lake.request(
        "shared-1",
        target={
            **lake.request("x")["target"],
            "prefix_maps": [{"source": SHARED_SOURCE, "target": SHARED_TARGET}],
        },
    )
    report = run_workflow(deployment, request)

    outcomes = {t["table"]: t for t in report["tables"]}
    assert outcomes["sales.a"]["status"] == "rolled_back"
    error = outcomes["sales.a"]["error"]
    assert "injected failure" in error["message"] and error["step"] == "Validate"
    # the copy finished: the outcome says that validation, not the copy, failed
    assert error["hint"].startswith("validation failed, not the copy")
    assert outcomes["sales.b"]["status"] == "migrated"
    assert outcomes["sales.b"]["validation"] == "rows"  # the request's tier, fully done
    # Every object of b is still there, b still reads like its source, the foreign object stays
    b_objects = _objects(lake, "shared/b/")
    assert len(b_objects) == 2
    b_meta = catalog_state(lake.target)["sales.b"]["metadata_location"]
    assert assert_same_table(source_b, b_meta, source_props=s3_props(), target_props=s3_props()) == 2
    assert FOREIGN_KEY in bucket_state(lake.target, TARGET_BUCKET)
    # and nothing of a is left: its data under the shared prefix, its metadata, its catalog entry
    assert not _objects(lake, "shared/a/")
    assert not [k for k in bucket_state(lake.target, TARGET_BUCKET) if "/sales/a/" in k]
    assert "sales.a" not in catalog_state(lake.target)
    assert source_a  # the source was read, never written:
    assert bucket_state(lake.source, SOURCE_BUCKET) == source_before
    assert catalog_state(lake.source) == source_catalog
