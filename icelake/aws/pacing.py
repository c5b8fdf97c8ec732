"""S3 requests paced per prefix, with the pace shared by every icelake process of a host.

S3 limits request rates per key prefix (3,500 writes and 5,500 reads a second, more once it has
split a busy prefix) and answers `503 SlowDown` above them. botocore's adaptive retry mode slows a
whole *client* down on any throttle, so one hot prefix used to slow the copies of every other; and
each client learned on its own, so the 24 tasks of an executor each pushed the prefix again.

Here every S3 request of an icelake client passes through two botocore hooks (`install`):
- `before-send`: a request for a prefix that has been throttled waits for that prefix's next slot
  (`1 / rate` after the previous one), every attempt, botocore's retries included;
- `needs-retry`: a 503 cuts the prefix's rate (multiplicatively, once per `CUT_SPACING_S`; the first
  cut starts from the rate the prefix was being sent at) and asks for the request again, paced, with
  no attempt limit while the prefix still answers others (a SlowDown never fails a table); any
  answer that is not a 503 lets the rate grow back (additively, `GROWTH` of it per second).
Reads (GET, HEAD) and writes (PUT, POST, DELETE) have separate lanes, as S3 has separate limits. A
prefix is the request's host and path up to its last '/', or a listing's Prefix.

The lanes live in a small table in a file under the temp directory, mapped into every process that
uses it and locked while read and written (`fcntl.flock`, plus a thread lock: flock does not order
the threads of one process). So the threads of a Lambda and the task processes of a Spark executor
pace each prefix together. Prefixes hash into `SLOTS` slots; two prefixes in one slot share a pace
(rare, and only ever slower). A lane idle for `IDLE_RESET_S` starts over, unthrottled.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import struct
import tempfile
import threading
import time
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

SLOTS = 4096
# A slot: its tag, then the lane's fields (indices below).
SLOT = struct.Struct("<Qddddddd")
RATE, NEXT_AT, LAST_CUT, LAST_OK, WINDOW_START, SENT, SENT_BEFORE = range(7)
CUT = 0.85  # a throttled prefix's rate is multiplied by this
CUT_SPACING_S = 0.25  # SlowDowns within this after a cut are the same overshoot: one cut
GROWTH = 0.05  # per second of sending, the rate grows by this share of itself
MIN_RATE = 1.0  # requests a second: never slower
GIVE_UP_S = 300.0  # a prefix that answered nothing but 503 for this long is down, not busy
IDLE_RESET_S = 60.0
ENV_FILE = "ICELAKE_PACING_FILE"
READS = frozenset({"GET", "HEAD"})


def lane_of(method: str, url: str) -> bytes:
    """The lane a request belongs to: read or write, host, and prefix (listing: its Prefix)."""
    parts = urlsplit(url)
    path = unquote(parts.path)
    if parts.query and "list-type" in parts.query:
        prefix = parse_qs(parts.query).get("prefix", [""])[0]
        path = f"{path.rstrip('/')}/{prefix}"
    kind = "r" if method in READS else "w"
    return f"{kind}|{parts.netloc}|{path.rpartition('/')[0]}".encode()


class Pacer:
    """The lanes' table, in a file mapped into this process."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            size = SLOTS * SLOT.size
            if os.fstat(fd).st_size < size:
                os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self._file = open(path, "rb")  # noqa: SIM115 (held for flock as long as the map is)
        self.cuts = 0  # this process's, for reports
        self.paced_retries = 0

    def _locked(self) -> Any:
        pacer = self

        class _Held:
            def __enter__(self) -> None:
                pacer._lock.acquire()
                fcntl.flock(pacer._file, fcntl.LOCK_EX)

            def __exit__(self, *exc: object) -> None:
                fcntl.flock(pacer._file, fcntl.LOCK_UN)
                pacer._lock.release()

        return _Held()

    def _slot(self, lane: bytes) -> tuple[int, int]:
        digest = hashlib.blake2b(lane, digest_size=8).digest()
        tag = int.from_bytes(digest, "little") | 1  # never 0: 0 marks an empty slot
        return (tag % SLOTS) * SLOT.size, tag

    def _read(self, at: int, tag: int, now: float) -> list[float]:
        got = list(SLOT.unpack_from(self._map, at))
        lane = got[1:]
        if got[0] != tag or now - max(lane[LAST_OK], lane[NEXT_AT], lane[WINDOW_START]) > IDLE_RESET_S:
            return [0.0, 0.0, 0.0, now, now, 0.0, 0.0]  # rate 0: not throttled
        return lane

    def _write(self, at: int, tag: int, lane: list[float]) -> None:
        SLOT.pack_into(self._map, at, tag, *lane)

    def rate(self, lane_key: bytes) -> float:
        """The lane's pace in requests a second; 0 when it is not paced."""
        at, tag = self._slot(lane_key)
        with self._locked():
            return self._read(at, tag, time.monotonic())[RATE]

    def wait_turn(self, lane_key: bytes) -> float:
        """Take the lane's next slot; the seconds to wait for it (0 when the lane is unthrottled)."""
        at, tag = self._slot(lane_key)
        now = time.monotonic()
        with self._locked():
            lane = self._read(at, tag, now)
            if now - lane[WINDOW_START] >= 1.0:  # sends of this second and the last: the first cut's base
                lane[WINDOW_START], lane[SENT_BEFORE], lane[SENT] = now, lane[SENT], 0.0
            lane[SENT] += 1
            wait = 0.0
            rate = lane[RATE]
            if rate > 0:
                start = max(now, lane[NEXT_AT])
                lane[NEXT_AT] = start + 1.0 / rate
                lane[RATE] = rate + GROWTH  # GROWTH x rate a second, at `rate` sends a second
                wait = start - now
            self._write(at, tag, lane)
        return wait

    def answered(self, lane_key: bytes, status: int) -> float | None:
        """After an attempt: None, or (a 503) the seconds to wait before sending it again."""
        at, tag = self._slot(lane_key)
        now = time.monotonic()
        with self._locked():
            lane = self._read(at, tag, now)
            if status != 503:
                lane[LAST_OK] = now
                self._write(at, tag, lane)
                return None
            if now - lane[LAST_OK] > GIVE_UP_S:
                return None  # botocore's own retries decide
            if now - lane[LAST_CUT] >= CUT_SPACING_S:
                if lane[RATE] > 0:
                    base = lane[RATE]
                else:  # what the prefix was sent at: this second's sends and the last second's
                    span = now - lane[WINDOW_START] + (1.0 if lane[SENT_BEFORE] else 0.0)
                    base = (lane[SENT] + lane[SENT_BEFORE]) / max(span, 0.05)
                lane[RATE] = max(MIN_RATE, CUT * base)
                lane[LAST_CUT] = now
                self.cuts += 1
            lane[NEXT_AT] = max(lane[NEXT_AT], now) + 1.0 / lane[RATE]  # the retry queues behind
            self._write(at, tag, lane)
            self.paced_retries += 1
            return 0.0  # before-send waits for the slot


