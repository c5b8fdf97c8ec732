"""`make synth` (app.py on the example configuration) and the pinned CDK CLI, with no AWS credentials."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from cdk.config import EXAMPLE_CONFIG
from tests.infrastructure.conftest import Synth
from tests.infrastructure.template_snapshot import normalized

REPO = Path(__file__).resolve().parents[2]


def test_make_synth_synthesizes_the_example_configuration_and_says_so_first(
    synth_example: Synth, synth: Synth
) -> None:
    # (the `synth_example` fixture ran `make synth` with no AWS credentials)
    first = synth_example.said.splitlines()[0]
    assert first.startswith(
        "make synth: synthesizing examples/context.json (the example configuration: the embedded AWS's "
        "accounts and buckets; ICELAKE_CONFIG=PATH names yours)"
    ), synth_example.said
    # the example's three accounts, and no ingestion (ingest_enabled: false, safe to copy)
    envs = {
        k: v["environment"]
        for k, v in synth_example.manifest["artifacts"].items()
        if v["type"] == "aws:cloudformation:stack"
    }
    assert envs == {
        "IcelakeOrchestrator": "aws://123456789012/us-east-1",
        "IcelakeSourceAccess": "aws://111111111111/us-east-1",
        "IcelakeTargetAccess": "aws://222222222222/us-east-1",
    }
    # the ingest example (`synth`) is that deployment and the ingestion stack its source configures
    assert synth.said.splitlines()[0].startswith("make synth: synthesizing examples/context-ingest.json")
    assert set(synth.templates) == {*envs, "IcelakeIngest"}
    for stack in envs:
        assert normalized(synth.templates[stack]) == normalized(synth_example.templates[stack]), stack


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


def _cdk_cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The pinned CDK CLI (package.json) in the repo, as a deployer runs it, with no AWS credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_", "ICELAKE_"))}
    env |= {
        "AWS_CONFIG_FILE": str(tmp / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "none"),
        "CDK_DISABLE_CLI_TELEMETRY": "true",
    }
    command = [
        str(REPO / "node_modules" / ".bin" / "cdk"),
        "synth",
        "--no-notices",
        "--output",
        str(tmp / "out"),
    ]
    return subprocess.run(
        [*command, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "said"),
    [
        # an unedited checkout: cdk.json names no deployment, so nothing of the example's is synthesized
        ((), "synth stopped: context orchestrator_account, orchestrator_region, source_account, "),
        # the CLI's -c reaches the model: a misspelt key next to a configuration file
        (
            ("-c", f"config={EXAMPLE_CONFIG}", "-c", "target_buckett=my-lake"),
            "synth stopped: context key target_buckett is not one icelake reads: did you mean target_bucket?",
        ),
    ],
)
def test_the_cdk_cli_stops_in_one_line_and_synthesizes_nothing(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    done = _cdk_cli(tmp_path, *args)
    assert done.returncode != 0
    stopped = [line for line in done.stderr.splitlines() if line.startswith("synth stopped: ")]
    assert len(stopped) == 1 and stopped[0].startswith(said), done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "out").glob("*.template.json"))
