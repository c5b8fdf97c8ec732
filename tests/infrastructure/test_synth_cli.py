"""`make synth` (python app.py) on a machine with no AWS credentials."""

from __future__ import annotations

import zipfile
from pathlib import Path

from tests.infrastructure.conftest import Synth

REPO = Path(__file__).resolve().parents[2]


def test_app_py_synthesizes_the_stacks_of_the_three_accounts_of_cdk_json(synth: Synth) -> None:
    # (the `synth` fixture ran app.py with no AWS credentials, as `make synth` does)
    envs = {
        k: v["environment"]
        for k, v in synth.manifest["artifacts"].items()
        if v["type"] == "aws:cloudformation:stack"
    }
    assert envs == {
        "IcelakeOrchestrator": "aws://123456789012/us-east-1",
        "IcelakeSourceAccess": "aws://111111111111/us-east-1",
        "IcelakeTargetAccess": "aws://222222222222/us-east-1",
        "IcelakeIngest": "aws://123456789012/us-east-1",  # the ingestion workflow (ingest_enabled)
    }


def test_the_glue_package_is_the_icelake_package(synth: Synth) -> None:
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
        assert wheel.suffix == ".zip"  # what Spark puts on the executors' path
        assert not any("__pycache__" in n for n in names)
