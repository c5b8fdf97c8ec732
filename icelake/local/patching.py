"""How icelake's moto patches are held: the embedded AWS's (icelake/local/embedded.py) and S3
Tables' (icelake/local/s3tables), each a `Patches` of its own. Reference-counted under a lock, so
nesting is harmless: the first holder installs them, the last puts moto back exactly."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Patches:
    """One set of moto patches and what undoes each (applied last-first)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.holders = 0  # acquire calls not yet released
        self.undo: list[Callable[[], None]] = []

    def replace(self, owner: Any, name: str, value: Any) -> None:
        """Set owner.name; undo restores the class's own attribute, or removes an inherited one's
        override."""
        if name in owner.__dict__:
            original = owner.__dict__[name]
            self.undo.append(lambda: setattr(owner, name, original))
        else:
            self.undo.append(lambda: delattr(owner, name))
        setattr(owner, name, value)

    def acquire(self, install: Callable[[], None]) -> None:
        """One holder more; the first runs `install` (what it did undone if it fails)."""
        with self.lock:
            if self.holders == 0:
                try:
                    install()
                except BaseException:
                    self.restore()
                    raise
            self.holders += 1

    def release(self) -> bool:
        """One holder less; the last restores moto (and says so: True)."""
        with self.lock:
            if self.holders == 0:
                return False
            self.holders -= 1
            if self.holders == 0:
                self.restore()
                return True
            return False

    def restore(self) -> None:
        while self.undo:
            self.undo.pop()()

    def held(self) -> bool:
        with self.lock:
            return self.holders > 0
