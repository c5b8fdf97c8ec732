"""Both state machines pass `asl-validator` (npm, pinned in package.json), as written in the
repo and as synthesized (placeholders substituted), including its JSONPath and ARN checks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from icelake.constants import INGEST_ASL, MIGRATE_ASL
from tests.infrastructure.conftest import Synth
from tests.infrastructure.helpers import rendered_definition

REPO = Path(__file__).resolve().parents[2]
VALIDATOR = REPO / "node_modules" / ".bin" / "asl-validator"
DEFINITIONS = {"IcelakeOrchestrator": MIGRATE_ASL, "IcelakeIngest": INGEST_ASL}


def _validate(definition: dict[str, Any] | str) -> subprocess.CompletedProcess[str]:
    assert VALIDATOR.exists(), "asl-validator is missing: run `make setup` (npm ci)"
    text = definition if isinstance(definition, str) else json.dumps(definition)
    return subprocess.run(
        [str(VALIDATOR), "--json-definition", text], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("asl", [MIGRATE_ASL, INGEST_ASL])
def test_the_definitions_in_the_repo_are_valid(asl: str) -> None:
    checked = _validate((REPO / asl).read_text())
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("stack_id", list(DEFINITIONS))
def test_the_synthesized_definitions_are_valid(synth: Synth, stack_id: str) -> None:
    _props, definition = rendered_definition(
        synth.outdir, synth.templates[stack_id], REPO / DEFINITIONS[stack_id]
    )
    checked = _validate(definition)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_broken_definition_is_refused() -> None:
    definition = json.loads((REPO / MIGRATE_ASL).read_text())
    definition["States"]["Inventory"]["Next"] = "NoSuchState"
    checked = _validate(definition)
    assert checked.returncode != 0 and "NoSuchState" in checked.stdout + checked.stderr
