"""Target names: templates, renames, the database_prefix shorthand, and where a target lives."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from icelake.errors import InvalidRequestError
from icelake.request.models import TargetSpec
from icelake.request.names import TargetName, check_targets


def _target(**fields: Any) -> TargetSpec:
    return TargetSpec.model_validate(
        {"account_id": "222222222222", "bucket": "target-lake", "prefix": "warehouse", **fields}
    )


def test_renames_win_over_templates_and_locations_follow_target_names() -> None:
    naming = _target(
        names={"database": "{database}_eu", "table": "{database}_{table}"},
        renames={"sales.orders": "archive.orders_2024"},
    ).naming
    assert naming.target_of("sales", "customers") == TargetName(
        "sales_eu", "sales_customers", "s3://target-lake/warehouse/sales_eu/sales_customers"
    )
    assert naming.target_of("sales", "orders") == TargetName(
        "archive", "orders_2024", "s3://target-lake/warehouse/archive/orders_2024"
    )
    assert naming.databases_of("sales") == {"sales_eu", "archive"}


def test_database_prefix_is_a_shorthand_for_the_database_template() -> None:
    assert _target(database_prefix="mig_").naming.target_of("sales", "orders").name == "mig_sales.orders"
    assert _target().naming.target_of("sales", "orders").name == "sales.orders"


def test_a_prefix_map_covering_the_table_location_says_where_the_target_lives() -> None:
    naming = _target(
        names={"database": "{database}_eu"},
        prefix_maps=[{"source": "s3://source-lake/lake/sales", "target": "s3://other/kept/sales"}],
    ).naming
    target = naming.target_of("sales", "orders", "s3://source-lake/lake/sales/orders/")
    assert target == TargetName("sales_eu", "orders", "s3://other/kept/sales/orders")
    elsewhere = naming.target_of("sales", "orders", "s3://source-lake/other/orders")
    assert elsewhere.location == "s3://target-lake/warehouse/sales_eu/orders"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"names": {"table": "{tabel}"}}, "only {database} and {table} are placeholders"),
        ({"names": {"table": "{table:>10}"}}, "only {database} and {table} are placeholders"),
        ({"names": {"table": "{table"}}, "malformed"),
        ({"names": {"database": "{table}_db"}}, "names.database"),
        ({"renames": {"sales.orders": "archive"}}, "must be 'database.table'"),
        ({"renames": {"Sales.Orders": "a.b"}}, "lower-case"),
        ({"database_prefix": "p_", "names": {"table": "{table}"}}, "not both"),
    ],
)
def test_bad_names_are_refused_with_what_to_write(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError, match=said.replace("{", r"\{").replace("}", r"\}")):
        _target(**fields)


def test_a_template_that_gives_no_glue_name_is_refused_naming_the_table() -> None:
    naming = _target(names={"table": "{table}.v2"}).naming
    with pytest.raises(InvalidRequestError, match=r"'orders\.v2' of sales\.orders is not a Glue name"):
        naming.target_of("sales", "orders")


def test_collisions_and_renames_of_unselected_tables_are_refused_naming_both() -> None:
    naming = _target(renames={"sales.orders": "sales.all", "sales.gone": "x.y"}).naming
    targets = {
        ("sales", "orders"): naming.target_of("sales", "orders"),
        ("sales", "all"): naming.target_of("sales", "all"),
    }
    with pytest.raises(InvalidRequestError) as info:
        check_targets(naming, targets)
    said = str(info.value)
    assert "sales.all and sales.orders would both go to target table sales.all" in said
    assert "target.renames names sales.gone, which the selection does not hold" in said


def test_two_names_on_one_location_are_refused() -> None:
    naming = _target(prefix_maps=[{"source": "s3://src/a", "target": "s3://dst/t"}]).naming
    targets = {
        ("a", "t1"): naming.target_of("a", "t1", "s3://src/a"),
        ("b", "t1"): naming.target_of("b", "t1", "s3://src/a/"),
    }
    with pytest.raises(
        InvalidRequestError, match=r"a\.t1 and b\.t1 would both go to target location s3://dst/t"
    ):
        check_targets(naming, targets)


def test_the_readmes_request_reference_examples_are_valid_requests() -> None:
    import json
    import re
    from pathlib import Path

    from icelake.request.models import MigrationRequest

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("#### Where each table goes", 1)[1].split("\n#### ", 1)[0].split("\n### ", 1)[0]
    examples = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]
    assert len(examples) == 6  # region, names, renames, prefix_maps, lake_formation, kind
    for example in examples:
        storage = {} if example["target"].get("kind") == "s3tables" else {"bucket": "target-lake"}
        target = {"account_id": "222222222222", **storage, **example["target"]}
        request = {"run_id": "r", "source": {"account_id": "111111111111"}, "target": target}
        MigrationRequest.model_validate({**request, "selection": {"databases": ["sales"]}})
