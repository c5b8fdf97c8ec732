"""asl-validator (npm, pinned in package.json) accepts both state machine definitions: the ASL files
as written and as the synthesized stacks deploy them (placeholders substituted)."""

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
MACHINES = [("IcelakeOrchestrator", MIGRATE_ASL), ("IcelakeIngest", INGEST_ASL)]


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    assert VALIDATOR.exists(), "asl-validator is missing: run `make setup` (npm ci)"
    return subprocess.run(
        [str(VALIDATOR), "--json-path", str(path)], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(("stack", "asl"), MACHINES)
def test_asl_file_is_valid(stack: str, asl: str) -> None:
    proc = validate(REPO / asl)
    assert proc.returncode == 0, f"{asl}: {proc.stdout}{proc.stderr}"


@pytest.mark.parametrize(("stack", "asl"), MACHINES)
def test_synthesized_definition_is_valid(synth: Synth, tmp_path: Path, stack: str, asl: str) -> None:
    _props, definition = rendered_definition(synth.outdir, synth.templates[stack], REPO / asl)
    rendered = tmp_path / "definition.json"
    rendered.write_text(json.dumps(definition))
    proc = validate(rendered)
    assert proc.returncode == 0, f"{stack}: {proc.stdout}{proc.stderr}"


def test_the_validator_refuses_an_invalid_definition(tmp_path: Path) -> None:
    broken: dict[str, Any] = json.loads((REPO / MIGRATE_ASL).read_text())
    broken["StartAt"] = "NoSuchState"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    assert validate(path).returncode != 0
