"""Move one Iceberg table to a new location with its whole history: plan, rewrite, copy.

The public names are imported lazily, so that worker processes which only rewrite Avro
(`icelake.migrate.avro.files`) do not import boto3 and the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from icelake.migrate.copy.engine import migrate_table
    from icelake.migrate.models import MigrationResult, PrefixMapping

__all__ = ["MigrationResult", "PrefixMapping", "migrate_table"]


def __getattr__(name: str) -> Any:
    if name == "migrate_table":
        from icelake.migrate.copy.engine import migrate_table

        return migrate_table
    if name in ("MigrationResult", "PrefixMapping"):
        from icelake.migrate import models

        return getattr(models, name)
    raise AttributeError(name)
