"""What the consumer scan counts as a reference (icelake/assess/consumers/refs.py): a selected
table's name in any quoting and case, its location, a path inside it and a prefix of it, each with
what it becomes on the target; near misses are not references."""

from __future__ import annotations

from icelake.assess.consumers.refs import Lines, Selected, SelectedTable, table_location

ORDERS = SelectedTable(
    "sales.orders",
    "v2_sales.orders",
    "s3://source-lake/lake/sales/orders",
    "s3://target-lake/warehouse/v2_sales/orders",
)
CUSTOMERS = SelectedTable(
    "sales.customers",
    "v2_sales.customers",
    "s3://source-lake/lake/sales/customers",
    "s3://target-lake/warehouse/v2_sales/customers",
)
TEXT = """SELECT * FROM "sales"."orders" o JOIN awsdatacatalog.SALES.Customers c ON o.id = c.id
-- not references: sales.orders_v2, xsales.orders, sales.order, "sales.orders_old"
df = spark.read.load("s3a://source-lake/lake/sales/orders/data/")
both = 's3://source-lake/lake/sales/'; bucket = s3://source-lake/lake/, other = s3://source-lake/lake/salesx
spark.table(`sales`.`orders`); args['--table'] = 'sales.orders'.
"""


def test_names_locations_and_prefixes_are_found_with_their_targets() -> None:
    selected = Selected([ORDERS, CUSTOMERS])
    found = list(selected.find(TEXT))
    lines = Lines(TEXT)
    got = [(lines.of(f.start), f.written, f.refers_to, f.tables, f.becomes) for f in found]
    assert got == [
        (1, '"sales"."orders"', "table", ("sales.orders",), '"v2_sales"."orders"'),
        (1, "SALES.Customers", "table", ("sales.customers",), "v2_sales.customers"),
        (
            3,
            "s3a://source-lake/lake/sales/orders/data/",
            "location",
            ("sales.orders",),
            "s3a://target-lake/warehouse/v2_sales/orders/data/",
        ),
        (
            4,
            "s3://source-lake/lake/sales/",
            "prefix",
            ("sales.customers", "sales.orders"),
            "s3://target-lake/warehouse/v2_sales/",
        ),
        # the database is renamed: no one target prefix holds both tables under their old names
        (4, "s3://source-lake/lake/", "prefix", ("sales.customers", "sales.orders"), None),
        (5, "`sales`.`orders`", "table", ("sales.orders",), "`v2_sales`.`orders`"),
        (5, "sales.orders", "table", ("sales.orders",), "v2_sales.orders"),
    ]


def test_a_table_location_is_read_from_its_metadata_location() -> None:
    assert table_location("s3a://b/lake/t/metadata/00001-x.metadata.json") == "s3://b/lake/t"
    assert table_location("s3://b/lake/t/meta/00001-x.metadata.json") == "s3://b/lake/t/meta"
    assert not list(Selected([ORDERS]).find("no dots or URIs here"))
