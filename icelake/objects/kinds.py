"""Each Glue catalog entry's kind, from what Glue keeps of it, and what to do with the kinds
icelake does not move (it moves Iceberg tables only)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from icelake.aws import catalog
from icelake.objects.model import NOT_CARRIED, Action, CatalogObject

ENVELOPE_START = "/* Presto View: "

ICEBERG_TABLE = "iceberg_table"
ATHENA_VIEW = "athena_view"
SPARK_VIEW = "spark_view"
MULTI_DIALECT_VIEW = "multi_dialect_view"
RESOURCE_LINK = "resource_link"
VIEWS = frozenset({ATHENA_VIEW, SPARK_VIEW, MULTI_DIALECT_VIEW})

# kind -> (what people call it, what to do instead of moving it with icelake)
_NOT_MOVED: dict[str, tuple[str, str]] = {
    "parquet_table": (
        "Parquet table",
        "icelake moves Iceberg tables only: convert it to Iceberg on the source (Spark's "
        "system.migrate or system.snapshot procedure, or an Athena CTAS into an Iceberg table) and "
        "select it again, or copy its files and create it on the target yourself",
    ),
    "orc_table": ("ORC table", ""),
    "avro_table": ("Avro table", ""),
    "csv_table": ("CSV table", ""),
    "json_table": ("JSON table", ""),
    "hive_table": ("Hive table", ""),
    "delta_table": (
        "Delta table",
        "icelake moves Iceberg tables only: convert it to Iceberg on the source (Iceberg's "
        "snapshotDeltaLakeTable, or Delta UniForm) and select it again",
    ),
    "hudi_table": (
        "Hudi table",
        "icelake moves Iceberg tables only: give it Iceberg metadata on the source (Apache XTable) "
        "and select it again",
    ),
    "other_table": ("table of another kind", ""),
}
_LABELS = {
    ICEBERG_TABLE: "Iceberg table",
    ATHENA_VIEW: "Athena view",
    SPARK_VIEW: "Spark view",
    MULTI_DIALECT_VIEW: "multi-dialect view",
    RESOURCE_LINK: "resource link",
} | {k: v[0] for k, v in _NOT_MOVED.items()}
KINDS = tuple(_LABELS)

# A Hive table's format, by the words its SerDe, input format or classification names.
_FORMATS = (
    ("parquet", "parquet_table"),
    ("orc", "orc_table"),
    ("avro", "avro_table"),
    ("json", "json_table"),
    ("csv", "csv_table"),
    ("opencsv", "csv_table"),
    ("lazysimpleserde", "csv_table"),
    ("textinputformat", "csv_table"),
)


def label(kind: str, *, plural: bool = False) -> str:
    text = _LABELS.get(kind, kind)
    return text + "s" if plural else text


def what_to_do(kind: str) -> str:
    """What an operator does with an entry icelake does not move."""
    text = _NOT_MOVED.get(kind, ("", ""))[1]
    return text or _NOT_MOVED["parquet_table"][1]


def kind_of(table: dict[str, Any]) -> str:
    """The kind of one entry of GetTables."""
    if table.get("TargetTable"):
        return RESOURCE_LINK
    if catalog.is_iceberg(table):
        return ICEBERG_TABLE
    if table.get("ViewDefinition"):
        return MULTI_DIALECT_VIEW
    if str(table.get("TableType", "")).upper() == "VIRTUAL_VIEW":
        original = str(table.get("ViewOriginalText") or "")
        return ATHENA_VIEW if original.lstrip().startswith(ENVELOPE_START) else SPARK_VIEW
    return _table_format(table)


def _table_format(table: dict[str, Any]) -> str:
    params = {k.lower(): str(v).lower() for k, v in table.get("Parameters", {}).items()}
    sd = table.get("StorageDescriptor", {})
    if "delta" in (params.get("table_type"), params.get("spark.sql.sources.provider")):
        return "delta_table"
    words = " ".join(
        [
            params.get("classification", ""),
            params.get("spark.sql.sources.provider", ""),
            str(sd.get("InputFormat", "")).lower(),
            str(sd.get("SerdeInfo", {}).get("SerializationLibrary", "")).lower(),
        ]
    )
    if "hudi" in words or "hoodie" in words:
        return "hudi_table"
    for word, kind in _FORMATS:
        if word in words:
            return kind
    return "hive_table" if sd.get("Location") else "other_table"


def action_of(kind: str) -> Action:
    if kind == ICEBERG_TABLE:
        return "migrated"
    if kind in VIEWS or kind == RESOURCE_LINK:
        return "carried"
    return "not_moved"


def summary_line(objects: list[CatalogObject], where: str, *, planned: bool = False) -> str:
    """One line for a CLI summary, e.g. '3 views carried, 1 Parquet table not moved: see ...';
    empty when the selection holds only Iceberg tables."""
    carried = [o for o in objects if o.action == "carried"]
    done = [o for o in carried if o.status not in NOT_CARRIED]
    parts = []
    views = sum(1 for o in done if o.kind != RESOURCE_LINK)
    links = len(done) - views
    verb = "to carry" if planned else "carried"
    if views:
        parts.append(f"{views} view{'s' if views != 1 else ''} {verb}")
    if links:
        parts.append(f"{links} resource link{'s' if links != 1 else ''} {verb}")
    missed = len(carried) - len(done)
    if missed:
        parts.append(f"{missed} {'cannot be' if planned else 'not'} carried")
    moved = Counter(o.kind for o in objects if o.action == "not_moved")
    parts += [f"{n} {label(k, plural=n != 1)} not moved" for k, n in sorted(moved.items())]
    return f"{', '.join(parts)}: see {where}" if parts else ""
