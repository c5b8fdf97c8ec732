"""How icelake's moto patches are set so that they can be put back: the embedded AWS's
(icelake/local/embedded.py) and S3 Tables' (icelake/local/s3tables), each with its own undo list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def replace(undo: list[Callable[[], None]], owner: Any, name: str, value: Any) -> None:
    """Set owner.name, appending to `undo` what restores the class's own attribute, or removes an
    inherited one's override."""
    if name in owner.__dict__:
        original = owner.__dict__[name]
        undo.append(lambda: setattr(owner, name, original))
    else:
        undo.append(lambda: delattr(owner, name))
    setattr(owner, name, value)
