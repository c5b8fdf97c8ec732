"""What an assessment and a run say of each catalog entry of a selection: its kind, what icelake
does with it, and, when it is not carried, why and what to do."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

# What icelake does with an entry of a kind (kinds.py):
#   migrated: an Iceberg table (the Map); carried: a view or resource link created on the target;
#   not_moved: a table in another format, named with what to do.
Action = Literal["migrated", "carried", "not_moved"]

# Where an entry stands. planned: assess, or a run before carrying; created / updated / unchanged:
# carried; not_created: it reads what is neither migrated nor on the target, its SQL does not
# parse, or its target is not icelake's; rolled_back: carrying failed and what this run created
# was removed; skipped: an Iceberg table (its outcome is the table's) or a table not moved.
ObjectStatus = Literal["planned", "created", "updated", "unchanged", "not_created", "rolled_back", "skipped"]

# Statuses that make a run partial: an object the run should have carried and did not.
NOT_CARRIED = frozenset({"not_created", "rolled_back"})


class CatalogObject(BaseModel):
    """One Glue catalog entry of the selection."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str  # source "database.name"
    kind: str  # kinds.KINDS
    action: Action
    target: str = ""  # "database.name" on the target (views, links); "" when not moved
    status: ObjectStatus = "planned"
    reads: list[str] = []  # a view's source references, a link's target table
    message: str = ""  # why it is not carried and what to do


def objects_by_kind(objects: Iterable[CatalogObject]) -> dict[str, int]:
    """{kind: count}, sorted by kind: what assessment.json and report.json summarise."""
    return dict(sorted(Counter(o.kind for o in objects).items()))
