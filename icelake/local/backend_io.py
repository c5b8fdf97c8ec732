"""Writes straight into the embedded S3's store, for seeding a benchmark's large source table.

Publishing a 100,000-file table through the moto server is 100,000 PUTs: 20 minutes on two cores,
spent on HTTP and on the server's request handling, none of which the benchmark measures. These
writes go to moto's S3 backend in this process (the server's own store) with what a PUT through
the server leaves: the bytes, their MD5 ETag and the SHA-256 checksum `S3FileIO.write` sends. Every
other call (reads, listings, conditional writes, deletes) still goes through the server, so the
engine's plan and journal are the ones a real publish makes."""

from __future__ import annotations

from typing import Any

from icelake.aws.fileio import S3FileIO
from icelake.aws.fileio.base import sha256_b64
from icelake.aws.fileio.s3 import split_s3


class BackendS3FileIO(S3FileIO):
    """`S3FileIO` of one account of the embedded AWS whose `write` skips the server (see the module)."""

    def __init__(self, client: Any, account_id: str) -> None:
        super().__init__(client)
        from moto.s3.models import s3_backends

        self.backend = s3_backends[account_id]["aws"]

    def write(self, uri: str, data: bytes) -> None:
        bucket, key = split_s3(uri)
        stored = self.backend.put_object(bucket, key, data, checksum_value=sha256_b64(data))
        stored.checksum_algorithm = "SHA256"
