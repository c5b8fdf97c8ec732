"""An estate of many tiny tables in the embedded lake's source account, for the tests of what an
estate's size changes (issue 48): one table written by pyiceberg (two commits, one data file
each) published under many names, each a table of its own at its own location."""

from __future__ import annotations

import contextlib

from pyiceberg.catalog.sql import SqlCatalog

from icelake.local.lake import TARGET_ACCOUNT, Lake
from tests.lake import add_source_table


def tiny_tables(lake: Lake, count: int, database: str = "bulk") -> list[str]:
    """`count` tables `t0000`... in `database`; returns their names (database.table), sorted."""
    add_source_table(lake, "seed", [[1], [2]], database=database)
    root = lake.local_root / database / "seed"
    catalog = SqlCatalog("seed", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    local = catalog.load_table(f"{database}.seed").metadata_location
    names = [f"t{i:04d}" for i in range(count)]
    for name in names:  # written into the store (as a benchmark's large table is): the same objects,
        lake.publish(database, name, local, direct=True)  # without a PUT each through the server
    return sorted([f"{database}.seed", *(f"{database}.{n}" for n in names)])


def foreign_target(lake: Lake, database: str, table: str) -> None:
    """A table of that name in the target account that icelake did not create (a blocker)."""
    glue = lake.target.client("glue")
    with contextlib.suppress(glue.exceptions.AlreadyExistsException):
        glue.create_database(DatabaseInput={"Name": database})
    glue.create_table(
        DatabaseName=database,
        TableInput={
            "Name": table,
            "StorageDescriptor": {"Location": f"s3://someone-else-{TARGET_ACCOUNT}/{table}"},
        },
    )
