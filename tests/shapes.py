"""An embedded-AWS extension's raw answers checked against botocore's service model: every member's
type, and no member the shape does not name (tests/functional/test_*_backend.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# botocore's shape types -> the Python types a JSON answer holds for them
BASE_TYPES: Mapping[str, type | tuple[type, ...]] = {
    "string": str,
    "boolean": bool,
    "integer": int,
    "long": int,
    "list": list,
    "structure": dict,
}


def check_shape(
    shape: Any, value: Any, where: str, types: Mapping[str, type | tuple[type, ...]] = BASE_TYPES
) -> None:
    """Assert `value` fits `shape`, naming the first member that does not (`where` is its path)."""
    assert isinstance(value, types[shape.type_name]), f"{where}: {value!r} is not a {shape.type_name}"
    if shape.type_name == "structure":
        unknown = set(value) - set(shape.members)
        assert not unknown, f"{where}: {sorted(unknown)} are not members of {shape.name}"
        for name, member in value.items():
            check_shape(shape.members[name], member, f"{where}.{name}", types)
    elif shape.type_name == "list":
        for i, item in enumerate(value):
            check_shape(shape.member, item, f"{where}[{i}]", types)
