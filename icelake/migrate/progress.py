"""Progress reporting without a UI dependency in the core: the caller decides how to show it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class ProgressSink(Protocol):
    def start(self, phase: str, total: int) -> None: ...

    def advance(self, phase: str, amount: int = 1) -> None: ...


class NoProgress:
    def start(self, phase: str, total: int) -> None:
        return None

    def advance(self, phase: str, amount: int = 1) -> None:
        return None


@dataclass(frozen=True)
class Phase:
    """One named phase of a progress sink, for a function that reports a single phase."""

    sink: ProgressSink
    name: str

    def start(self, total: int) -> None:
        self.sink.start(self.name, total)

    def advance(self, amount: int = 1) -> None:
        self.sink.advance(self.name, amount)
