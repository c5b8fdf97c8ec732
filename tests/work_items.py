"""A work item of sales.orders for one of the example requests of tests/events, as Inventory would
hand it on (target migrated_sales.orders), for tests of what a step says of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from icelake.request.models import MigrationRequest, WorkItem

EVENTS = Path(__file__).resolve().parent / "events"


def orders_item(event: str, target_location: str, options: dict[str, Any] | None = None) -> WorkItem:
    """`options` are set over the example's own."""
    body = json.loads((EVENTS / event).read_text())
    body["options"] = {**body.get("options", {}), **(options or {})}
    request = MigrationRequest.model_validate({**body, "run_id": "r"})
    return WorkItem(
        run_id="r",
        source_database="sales",
        source_table="orders",
        source_metadata_location="s3://source-lake/lake/sales/orders/metadata/v3.metadata.json",
        target_database="migrated_sales",
        target_table="orders",
        target_location=target_location,
        request=request,
    )
