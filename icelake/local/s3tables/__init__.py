"""S3 Tables for the embedded AWS, as AWS answers it where moto 5.2.5 falls short.

moto has table buckets, namespaces, tables, GetTable (a `warehouseLocation` of its own, a bucket
named `<uuid>--table-s3` the S3 API reads and writes), Get/UpdateTableMetadataLocation with version
tokens, RenameTable and DeleteTable. It lacks:

- the table's and the bucket's maintenance configuration, tags and resource policies (added in
  `api.py` from botocore's s3tables model; tests/functional/test_s3tables_local.py checks every
  answer against the model's output shapes);
- the limits of a table bucket's storage: AWS accepts only PutObject, GetObject, HeadObject,
  CreateMultipartUpload, UploadPart, CompleteMultipartUpload, AbortMultipartUpload and ListParts
  there, and writes every object SSE-S3, STANDARD (`storage.py`).

Installed with icelake's other moto patches (icelake/local/embedded.py), by every embedded AWS
(icelake/local/moto_server.py) and by the in-process mock of the tests (tests/conftest.py), all
through `acquire`/`release`: reference-counted, so nesting is harmless, and the last release
restores moto exactly. moto's server builds a service's routes at its first request: install
before the server answers S3 Tables (every caller here does, at start)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from icelake.local.patching import replace
from icelake.local.s3tables import api, storage

MOTO_VERSION = "5.2.5"  # the patch points below were read on this version only

_LOCK = threading.RLock()
_undo: list[Callable[[], None]] = []


class _Held:
    count = 0


def _replace(owner: Any, name: str, value: Any) -> None:
    """Set owner.name, undone by this module's undo list."""
    replace(_undo, owner, name, value)


def acquire() -> None:
    """Install the S3 Tables patches (the first call) or count one more holder."""
    with _LOCK:
        if _Held.count == 0:
            import moto

            if moto.__version__ != MOTO_VERSION:
                raise RuntimeError(
                    f"icelake's S3 Tables patches were verified on moto=={MOTO_VERSION}; installed: "
                    f"{moto.__version__}. Re-check the patch points in {__name__} before changing the pin."
                )
            try:
                api.install(_replace)
                storage.install(_replace)
            except BaseException:
                _restore()
                raise
        _Held.count += 1


def acquired() -> Callable[[], None]:
    """`acquire`, returning what undoes it (icelake/local/embedded.py keeps it with its own undos)."""
    acquire()
    return release


def release() -> None:
    """One holder less; the last restores moto."""
    with _LOCK:
        if _Held.count == 0:
            return
        _Held.count -= 1
        if _Held.count == 0:
            _restore()


def _restore() -> None:
    while _undo:
        _undo.pop()()


def installed() -> bool:
    with _LOCK:
        return _Held.count > 0


@contextmanager
def patched() -> Iterator[None]:
    acquire()
    try:
        yield
    finally:
        release()
