"""Target names: where each selected source table goes in the target catalog and bucket.

A table's target name is, first match wins: its entry in `target.renames` ("db.table" ->
"newdb.newtable"), else the `target.names` templates ({database} and {table} filled in), else
`target.database_prefix` + its database and its own name. The target location follows the target
name (`s3://<bucket>/<prefix>/<db>/<table>`) unless a `prefix_maps` entry covers the source table's
location, which then says where it goes.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from icelake.errors import InvalidRequestError
from icelake.request.s3tables import name_problem
from icelake.uris import PrefixMap

# What Glue (and Athena, Spark SQL without quoting) accept as a database or table name: Glue keeps
# names in lower case, so a name with capitals would be stored as another name than the one asked.
GLUE_NAME = re.compile(r"^[a-z0-9_][a-z0-9_-]{0,254}$")
PLACEHOLDERS = frozenset({"database", "table"})
PENDING_SCHEME = "s3tables"  # an S3 Tables target's location before Plan has read it


def template_fields(template: str) -> set[str]:
    """The placeholders of a `target.names` template; anything but {database} and {table} (a
    format spec, an index, another name) is refused."""
    fields: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"template {template!r} is malformed ({exc}); write braces as {{{{ and }}}}"
        ) from None
    for _text, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS or spec or conversion:
            raise ValueError(
                f"template {template!r} uses {{{name}}}: only {{database}} and {{table}} are placeholders"
            )
        fields.add(name)
    return fields


def split_name(value: str, what: str) -> tuple[str, str]:
    """'db.table' -> (db, table), each a name Glue keeps as written; else a clear error."""
    parts = value.split(".")
    if len(parts) != 2 or not all(GLUE_NAME.match(p) for p in parts):
        raise ValueError(
            f"{what} {value!r} must be 'database.table' in lower-case letters, digits, _ or - "
            "(Glue stores names in lower case)"
        )
    return parts[0], parts[1]


@dataclass(frozen=True)
class TargetName:
    database: str
    table: str
    location: str

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"


@dataclass(frozen=True)
class Naming:
    """The naming rules of one request's target (built from `TargetSpec`, see its fields)."""

    database_template: str
    table_template: str
    renames: dict[str, str]
    bucket: str
    prefix: str
    prefix_maps: tuple[tuple[str, str], ...] = ()
    # target.kind s3tables: the table bucket. Its tables' storage is the service's choice, known
    # from Plan on (GetTable's warehouseLocation); until then a table's location is PENDING_SCHEME
    # ://<bucket name>/<namespace>/<table>, unique per table, which no file is ever written under.
    table_bucket_arn: str | None = None

    def target_db_of(self, database: str) -> str:
        """The target database the templates give the tables of source `database`."""
        return self.database_template.format(database=database)

    def databases_of(self, database: str) -> set[str]:
        """Every target database a table of source `database` can go to (templates and renames)."""
        renamed = {v.split(".")[0] for k, v in self.renames.items() if k.split(".")[0] == database}
        return {self.target_db_of(database), *renamed}

    def location_of(self, database: str, table: str, source_location: str | None = None) -> str:
        """Where the target table lives: under a `prefix_maps` target when one covers the source
        table's location, else `s3://<bucket>/<prefix>/<database>/<table>` of its target name."""
        if self.table_bucket_arn:
            return f"{PENDING_SCHEME}://{self.table_bucket_arn.rsplit('/', 1)[-1]}/{database}/{table}"
        if source_location and self.prefix_maps:
            mapped = PrefixMap(self.prefix_maps).map(source_location.rstrip("/"))
            if mapped:
                return mapped.rstrip("/")
        prefix = self.prefix.strip("/")
        return f"s3://{self.bucket}/{prefix + '/' if prefix else ''}{database}/{table}"

    def target_of(self, database: str, table: str, source_location: str | None = None) -> TargetName:
        renamed = self.renames.get(f"{database}.{table}")
        if renamed:
            db, name = renamed.split(".")
        else:
            db = self.target_db_of(database)
            name = self.table_template.format(database=database, table=table)
        for value, what in ((db, "database"), (name, "table")):
            if self.table_bucket_arn:
                problem = name_problem(value, "namespace" if what == "database" else "table")
                if problem:
                    raise InvalidRequestError(
                        f"{problem}, for {database}.{table}: change target.names or target.renames"
                    )
            elif not GLUE_NAME.match(value):
                raise InvalidRequestError(
                    f"the target {what} name {value!r} of {database}.{table} is not a Glue name (lower-case "
                    "letters, digits, _ or -, at most 255): change target.names or target.renames"
                )
        return TargetName(db, name, self.location_of(db, name, source_location))


def check_targets(
    naming: Naming,
    targets: dict[tuple[str, str], TargetName],
    renamed_elsewhere: Collection[tuple[str, str]] = (),
) -> None:
    """Refuse, before anything runs, renames of tables the selection does not hold and two source
    tables sent to one target table (or one target location), naming both of each pair.
    `renamed_elsewhere`: the selection's other entries (views, links), whose renames are theirs."""
    problems = [
        f"target.renames names {source}, which the selection does not hold: select it, or remove the rename"
        for source in sorted(naming.renames)
        if tuple(source.split(".")) not in targets and tuple(source.split(".")) not in renamed_elsewhere
    ]
    problems += _collisions(targets.items(), lambda t: t.name, "target table")
    problems += _collisions(targets.items(), lambda t: t.location.rstrip("/"), "target location")
    if problems:
        raise InvalidRequestError("; ".join(problems))


def _collisions(
    pairs: Iterable[tuple[tuple[str, str], TargetName]], key: Callable[[TargetName], str], what: str
) -> list[str]:
    seen: dict[str, str] = {}
    problems: list[str] = []
    for (database, table), target in sorted(pairs):
        k = key(target)
        source = f"{database}.{table}"
        if k in seen:
            problems.append(
                f"{seen[k]} and {source} would both go to {what} {k}: give one of them another name "
                "in target.renames"
            )
        else:
            seen[k] = source
    return problems
