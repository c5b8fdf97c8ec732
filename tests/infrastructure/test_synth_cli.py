"""`make synth` (python app.py) on a machine with no AWS credentials."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.infrastructure.conftest import Synth

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_app_py_synthesizes_without_aws_credentials(tmp_path: Path) -> None:
    # Given an environment with no AWS credentials or config at all
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))}
    env |= {
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "CDK_OUTDIR": str(tmp_path / "cdk.out"),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    # When app.py runs as `make synth` runs it
    proc = subprocess.run(
        [sys.executable, "app.py"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Then the three templates are written, for the three accounts of cdk.json
    assert proc.returncode == 0, proc.stderr[-3000:]
    manifest = json.loads((tmp_path / "cdk.out" / "manifest.json").read_text())
    envs = {
        k: v["environment"]
        for k, v in manifest["artifacts"].items()
        if v["type"] == "aws:cloudformation:stack"
    }
    assert envs == {
        "IcelakeOrchestrator": "aws://123456789012/us-east-1",
        "IcelakeSourceAccess": "aws://111111111111/us-east-1",
        "IcelakeTargetAccess": "aws://222222222222/us-east-1",
    }


def test_glue_wheel_is_the_icelake_package(synth: Synth) -> None:
    (job,) = [
        r
        for r in synth.templates["IcelakeOrchestrator"]["Resources"].values()
        if r["Type"] == "AWS::Glue::Job"
    ]
    wheel = (
        synth.outdir / f"asset.{job['Properties']['DefaultArguments']['--extra-py-files'].rsplit('/', 1)[1]}"
    )
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert "icelake/constants.py" in names
        assert "icelake/migrate/__init__.py" in names
        assert any(n.endswith(".dist-info/WHEEL") for n in names)
        assert not any("__pycache__" in n for n in names)
