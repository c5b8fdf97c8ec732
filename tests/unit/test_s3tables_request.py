"""An S3 Tables target in a request (issue 61): the example request parses whole; names a source
brings (which the request cannot check alone) are refused at Inventory with the rule they break;
an S3 Tables table's location waits for Plan (the service chooses it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icelake.errors import InvalidRequestError
from icelake.request.models import MigrationRequest, TargetSpec
from icelake.request.names import PENDING_SCHEME, TargetName
from icelake.request.s3tables import name_problem
from icelake.request.selection import parse_request

EXAMPLE = Path(__file__).parents[1] / "events" / "migrate_request_s3tables.json"


def _target(**fields: object) -> TargetSpec:
    return TargetSpec.model_validate(
        {
            "kind": "s3tables",
            "account_id": "222222222222",
            "table_bucket_arn": "arn:aws:s3tables:eu-west-1:222222222222:bucket/lake",
            **fields,
        }
    )


def test_the_example_request_parses_with_the_table_buckets_region() -> None:
    request = parse_request(json.loads(EXAMPLE.read_text()) | {"run_id": "example"})
    assert request.target.kind == "s3tables"
    assert request.target.region == "us-east-1"  # the table bucket's: no region given
    assert request.options.s3tables_maintenance is not None
    assert request.options.s3tables_maintenance.compaction.target_file_size_mb == 512
    assert request.options.s3tables_maintenance.snapshot_management is None  # from the source's retention
    # it travels between steps as JSON and comes back the same
    assert MigrationRequest.model_validate_json(request.model_dump_json()) == request


def test_an_s3tables_location_is_pending_until_plan_reads_the_warehouse_location() -> None:
    naming = _target(database_prefix="migrated_").naming
    assert naming.target_of("sales", "orders") == TargetName(
        "migrated_sales", "orders", f"{PENDING_SCHEME}://lake/migrated_sales/orders"
    )
    assert _target().region == "eu-west-1"


@pytest.mark.parametrize(
    ("database", "table", "says"),
    [
        ("sales-eu", "orders", "the namespace name 'sales-eu' breaks S3 Tables' rule: names are lower-case"),
        ("awsdata", "orders", "namespace names do not start with 'aws'"),
        ("sales", "orders_", "the table name 'orders_' breaks S3 Tables' rule: names begin and end"),
        ("sales", "x" * 256, "names are 1 to 255 characters (this one is 256)"),
    ],
)
def test_a_source_name_s3tables_refuses_is_refused_with_its_rule(
    database: str, table: str, says: str
) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        _target().naming.target_of(database, table)
    assert says in str(refused.value) and f"for {database}.{table}" in str(refused.value)


def test_names_within_the_rules_pass_and_glue_names_stay_glue_rules() -> None:
    assert name_problem("orders_2024", "table") is None
    assert name_problem("aws", "table") is None  # the 'aws' prefix is reserved for namespaces only
    # a Glue target keeps Glue's rules: '-' is a Glue name
    glue = TargetSpec.model_validate({"account_id": "222222222222", "bucket": "target-lake"})
    assert glue.naming.target_of("sales-eu", "orders").name == "sales-eu.orders"
