"""`make synth` (python app.py on the example configuration) on a machine with no AWS credentials."""

from __future__ import annotations

import zipfile
from pathlib import Path

from tests.infrastructure.conftest import Synth

REPO = Path(__file__).resolve().parents[2]


def test_make_synth_synthesizes_the_example_configuration_and_says_so_first(synth: Synth) -> None:
    # (the `synth` fixture ran `make synth` with no AWS credentials)
    first = synth.said.splitlines()[0]
    assert first.startswith(
        "make synth: synthesizing examples/context.json (the example configuration: the embedded AWS's "
        "accounts and buckets; ICELAKE_CONFIG=PATH names yours)"
    ), synth.said
    # the example's three accounts, and the ingestion stack its sources configure
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
