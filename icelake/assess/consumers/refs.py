"""What counts as a reference to a selected table in a consumer's text: its name as
`database.table` (each part quoted with ", ` or not, any case, a catalog before it or not), or an
S3 URI that is its location, a path inside it, or a parent prefix of it. Each is found with what
it becomes on the target: the target name (in the same quoting), or the target location."""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

# An identifier as a SQL engine, Spark or a job argument names a table: the first part starts at a
# word boundary (a catalog before it and its dot are allowed), each part quoted alike or bare. The
# lookahead finds overlapping candidates, so `awsdatacatalog.sales.orders` yields `sales.orders`.
_NAME = re.compile(
    r"(?<![\w$-])(?=([\"`]?)([A-Za-z0-9_][\w$-]*)\1[ \t]*\.[ \t]*([\"`]?)([A-Za-z0-9_][\w$-]*)\3(?![\w$-]))"
)
# An S3 URI up to the first character no key of a table location holds in code (quotes,
# whitespace, brackets, separators); s3a:// and s3n:// are Hadoop's names for the same objects.
_URI = re.compile(r"(?i)\bs3[an]?://[^\s\"'`<>,;(){}\[\]|\\^]+")


@dataclass(frozen=True)
class SelectedTable:
    name: str  # the source table, database.table
    target: str  # its target name
    location: str  # the source table's location, s3://bucket/key without a trailing /
    target_location: str


@dataclass(frozen=True)
class Found:
    """One reference in a text: where it starts, as written, what it names and what it becomes
    (None when a prefix covers tables that go to different target prefixes)."""

    start: int
    written: str
    refers_to: Literal["table", "location", "prefix"]
    tables: tuple[str, ...]
    becomes: str | None


class Selected:
    """The selected tables, indexed by lower-case name, by location and by each parent prefix of a
    location, so a text is scanned in one pass whatever the number of tables."""

    def __init__(self, tables: Iterable[SelectedTable]) -> None:
        self.tables = list(tables)
        self.by_name = {t.name.lower(): t for t in self.tables}
        self.by_location = {t.location: t for t in self.tables}
        self.under: dict[str, list[SelectedTable]] = defaultdict(list)
        for t in self.tables:
            scheme_bucket, _, key = t.location.partition("://")[2].partition("/")
            parts = key.split("/") if key else []
            for n in range(len(parts)):
                self.under[f"s3://{'/'.join([scheme_bucket, *parts[:n]])}"].append(t)

    def __len__(self) -> int:
        return len(self.tables)

    def find(self, text: str) -> Iterator[Found]:
        """Every reference in `text`, in order of where it starts."""
        found = [*self._names(text), *self._locations(text)]
        yield from sorted(found, key=lambda f: f.start)

    def _names(self, text: str) -> Iterator[Found]:
        if "." not in text:
            return
        for m in _NAME.finditer(text):
            table = self.by_name.get(f"{m.group(2)}.{m.group(4)}".lower())
            if table is None:
                continue
            end = m.end(4) + len(m.group(3))
            q1, q2 = m.group(1), m.group(3)
            db, name = table.target.split(".")
            yield Found(
                m.start(), text[m.start() : end], "table", (table.name,), f"{q1}{db}{q1}.{q2}{name}{q2}"
            )

    def _locations(self, text: str) -> Iterator[Found]:
        if "://" not in text:
            return
        for m in _URI.finditer(text):
            written = m.group(0).rstrip(".:")
            found = self.location(written)
            if found is not None:
                yield Found(m.start(), written, *found)

    def location(
        self, written: str
    ) -> tuple[Literal["location", "prefix"], tuple[str, ...], str | None] | None:
        """What an S3 URI names: a selected table's location or a path inside it (and where that
        is on the target), or a parent prefix of selected tables (and the target prefix they all
        go to, when they go to one); None if it names no selected table."""
        scheme, _, rest = written.partition("://")
        path = "s3://" + rest.rstrip("/")
        slash = "/" if rest.endswith("/") else ""
        inside = path
        while inside.count("/") >= 2:
            table = self.by_location.get(inside)
            if table is not None:
                moved = table.target_location + path[len(inside) :] + slash
                return ("location", (table.name,), scheme + moved[2:])
            inside = inside.rsplit("/", 1)[0]
        covered = self.under.get(path)
        if not covered:
            return None
        prefixes = {_target_prefix(t, path) for t in covered}
        target = prefixes.pop() if len(prefixes) == 1 else None
        becomes = None if target is None else scheme + target[2:] + slash
        return ("prefix", tuple(sorted(t.name for t in covered)), becomes)


def _target_prefix(table: SelectedTable, prefix: str) -> str | None:
    """The target prefix that stands to the table's target location as `prefix` to its source
    location, if the table keeps its path below the prefix (None: it does not)."""
    below = table.location[len(prefix) :]
    if table.target_location.endswith(below):
        return table.target_location[: len(table.target_location) - len(below)]
    return None


class Lines:
    """A text's line numbers by offset (1-based), found by bisection."""

    def __init__(self, text: str) -> None:
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


def table_location(metadata_location: str) -> str:
    """A table's location from its metadata.json's: the part before /metadata/ (Iceberg's layout;
    a table with write.metadata.path elsewhere is found by its metadata's location instead)."""
    head, sep, _ = metadata_location.rpartition("/metadata/")
    location = head if sep else metadata_location.rsplit("/", 1)[0]
    scheme, _, rest = location.partition("://")
    return "s3://" + rest.rstrip("/") if scheme.lower() in ("s3", "s3a", "s3n") else location.rstrip("/")
