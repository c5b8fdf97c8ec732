"""Refactors of cdk/ leave the deployed templates as they were: every stack's resources, logical
IDs, properties, policies and cdk-nag suppressions equal the reviewed snapshot (asset hashes and
construct paths aside; see template_snapshot.py for how to update it on purpose)."""

from __future__ import annotations

import os

import pytest

from tests.infrastructure.conftest import Synth
from tests.infrastructure.template_snapshot import normalized, read_snapshot, snapshot_path, write_snapshot

UPDATE = os.environ.get("ICELAKE_UPDATE_TEMPLATES") == "1"
STACKS = ("IcelakeOrchestrator", "IcelakeSourceAccess", "IcelakeTargetAccess", "IcelakeIngest")


@pytest.mark.parametrize("stack_id", STACKS)
def test_the_template_equals_its_reviewed_snapshot(synth: Synth, stack_id: str) -> None:
    template = synth.templates[stack_id]
    if UPDATE:
        write_snapshot(stack_id, template)
    assert snapshot_path(stack_id).is_file(), f"no snapshot for {stack_id}: see template_snapshot.py"
    expected, actual = read_snapshot(stack_id), normalized(template)
    # Logical IDs first: a renamed one means a replaced resource, the worst kind of difference.
    assert sorted(actual["Resources"]) == sorted(expected["Resources"]), (
        f"{stack_id}: resources added {sorted(set(actual['Resources']) - set(expected['Resources']))}, "
        f"removed {sorted(set(expected['Resources']) - set(actual['Resources']))}"
    )
    for logical_id, resource in expected["Resources"].items():
        assert actual["Resources"][logical_id] == resource, f"{stack_id}: {logical_id} differs"
    assert actual == expected
