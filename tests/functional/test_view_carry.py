"""Carrying views onto the target (icelake/objects/carry.py) on moto: an update when the source's
definition changed, the rollback of a failure putting an updated view back and deleting a created
one, a view on a table the run did not migrate named with that, never written."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from icelake.aws import catalog
from icelake.objects import carry
from icelake.objects.plan import plan_objects
from icelake.objects.survey import context_of, source_entries
from icelake.request.deps import Sessions
from icelake.request.selection import parse_request

ACCOUNT = "123456789012"  # moto's: one account plays both sides, the databases apart


def _request(**options: Any) -> Any:
    return parse_request(
        {
            "run_id": "r1",
            "source": {"account_id": ACCOUNT},
            "target": {"account_id": ACCOUNT, "bucket": "target", "database_prefix": "v2_"},
            "selection": {"databases": ["sales"]},
            "options": options,
        }
    )


def _view(name: str, sql: str) -> dict[str, Any]:
    return {"Name": name, "TableType": "VIRTUAL_VIEW", "ViewOriginalText": sql, "ViewExpandedText": sql}


def _carry(glue: Any, **options: Any) -> dict[str, Any]:
    request = _request(**options)
    plan = plan_objects(
        source_entries(request, glue),
        {("sales", "orders"), ("sales", "lost")},
        context_of(request, "us-east-1"),
    )
    return {o.name: o for o in carry.carry(plan, request, Sessions(request))}


@pytest.mark.usefixtures("aws_env")
def test_updates_rollbacks_and_views_on_tables_the_run_did_not_migrate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    glue = boto3.client("glue")
    for database in ("sales", "v2_sales"):
        glue.create_database(DatabaseInput={"Name": database})
    for name in ("orders", "lost"):
        glue.create_table(
            DatabaseName="sales", TableInput={"Name": name, "Parameters": {"table_type": "ICEBERG"}}
        )
    glue.create_table(
        DatabaseName="v2_sales", TableInput={"Name": "orders", "Parameters": {"table_type": "ICEBERG"}}
    )
    glue.create_table(
        DatabaseName="sales", TableInput=_view("a_big", "SELECT * FROM sales.orders WHERE id > 1")
    )
    glue.create_table(DatabaseName="sales", TableInput=_view("b_lost", "SELECT * FROM sales.lost"))

    # A dry run names what it would do and writes nothing
    dry = _carry(glue, dry_run=True)
    assert (dry["sales.a_big"].status, dry["sales.b_lost"].status) == ("planned", "planned")
    assert catalog.get_table(glue, "v2_sales", "a_big") is None

    # A first carry: a_big created; b_lost reads a table this run did not migrate (its table failed)
    first = _carry(glue)
    assert first["sales.a_big"].status == "created"
    assert first["sales.b_lost"].status == "not_created"
    assert "v2_sales.lost, which this run did not migrate" in first["sales.b_lost"].message
    assert catalog.get_table(glue, "v2_sales", "b_lost") is None

    # The source view changes: the next carry updates it
    changed = _view("a_big", "SELECT * FROM sales.orders WHERE id > 2")
    glue.update_table(DatabaseName="sales", TableInput=changed)
    assert _carry(glue)["sales.a_big"].status == "updated"
    updated = glue.get_table(DatabaseName="v2_sales", Name="a_big")["Table"]
    assert updated["ViewOriginalText"] == "SELECT * FROM v2_sales.orders WHERE id > 2"
    assert _carry(glue)["sales.a_big"].status == "unchanged"

    # It changes again and a later view's creation fails: the update is put back, the new view gone
    glue.update_table(
        DatabaseName="sales", TableInput=_view("a_big", "SELECT * FROM sales.orders WHERE id > 3")
    )
    glue.create_table(DatabaseName="sales", TableInput=_view("c_new", "SELECT id FROM sales.orders"))

    def fails(glue: Any, database: str, table_input: dict[str, Any]) -> None:
        raise ClientError(
            {"Error": {"Code": "InternalServiceException", "Message": "injected"}}, "CreateTable"
        )

    monkeypatch.setattr(carry, "create_entry", fails)
    failed = _carry(glue)
    assert failed["sales.a_big"].status == "rolled_back" and "injected" in failed["sales.a_big"].message
    assert failed["sales.c_new"].status == "not_created"
    back = glue.get_table(DatabaseName="v2_sales", Name="a_big")["Table"]
    assert back["ViewOriginalText"] == updated["ViewOriginalText"]
    assert back["Parameters"] == updated["Parameters"]
    assert catalog.get_table(glue, "v2_sales", "c_new") is None
