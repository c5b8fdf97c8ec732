"""Local listings are S3's listings: the same keys, in the same order, from the same StartAfter.
The inventory's ranged listings (`inventory._ranges`) stop at the first key past a range, which
is only right when both list in S3's order."""

from __future__ import annotations

from pathlib import Path

from icelake.aws.clients import new_session
from icelake.aws.fileio import LocalFileIO, S3FileIO
from icelake.local.moto_server import embedded_aws

# Names around the characters a directory's '/' sorts between ('-' and '.' before it, '0' after)
KEYS = ["a-c", "a.b", "a/b-1", "a/b/y", "a/b/z", "a/x", "a0", "b", "zz/q/r", "part=1/f", "part=10/f"]


def test_local_and_s3_listings_give_the_same_keys_in_the_same_order_from_any_start(tmp_path: Path) -> None:
    for key in KEYS:
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(key.encode())
    with embedded_aws():
        s3 = new_session().client("s3")
        s3.create_bucket(Bucket="order")
        for key in KEYS:
            s3.put_object(Bucket="order", Key=f"t/{key}", Body=key.encode())
        local, remote = LocalFileIO(), S3FileIO(s3)

        def listed(io: LocalFileIO | S3FileIO, root: str, after: str | None) -> list[tuple[str, int]]:
            start = f"{root}/{after}" if after is not None else None
            found = io.list(root, start_after=start)
            return [(uri.removeprefix(f"{root}/"), info.size) for uri, info in found]

        everything = listed(remote, "s3://order/t", None)
        assert [k for k, _ in everything] == sorted(KEYS)
        for after in [None, *KEYS, "a/", "a/b", "part=1", "part=1/g", "zz"]:
            s3_keys = listed(remote, "s3://order/t", after)
            assert listed(local, f"file://{tmp_path}", after) == s3_keys, after
            assert s3_keys == [(k, n) for k, n in everything if after is None or k > after]
