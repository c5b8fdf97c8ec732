"""A view's SQL read with a real parser (sqlglot): the tables it reads, and the same text with
each table reference renamed. Only the references' own characters change: columns, aliases, CTE
names, string literals, comments and layout stay as written, byte for byte."""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from icelake.errors import UnreadableSql

# Glue's dialect names -> sqlglot's: Athena's engine is Trino (Presto before it).
DIALECTS = {"ATHENA": "trino", "SPARK": "spark", "REDSHIFT": "redshift"}
_PLAIN = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class Reference:
    """One table reference: where its text starts and ends (end exclusive), and what it names
    (`database` "" when unqualified; a catalog part, if any, is kept as written)."""

    start: int
    end: int
    database: str
    table: str


def parse(sql: str, dialect: str) -> exp.Query:
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except (ParseError, TokenError) as exc:
        raise UnreadableSql(_message(exc)) from None
    found = [s for s in statements if s is not None]
    if len(found) != 1:
        raise UnreadableSql(f"a view is one statement; this SQL holds {len(found)}")
    if not isinstance(found[0], exp.Query):
        raise UnreadableSql(f"a view is a query; this SQL is a {found[0].key.upper()} statement")
    return found[0]


def _message(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if errors:
        first = errors[0]
        return f"{first.get('description')} at line {first.get('line')}, column {first.get('col')}"
    return re.sub(r"\x1b\[[0-9;]*m", "", " ".join(str(exc).split()))


def references(sql: str, dialect: str) -> list[Reference]:
    """The tables (and views) the query reads, in the order they are written; the names of its CTEs
    are not tables and are left out."""
    tree = parse(sql, dialect)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    found = []
    for table in tree.find_all(exp.Table):
        if not table.name or not isinstance(table.this, exp.Identifier):
            continue  # a table function (UNNEST, VALUES ...): nothing named
        if not table.db and table.name.lower() in ctes:
            continue
        first = table.args.get("db") or table.this
        start, end = first.meta.get("start"), table.this.meta.get("end")
        if start is None or end is None:
            raise UnreadableSql(f"the parser gave no position for the reference to {table.sql()}")
        end += 1  # the parser's end is the last character's (quotes included)
        found.append(Reference(start, end, table.db.lower(), table.name.lower()))
    return sorted(found, key=lambda r: r.start)


def quote(name: str, dialect: str) -> str:
    """A Glue name as the dialect writes it: as it is when plain, else quoted."""
    if _PLAIN.match(name):
        return name
    return f"`{name}`" if dialect == "spark" else f'"{name}"'


def rename(
    sql: str,
    dialect: str,
    names: dict[tuple[str, str], tuple[str, str]],
    default_db: str,
    found: list[Reference] | None = None,
) -> str:
    """The SQL with each reference that `names` maps ((database, table) -> (database, table);
    an unqualified reference is of `default_db`) written as its new, qualified name. References
    `names` does not hold stay as written. `found`: the SQL's references, if read already."""
    out, at = [], 0
    for ref in references(sql, dialect) if found is None else found:
        new = names.get((ref.database or default_db, ref.table))
        if new is None:
            continue
        out += [sql[at : ref.start], f"{quote(new[0], dialect)}.{quote(new[1], dialect)}"]
        at = ref.end
    renamed = "".join([*out, sql[at:]])
    parse(renamed, dialect)  # what was written must read back
    return renamed


def to_spark(sql: str, dialect: str) -> str:
    """The query in Spark SQL (an Athena view read by Spark: the tests' proof by an engine)."""
    parse(sql, dialect)
    return sqlglot.transpile(sql, read=dialect, write="spark")[0]
