"""Move one Iceberg table to a new location with its whole history: plan, rewrite, copy."""

from icelake.migrate.engine import migrate_table
from icelake.migrate.models import MigrationResult, PrefixMapping

__all__ = ["MigrationResult", "PrefixMapping", "migrate_table"]
