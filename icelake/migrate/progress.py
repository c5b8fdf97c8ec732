"""Progress reporting without a UI dependency in the core: the caller decides how to show it."""

from __future__ import annotations

from typing import Protocol


class ProgressSink(Protocol):
    def start(self, phase: str, total: int) -> None: ...

    def advance(self, phase: str, amount: int = 1) -> None: ...


class NoProgress:
    def start(self, phase: str, total: int) -> None:
        return None

    def advance(self, phase: str, amount: int = 1) -> None:
        return None
