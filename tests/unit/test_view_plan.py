"""The plan of a selection's other entries (icelake/objects/plan.py): every entry classified, views
after what they read, and what cannot be carried named with why, never guessed at."""

from __future__ import annotations

from typing import Any

from icelake.aws.catalog import OWNER_PARAMETER
from icelake.objects import envelope
from icelake.objects.plan import SHA_PARAMETER, Context, plan_objects

CONTEXT = Context("111111111111", "222222222222", "eu-west-1", lambda d, n: (f"v2_{d}", n))
ICEBERG = {"Parameters": {"table_type": "ICEBERG"}}


def _view(sql: str) -> dict[str, Any]:
    return {"TableType": "VIRTUAL_VIEW", "ViewOriginalText": sql, "ViewExpandedText": sql}


def _athena(sql: str) -> dict[str, Any]:
    body = {
        "originalSql": sql,
        "catalog": "awsdatacatalog",
        "schema": "s",
        "columns": [],
        "runAsInvoker": False,
    }
    return {"TableType": "VIRTUAL_VIEW", "ViewOriginalText": envelope.encode(body), "ViewExpandedText": ""}


def test_views_come_after_what_they_read_and_each_entry_is_named() -> None:
    entries = {
        ("s", "t"): ICEBERG,
        ("s", "a_top"): _view("SELECT * FROM s.m_mid"),
        ("s", "m_mid"): _athena("SELECT * FROM z_base"),
        ("s", "z_base"): _view("SELECT * FROM s.t"),
        ("s", "csv"): {
            "StorageDescriptor": {
                "Location": "s3://b/c",
                "SerdeInfo": {"SerializationLibrary": "OpenCSVSerde"},
            }
        },
        ("s", "delta"): {"Parameters": {"spark.sql.sources.provider": "delta"}},
    }
    plan = plan_objects(entries, {("s", "t")}, CONTEXT)
    assert [c.source[1] for c in plan.carries] == ["z_base", "m_mid", "a_top"]
    kinds = {k[1]: (o.kind, o.action, o.status) for k, o in plan.objects.items()}
    assert kinds == {
        "t": ("iceberg_table", "migrated", "skipped"),
        "a_top": ("spark_view", "carried", "planned"),
        "m_mid": ("athena_view", "carried", "planned"),
        "z_base": ("spark_view", "carried", "planned"),
        "csv": ("csv_table", "not_moved", "skipped"),
        "delta": ("delta_table", "not_moved", "skipped"),
    }
    assert "Delta" in plan.objects[("s", "delta")].message
    carried = plan.carries[1].table_input
    assert envelope.decode(carried["ViewOriginalText"])["originalSql"] == "SELECT * FROM v2_s.z_base"
    assert carried["Parameters"][OWNER_PARAMETER] == "111111111111:s.m_mid"
    assert len(carried["Parameters"][SHA_PARAMETER]) == 64
    # the same source planned again gives the same digest: a re-run finds nothing to update
    again = plan_objects(entries, {("s", "t")}, CONTEXT).carries[1].digest
    assert again == plan.carries[1].digest


def test_what_cannot_be_carried_is_named_with_why() -> None:
    entries = {
        ("s", "t"): ICEBERG,
        ("s", "bad"): _view("SELECT FROM WHERE"),
        ("s", "loop_a"): _view("SELECT * FROM s.loop_b"),
        ("s", "loop_b"): _view("SELECT * FROM s.loop_a"),
        ("s", "link_out"): {"TargetTable": {"CatalogId": "333333333333", "DatabaseName": "x", "Name": "y"}},
        ("s", "link_in"): {"TargetTable": {"DatabaseName": "s", "Name": "t"}},
        ("s", "md"): {
            "ViewDefinition": {"Definer": "arn:aws:iam::111111111111:role/d", "Representations": []}
        },
    }
    plan = plan_objects(entries, {("s", "t")}, CONTEXT)
    named = {k[1]: (o.status, o.message) for k, o in plan.objects.items()}
    assert named["bad"][0] == "not_created" and "could not be read" in named["bad"][1]
    assert named["loop_a"][0] == named["loop_b"][0] == "not_created" and "cycle" in named["loop_a"][1]
    assert named["link_out"][0] == "not_created" and "333333333333:x.y" in named["link_out"][1]
    assert named["md"][0] == "not_created" and "principal_map" in named["md"][1]
    (link,) = plan.carries
    assert link.table_input["TargetTable"] == {
        "CatalogId": "222222222222",
        "DatabaseName": "v2_s",
        "Name": "t",
    }
