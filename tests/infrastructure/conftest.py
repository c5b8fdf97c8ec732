"""One synthesis of the CDK app per test session (a synth takes ~15 s: jsii starts node)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# jsii prints a banner on stderr for Node 20 (past end of life for jsii); it is not a Python warning
# (nothing to filter) but it floods the test output, so silence it before aws_cdk is first imported.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


@dataclass(frozen=True)
class Synth:
    app: Any
    outdir: Path
    stacks: dict[str, Any]  # stack id -> Stack
    templates: dict[str, dict[str, Any]]  # stack id -> CloudFormation template


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synth]:
    """Given the app with the cdk.json context (no AWS credentials), when synthesized."""
    from aws_cdk import Stack

    from cdk.app import build_app

    outdir = tmp_path_factory.mktemp("cdk") / "cdk.out"
    app = build_app(outdir=outdir)
    app.synth()
    stacks = {c.node.id: c for c in app.node.children if isinstance(c, Stack)}
    templates = {sid: json.loads((outdir / f"{sid}.template.json").read_text()) for sid in stacks}
    yield Synth(app=app, outdir=outdir, stacks=stacks, templates=templates)
