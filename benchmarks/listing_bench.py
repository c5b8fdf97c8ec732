"""What exists at a big table's source, on S3: one listing in a row against ranges side by side.

The plan settles which of a table's files exist by listing their prefixes (`inventory.stat_by_listing`).
A listing's pages come one after another (each names where the next starts), so a prefix of a
million keys is a thousand round trips in a row. On S3 (`FileIO.listing_waits`), a prefix with many
wanted keys is listed as ranges of them side by side (`StartAfter`). This bench runs both on the
same keys, in the same run, against a model of S3's listing: the keys held sorted in memory, pages
of 1,000 served from them, each page waiting `--latency-ms` first (the service's time, which costs
no CPU here, as S3's costs none of the client's). The default shape is the large bench's table: a
million data files in 5,000 partition directories of 200, too many directories for a subdirectory
per listing to be worth it.

Last line: one JSON object, `single_s`, `ranges_s`, `ratio` (single_s / ranges_s) and each side's
requests.
"""

from __future__ import annotations

import argparse
import bisect
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

from icelake.aws.fileio import FileIO, ObjectInfo
from icelake.migrate.inventory import KEYS_PER_PAGE, stat_by_listing
from icelake.uris import canonical


class ModelS3(FileIO):
    """S3's ListObjectsV2 and HEAD as their latency, over keys held sorted in memory (read-only)."""

    def __init__(self, uris: list[str], latency_s: float, *, listing_waits: bool) -> None:
        self.uris = sorted(uris)
        self.latency_s = latency_s
        self.listing_waits = listing_waits
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _request(self, kind: str) -> None:
        with self._lock:
            self.requests[kind] += 1
        time.sleep(self.latency_s)

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        key = canonical(prefix) + "/"
        uris = self.uris
        at = bisect.bisect_right(uris, start_after) if start_after else bisect.bisect_left(uris, key)
        while True:
            self._request("LIST")
            page = [u for u in uris[at : at + KEYS_PER_PAGE] if u.startswith(key)]
            yield from ((u, ObjectInfo(size=1, etag="e")) for u in page)
            if len(page) < KEYS_PER_PAGE:
                return
            at += KEYS_PER_PAGE

    def stat(self, uri: str) -> ObjectInfo | None:
        self._request("HEAD")
        at = bisect.bisect_left(self.uris, uri)
        return ObjectInfo(size=1, etag="e") if at < len(self.uris) and self.uris[at] == uri else None

    def read(self, uri: str) -> bytes:
        raise NotImplementedError("the model serves listings and HEADs only")

    def write(self, uri: str, data: bytes) -> None:
        raise NotImplementedError("the model is read-only")

    def create_exclusive(self, uri: str, data: bytes) -> bool:
        raise NotImplementedError("the model is read-only")

    def delete(self, uri: str) -> None:
        raise NotImplementedError("the model is read-only")


def run(files: int, partitions: int, latency_ms: float, workers: int) -> dict[str, object]:
    root = "s3://bench/warehouse/db/t"
    per = max(1, files // partitions)
    uris = [f"{root}/data/p={i % partitions:05d}/{i:08d}.parquet" for i in range(files)]
    wanted = uris[:-per] + [f"{root}/data/p=00000/gone-{i}.parquet" for i in range(per)]  # some absent
    out: dict[str, object] = {"files": files, "partitions": partitions, "latency_ms": latency_ms}
    for side, waits in (("single", False), ("ranges", True)):
        io = ModelS3(uris, latency_ms / 1000, listing_waits=waits)
        started = time.monotonic()
        found = stat_by_listing(io, wanted, [root], workers)
        out[f"{side}_s"] = round(time.monotonic() - started, 3)
        out[f"{side}_requests"] = dict(io.requests)
        absent = sum(info is None for info in found.values())
        if absent != per:
            raise SystemExit(f"{side}: {absent} keys found absent, {per} expected")
    out["ratio"] = round(float(out["single_s"]) / float(out["ranges_s"]), 2)  # type: ignore[arg-type]
    return out


def main(argv: list[str] | None = None) -> None:
    about = __doc__.split("\n")[0]
    ap = argparse.ArgumentParser(prog="python -m benchmarks.listing_bench", description=about)
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=5_000)
    ap.add_argument("--latency-ms", type=float, default=30.0, help="each request's wait (default 30)")
    ap.add_argument("--workers", type=int, default=16, help="the plan's threads (as `icelake migrate`)")
    args = ap.parse_args(argv)
    print(json.dumps(run(args.files, args.partitions, args.latency_ms, args.workers)))


if __name__ == "__main__":
    main()
