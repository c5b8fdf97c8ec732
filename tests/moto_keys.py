"""Fault injection into the embedded AWS's S3 (moto runs in this process)."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from moto.s3.models import s3_backends

from icelake.aws.fileio import split_s3


def damage_recorded_checksum(uri: str) -> None:
    """Make the checksum S3 recorded for an object disagree with its bytes (as if the object were
    damaged at rest): every account's backend is searched, since roles map to accounts."""
    bucket, key = split_s3(uri)
    for regions in s3_backends.values():
        for backend in regions.values():
            if bucket in backend.buckets and key in backend.buckets[bucket].keys:
                fake = backend.buckets[bucket].keys[key]
                assert fake.checksum_value, f"{uri} has no recorded checksum to damage"
                raw = bytearray(base64.b64decode(fake.checksum_value))
                raw[0] ^= 0xFF
                fake.checksum_value = base64.b64encode(bytes(raw)).decode()
                return
    raise LookupError(f"{uri} is not in the embedded S3")


def _fake_key(uri: str) -> Any:
    bucket, key = split_s3(uri)
    for regions in s3_backends.values():
        for backend in regions.values():
            if bucket in backend.buckets and key in backend.buckets[bucket].keys:
                return backend.buckets[bucket].keys[key]
    raise LookupError(f"{uri} is not in the embedded S3")


def damage_bytes(uri: str) -> None:
    """Flip a byte of an object at rest, its recorded ETag and checksum left as they were."""
    fake = _fake_key(uri)
    _ = fake.etag  # the MD5 of the bytes as written, computed before they change
    raw = bytearray(fake.value)
    raw[len(raw) // 2] ^= 0xFF
    fake.value = bytes(raw)


def give_etag_no_md5(uri: str) -> None:
    """Give an object the kind of ETag an SSE-KMS or SSE-C object has: not the MD5 of its bytes."""
    fake = _fake_key(uri)
    fake._etag = hashlib.md5(fake.etag.encode()).hexdigest()
