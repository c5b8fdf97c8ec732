"""A view's SQL read and renamed with sqlglot (icelake/objects/sql.py) and Athena's envelope
(envelope.py): only the table references change, byte for byte; what cannot be read is said."""

from __future__ import annotations

import pytest

from icelake.errors import UnreadableSql
from icelake.objects import envelope
from icelake.objects.sql import references, rename, to_spark

NAMES = {("sales", "orders"): ("v2_sales", "orders"), ("sales", "customers"): ("crm", "client-list")}


def test_only_the_references_change() -> None:
    sql = (
        "WITH orders AS (SELECT * FROM sales.orders WHERE note <> 'sales.orders')\n"
        "-- reads sales.customers too\n"
        'SELECT o.id AS "sales.orders", c."name" FROM orders o JOIN "sales"."customers" c ON o.c = c.id'
    )
    renamed = rename(sql, "trino", NAMES, "sales")
    assert renamed == (
        "WITH orders AS (SELECT * FROM v2_sales.orders WHERE note <> 'sales.orders')\n"
        "-- reads sales.customers too\n"
        'SELECT o.id AS "sales.orders", c."name" FROM orders o JOIN crm."client-list" c ON o.c = c.id'
    )
    # the CTE named like a table is not a table
    assert [(r.database, r.table) for r in references(renamed, "trino")] == [
        ("v2_sales", "orders"),
        ("crm", "client-list"),
    ]


def test_unqualified_and_catalog_qualified_references_in_spark() -> None:
    sql = "SELECT * FROM orders JOIN `spark_catalog`.`sales`.`customers` USING (id) JOIN other.t USING (k)"
    assert rename(sql, "spark", NAMES, "sales") == (
        "SELECT * FROM v2_sales.orders JOIN `spark_catalog`.crm.`client-list` USING (id) "
        "JOIN other.t USING (k)"
    )


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("SELEC id FROM sales.orders", "line 1"),
        ("SELECT 1; SELECT 2", "holds 2"),
        ("DROP TABLE sales.orders", "is a DROP statement"),
    ],
)
def test_what_the_parser_cannot_read_is_said_not_guessed(sql: str, says: str) -> None:
    with pytest.raises(UnreadableSql, match=says):
        rename(sql, "trino", NAMES, "sales")


def test_athena_views_transpile_to_spark() -> None:
    spark = to_spark("SELECT concat('c', CAST(id AS varchar)) AS k FROM sales.orders", "trino")
    assert spark == "SELECT CONCAT('c', CAST(id AS STRING)) AS k FROM sales.orders"


def test_the_envelope_round_trips_and_moves_only_sql_and_schema() -> None:
    view = {"originalSql": "SELECT 1", "catalog": "awsdatacatalog", "schema": "sales", "columns": []}
    view |= {"owner": "o", "runAsInvoker": True}
    text = envelope.encode(view)
    assert text.startswith("/* Presto View: ") and envelope.decode(text) == view
    moved = envelope.decode(envelope.encode(envelope.moved(view, "SELECT 2", "v2_sales")))
    assert moved == {**view, "originalSql": "SELECT 2", "schema": "v2_sales"}
    assert list(moved) == list(view)
    with pytest.raises(UnreadableSql, match="does not decode"):
        envelope.decode("/* Presto View: !!! */")
