"""The synthesized templates as a reviewed snapshot (tests/infrastructure/fixtures/templates/), with
what may change between two syntheses of the same app taken out: asset hashes, construct paths and
CDK's own analytics resource. What is left is what CloudFormation deploys: every resource by its
logical ID, with its properties and policies, cdk-nag's suppressions, outputs and conditions.

A logical ID that changes makes CloudFormation replace the resource (a new ledger table, a new key;
for resources with fixed names the deploy fails), so refactors of cdk/ must leave it unchanged.
When a change to the templates is intended, write the new snapshot and review its diff:

    ICELAKE_UPDATE_TEMPLATES=1 .venv/bin/pytest tests/infrastructure/test_templates.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SNAPSHOTS = Path(__file__).parent / "fixtures" / "templates"
_ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")
_VOLATILE_METADATA = ("aws:cdk:path", "aws:asset:path", "aws:asset:is-bundled", "aws:asset:property")


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, str):
        return _ASSET_HASH.sub("<asset-hash>", value)
    return value


def normalized(template: dict[str, Any]) -> dict[str, Any]:
    out = _scrub(template)
    resources = {}
    for logical_id, resource in out.get("Resources", {}).items():
        if resource["Type"] == "AWS::CDK::Metadata":
            continue
        metadata = {k: v for k, v in resource.get("Metadata", {}).items() if k not in _VOLATILE_METADATA}
        resources[logical_id] = (
            {**resource, "Metadata": metadata}
            if metadata
            else {k: v for k, v in resource.items() if k != "Metadata"}
        )
    out["Resources"] = resources
    conditions = {k: v for k, v in out.get("Conditions", {}).items() if k != "CDKMetadataAvailable"}
    if conditions:
        out["Conditions"] = conditions
    else:
        out.pop("Conditions", None)
    return out


def snapshot_path(stack_id: str) -> Path:
    return SNAPSHOTS / f"{stack_id}.json"


def write_snapshot(stack_id: str, template: dict[str, Any]) -> None:
    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    snapshot_path(stack_id).write_text(json.dumps(normalized(template), indent=1, sort_keys=True) + "\n")


def read_snapshot(stack_id: str) -> dict[str, Any]:
    return dict(json.loads(snapshot_path(stack_id).read_text()))
