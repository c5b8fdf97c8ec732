"""The fidelity corpora through the whole workflow into an S3 Tables table bucket (issue 61): every
table Iceberg's Java writer (Spark) and pyiceberg wrote, published to the source account, migrated
by the state machine into namespace `corpus` of a table bucket, and read back snapshot by snapshot
by pyiceberg and by Spark as the source reads. The tables with files outside their location
(data_elsewhere: write.data.path; py_layout: write.data.path, write.metadata.path and an added file
in a third directory) take no prefix_maps: those prefixes map under the table's own location by
themselves (icelake.migrate.plan.target.external_maps, with_found_prefixes), and the outcome says
where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.local.deploy import LocalDeployment
from icelake.migrate import migrate_table
from icelake.migrate.plan.reads import read_metadata
from tests.e2e.conftest import run_workflow, world
from tests.lake import TARGET_ACCOUNT, Lake, s3_props
from tests.spark.corpus import SourceTable
from tests.verify import assert_same_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]
__all__ = ["world"]  # the e2e fixture: the embedded AWS with the workflow deployed


def test_every_corpus_table_moves_into_a_table_bucket_as_its_writer_wrote_it(
    world: tuple[Lake, LocalDeployment], source_tables: dict[str, SourceTable], spark: Any, tmp_path: Path
) -> None:
    lake, deployment = world
    bucket_arn = lake.target.client("s3tables").create_table_bucket(name="corpus")["arn"]
    assert bucket_arn == f"arn:aws:s3tables:us-east-1:{TARGET_ACCOUNT}:bucket/corpus"
    tables = dict(source_tables)
    assert len(tables) >= 12  # 9 by Java, 4 by pyiceberg
    assert {"data_elsewhere", "py_layout"} <= set(tables)
    for name, table in tables.items():  # the extra prefixes beside the table in the source bucket
        maps = [(p, f"s3://source-lake/extra/{name}/{s}") for p, s in table.extra_prefixes.items()]
        lake.publish("corpus", name, table.metadata, maps=maps)

    request = lake.request("s3t-corpus", selection={"databases": ["corpus"]})
    target = request["target"]
    for field in ("bucket", "prefix", "kms_key_id"):
        target.pop(field)
    target.update(kind="s3tables", table_bucket_arn=bucket_arn)
    report = run_workflow(deployment, request)

    outcomes = {t["table"].split(".", 1)[1]: t for t in report["tables"]}
    assert set(outcomes) == set(tables)
    if failed := {name: o for name, o in outcomes.items() if o["status"] != "migrated"}:  # said whole
        pytest.fail(f"tables not migrated: {json.dumps(failed, indent=1, default=str)}")
    s3 = S3FileIO(lake.target.client("s3"))
    for name, table in tables.items():
        outcome = outcomes[name]
        assert outcome["status"] == "migrated", outcome
        meta = outcome["target_metadata_location"]
        assert "--table-s3/metadata/" in meta  # in the table's storage
        assert assert_same_table(table.metadata, meta, target_props=s3_props()) > 0, name
        # Every file the target references lies under its location: read back with no map but its
        # location's, nothing is left unmapped.
        back = migrate_table(meta, str(tmp_path / name), src_io=s3, dst_io=LocalFileIO())
        location = read_metadata(s3, meta)[0]["location"]
        assert [m.source for m in back.prefix_mappings] == [location.rstrip("/")], name
        assert_same_table(table.metadata, back.target_metadata_location, spark=spark)
        mapped = [w for w in outcome["warnings"] if "lies outside the source table's location" in w]
        # Each extra prefix is said, with where it went: under the location, never in its data/.
        assert len(mapped) == len(table.extra_prefixes), (name, outcome["warnings"])
        for suffix in table.extra_prefixes.values():
            said = next(w for w in mapped if f"s3://source-lake/extra/{name}/{suffix} " in w)
            where = said.rsplit(" ", 1)[1]
            external = f"{location}/external/s3/source-lake/extra/{name}/{suffix}"
            assert where == (f"{location}/metadata" if suffix == "py-metadata" else external), said
