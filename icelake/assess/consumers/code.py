"""Code kept in S3: a Glue job's script (its ScriptLocation) and every file under the request's
`consumers.code_prefixes` (MWAA's DAG folder, or any other), read whole and scanned line by line.
A file that is not text (a zip, a wheel, a jar) or is larger than MAX_BYTES is listed unread."""

from __future__ import annotations

from functools import partial
from typing import Any

from icelake.assess.consumers.context import ScanContext, all_pages
from icelake.assess.consumers.model import Consumer, Unread

MAX_BYTES = 10 * 1024 * 1024  # a DAG or a job script is kilobytes; past this it is not code


def split_uri(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.partition("://")[2].partition("/")
    return bucket, key


def object_arn(uri: str) -> str:
    bucket, key = split_uri(uri)
    return f"arn:aws:s3:::{bucket}/{key}"


def read_text(ctx: ScanContext, consumer: Consumer, uri: str, what: str) -> str | None:
    """The object's text, or None with the consumer listed unread (denied, absent, binary, too
    large)."""
    bucket, key = split_uri(uri)
    s3 = ctx.client("s3")
    permission = f"s3:GetObject on {object_arn(uri)}"
    answer: Any = ctx.attempt(consumer, what, permission, lambda: s3.get_object(Bucket=bucket, Key=key))
    if answer is None:
        return None
    length = int(answer.get("ContentLength") or 0)
    if length > MAX_BYTES:
        answer["Body"].close()
        _not_scanned(ctx, consumer, what, "TooLarge", f"{length:,} bytes, over {MAX_BYTES:,}")
        return None
    body: bytes = answer["Body"].read()
    if b"\x00" in body[:8192]:
        _not_scanned(ctx, consumer, what, "NotText", "a binary file (zip, wheel, jar): not scanned")
        return None
    return body.decode("utf-8", errors="replace")


def _not_scanned(ctx: ScanContext, consumer: Consumer, what: str, error: str, message: str) -> None:
    ctx.not_read(Unread(consumer=consumer, what=what, error=error, message=message))


def scan_code_prefixes(ctx: ScanContext, prefixes: list[str]) -> None:
    """Every object under each prefix, listed (ListObjectsV2) and read on `ctx.workers` threads."""
    uris: list[str] = []
    s3 = ctx.client("s3")
    for prefix in prefixes:
        bucket, key = split_uri(prefix)
        listing = Consumer(kind="code_file", name=prefix, arn=object_arn(prefix))
        pages = ctx.attempt(
            listing,
            f"the objects under {prefix}",
            f"s3:ListBucket on arn:aws:s3:::{bucket} (prefix {key or '*'})",
            partial(all_pages, s3, "list_objects_v2", Bucket=bucket, Prefix=key),
        )
        for page in pages or []:
            uris += [
                f"s3://{bucket}/{o['Key']}" for o in page.get("Contents", []) if not o["Key"].endswith("/")
            ]

    def one(uri: str) -> None:
        consumer = Consumer(kind="code_file", name=uri, arn=object_arn(uri))
        text = read_text(ctx, consumer, uri, f"the file {uri}")
        if text is not None:
            ctx.counted(consumer)
            ctx.scan(consumer, "file", text, lines=True)

    ctx.each(uris, one)
