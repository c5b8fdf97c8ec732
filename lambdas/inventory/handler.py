"""Inventory step: list the selected Iceberg tables of the source account, write the work list to S3."""

from __future__ import annotations

from icelake.workflow import steps
from icelake.workflow.inputs import InventoryInput
from icelake.workflow.lambda_handler import step_handler

handler = step_handler(steps.inventory, InventoryInput, "Inventories")
