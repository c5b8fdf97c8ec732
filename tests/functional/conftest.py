"""Fixtures the functional tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from icelake.local.embedded import moto_patches
from icelake.local.moto_server import embedded_aws
from tests.lake import Lake, build_lake


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[Lake]:
    """The sample lake on an embedded AWS of its own (two accounts, moto on loopback)."""
    with embedded_aws():
        yield build_lake(tmp_path / "local")


@pytest.fixture
def patched_lake(tmp_path: Path) -> Iterator[Lake]:
    """The sample lake on an embedded AWS with icelake's moto patches (the extensions moto lacks:
    data cells filters, multi-dialect views, Athena's saved queries)."""
    with moto_patches(Path(__file__).resolve().parents[2]), embedded_aws():
        yield build_lake(tmp_path / "local")