_PACER: Pacer | None = None
_PACER_LOCK = threading.Lock()


def pacer() -> Pacer:
    """This process's view of the host's lanes (the file named by ICELAKE_PACING_FILE, else one
    per user in the temp directory)."""
    global _PACER  # noqa: PLW0603 (one map per process, made on first use)
    with _PACER_LOCK:
        if _PACER is None:
            default = os.path.join(tempfile.gettempdir(), f"icelake-s3-pacing-{os.getuid()}.bin")
            _PACER = Pacer(os.environ.get(ENV_FILE) or default)
        return _PACER


def _before_send(request: Any, **_: Any) -> None:
    wait = pacer().wait_turn(lane_of(request.method, request.url))
    if wait > 0:
        time.sleep(wait)


def _needs_retry(response: Any = None, request_dict: Any = None, **_: Any) -> float | None:
    if response is None or request_dict is None:
        return None  # no answer (a connection error): botocore's retries decide
    return pacer().answered(lane_of(request_dict["method"], request_dict["url"]), response[0].status_code)


def install(core: Any) -> None:
    """Pace every S3 request of the clients `core` (a botocore session) creates. The retry hook is
    registered first so that its answer for a 503 wins over botocore's attempt limit."""
    events = core.get_component("event_emitter")
    events.register("before-send.s3", _before_send, unique_id="icelake-s3-pacing-send")
    events.register_first("needs-retry.s3", _needs_retry, unique_id="icelake-s3-pacing-retry")
