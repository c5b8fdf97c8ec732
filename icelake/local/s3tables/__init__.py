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

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from icelake.local.patching import Patches
from icelake.local.s3tables import api, storage

MOTO_VERSION = "5.2.5"  # the patch points below were read on this version only

_PATCHES = Patches()


def acquire() -> None:
    """Install the S3 Tables patches (the first call) or count one more holder."""
    with _PATCHES.lock:
        if _PATCHES.holders == 0:
            import moto

            if moto.__version__ != MOTO_VERSION:
                raise RuntimeError(
                    f"icelake's S3 Tables patches were verified on moto=={MOTO_VERSION}; installed: "
                    f"{moto.__version__}. Re-check the patch points in {__name__} before changing the pin."
                )
        _PATCHES.acquire(_install)


def _install() -> None:
    api.install(_PATCHES.replace)
    storage.install(_PATCHES.replace)


def acquired() -> Callable[[], None]:
    """`acquire`, returning what undoes it (icelake/local/embedded.py keeps it with its own undos)."""
    acquire()
    return release


def release() -> None:
    """One holder less; the last restores moto."""
    _PATCHES.release()


def installed() -> bool:
    return _PATCHES.held()


@contextmanager
def patched() -> Iterator[None]:
    acquire()
    try:
        yield
    finally:
        release()
