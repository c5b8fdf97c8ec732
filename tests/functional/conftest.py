"""Fixtures the functional tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from icelake.local.moto_server import embedded_aws
from tests.lake import Lake, build_lake


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[Lake]:
    """The sample lake on an embedded AWS of its own (two accounts, moto on loopback)."""
    with embedded_aws():
        yield build_lake(tmp_path / "local")
