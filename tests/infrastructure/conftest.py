"""One synthesis of the CDK app per test session, by `make synth` with no AWS credentials."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

# jsii prints a banner on stderr for Node 20 (past end of life for jsii); it is not a Python warning
# (nothing to filter) but it floods the test output, so silence it before aws_cdk is first imported.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


DEPLOY_CHECKS = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[DEPLOY_CHECKS] = []


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The figures the deploy checks recorded (docs/deploy.md), printed whatever the capture."""
    lines = config.stash.get(DEPLOY_CHECKS, [])
    if lines:
        terminalreporter.section("Deploy checks")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def deploy_checks(request: pytest.FixtureRequest) -> list[str]:
    """Append a line here to have it printed under "Deploy checks" at the end of the run."""
    return request.config.stash[DEPLOY_CHECKS]


@dataclass(frozen=True)
class Synth:
    outdir: Path
    manifest: dict[str, Any]  # the cloud assembly's manifest.json
    templates: dict[str, dict[str, Any]]  # stack id -> CloudFormation template
    said: str = ""  # what `make synth` printed on stdout

    def annotations(self, stack_id: str, level: str) -> list[str]:
        """Messages of one level ("error", "warning") attached to the stack's constructs (cdk-nag's)."""
        artifact = self.manifest["artifacts"][stack_id]
        metadata = dict(artifact.get("metadata", {}))
        if "additionalMetadataFile" in artifact:  # newer CDKs keep it beside the manifest
            metadata.update(json.loads((self.outdir / artifact["additionalMetadataFile"]).read_text()))
        assert metadata, f"no construct metadata for {stack_id}"
        return [
            f"{path}: {entry['data']}"
            for path, entries in metadata.items()
            for entry in entries
            if entry["type"] == f"aws:cdk:{level}"
        ]


def _synth(
    command: Sequence[str], tmp: Path, outdir: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`command` in the repo, into `outdir`, on a machine with no AWS credentials or config (nor
    CDK, icelake or make variables but `env`'s)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_", "ICELAKE_", "MAKE"))}
    clean |= {
        "AWS_CONFIG_FILE": str(tmp / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "none"),
        "CDK_OUTDIR": str(outdir),
        **(env or {}),
    }
    return subprocess.run(
        list(command), cwd=REPO, env=clean, capture_output=True, text=True, timeout=600, check=False
    )


def run_app_py(
    tmp: Path, outdir: Path, env: dict[str, str] | None = None, args: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """`python app.py [args]` as the CDK CLI runs it (with CDK_CONTEXT_JSON in `env`)."""
    return _synth([sys.executable, "app.py", *args], tmp, outdir, env)


def run_make_synth(tmp: Path, outdir: Path, config: str | None = None) -> subprocess.CompletedProcess[str]:
    """`make synth` as a newcomer runs it (the example configuration, or ICELAKE_CONFIG=`config`);
    `-o` keeps make from reinstalling the venv this run already uses."""
    env = {"ICELAKE_CONFIG": config} if config else None
    return _synth(["make", "--no-print-directory", "-o", ".venv/.installed", "synth"], tmp, outdir, env)


# The example (examples/context.json, what `make synth` synthesizes) deploys three stacks; the ingest
# example (examples/context-ingest.json) is the same deployment with the ingestion workflow, all four.
EXAMPLE = "examples/context.json"
INGEST_EXAMPLE = "examples/context-ingest.json"


def _session_synth(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, name: str, config: str | None
) -> Synth:
    """One `make synth` of `config` per test run, with no AWS credentials or config (it takes ~15-25
    s). Under pytest-xdist the first worker to ask makes it, in the run's shared temp directory, and
    the others wait for it and read it (the tests only read the cloud assembly, and what make
    printed, in make-synth.out)."""
    if worker_id == "master":  # one process: a directory of its own
        tmp = tmp_path_factory.mktemp(name)
    else:
        tmp = tmp_path_factory.getbasetemp().parent / f"{name}-shared"
    outdir = tmp / "cdk.out"
    with (tmp.parent / f"{name}-shared.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (outdir / "manifest.json").is_file():
            tmp.mkdir(exist_ok=True)
            proc = run_make_synth(tmp, outdir, config)
            assert proc.returncode == 0, proc.stdout[-1500:] + proc.stderr[-3000:]
            (tmp / "make-synth.out").write_text(proc.stdout)
    manifest = json.loads((outdir / "manifest.json").read_text())
    stacks = [k for k, v in manifest["artifacts"].items() if v["type"] == "aws:cloudformation:stack"]
    templates = {sid: json.loads((outdir / f"{sid}.template.json").read_text()) for sid in stacks}
    said = (tmp / "make-synth.out").read_text()
    return Synth(outdir=outdir, manifest=manifest, templates=templates, said=said)


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Synth:
    """Given the ingest example (every stack: the example's three and the ingestion stack), when
    `ICELAKE_CONFIG=examples/context-ingest.json make synth` runs it on a machine with no AWS
    credentials or config."""
    return _session_synth(tmp_path_factory, worker_id, "cdk", INGEST_EXAMPLE)


@pytest.fixture(scope="session")
def synth_example(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Synth:
    """Given the example configuration, when `make synth` runs it as a newcomer does."""
    return _session_synth(tmp_path_factory, worker_id, "cdk-example", None)
