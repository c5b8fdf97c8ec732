"""Avro's primitive values as fastavro writes them: zigzag varints (encoded, read, skipped by the
regex engine), and a skipper for each primitive type that checks the bytes are the ones fastavro
would write (else `NotPatchable`). Each skipper carries the regular expression of what it accepts
(`pattern_of`), so that `avro_binary` can match a run of fields in one call; these are the hot
loops of reading and rewriting a manifest."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from icelake.errors import NotPatchable

# datetime.date(1970, 1, 1).toordinal(), and the ordinals datetime.date accepts.
_DAYS_SHIFT = 719163
_MIN_ORDINAL, _MAX_ORDINAL = 1, 3652059

Skip = Callable[[bytes, int], int]


def zigzag(n: int) -> bytes:
    """`n` as a zigzag varint: from a table for the lengths and counts a rewrite writes a million
    times (each path's length), else encoded."""
    if 0 <= n < _ZIGZAG_TABLE_SIZE:
        return _ZIGZAG[n]
    return _zigzag(n)


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_ZIGZAG_TABLE_SIZE = 8192  # every length whose varint is at most two bytes
_ZIGZAG = [_zigzag(n) for n in range(_ZIGZAG_TABLE_SIZE)]


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint as fastavro writes it (minimal, at most 64 bits); anything else is refused."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    start = pos
    n = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    _check_varint_end(b, pos - start)
    return (n >> 1) ^ -(n & 1), pos


def _check_varint_end(last: int, length: int) -> None:
    if last == 0 or length > 10 or (length == 10 and last > 1):
        raise NotPatchable("varint not in minimal 64-bit form")


# One varint as fastavro writes it: a single byte, or continuation bytes ending in a non-zero byte
# (minimal form), at most 10 bytes of which the last holds bit 63 only.
VARINT = rb"(?:[\x00-\x7f]|[\x80-\xff]{1,8}[\x01-\x7f]|[\x80-\xff]{9}\x01)"


@lru_cache(maxsize=512)
def _varints(count: int) -> re.Pattern[bytes]:
    return re.compile(VARINT + b"{%d}" % count)


def skip_varints(buf: bytes, pos: int, count: int) -> int:
    """Past `count` varints. Matched by the regex engine: the statistics maps of every manifest
    entry are runs of varints, and a Python loop over their bytes was most of a manifest's cost.
    A varint boundary is where a byte below 0x80 is, so each repetition matches one way only."""
    if count <= 0:
        return pos
    if count > len(buf) - pos:  # a varint is a byte at least; a damaged count may exceed what a
        raise NotPatchable("varints past the end")  # pattern can repeat (OverflowError)
    found = _varints(count).match(buf, pos)
    if found is None:
        _skip_varints_slowly(buf, pos, count)  # raises what is wrong: the end, or a bad varint
        raise NotPatchable("varints")  # pragma: no cover - the slow path found them all valid
    return found.end()


def _skip_varints_slowly(buf: bytes, pos: int, count: int) -> int:
    for _ in range(count):
        b = buf[pos]
        pos += 1
        if b & 0x80:
            start = pos - 1
            while b & 0x80:
                b = buf[pos]
                pos += 1
            _check_varint_end(b, pos - start)
    return pos


def _skip_long(buf: bytes, pos: int) -> int:
    if buf[pos] < 0x80:
        return pos + 1
    return skip_varints(buf, pos, 1)


def _skip_bytes(buf: bytes, pos: int) -> int:
    n, pos = read_long(buf, pos)
    if n < 0 or pos + n > len(buf):
        raise NotPatchable("bad bytes length")
    return pos + n


def _skip_string(buf: bytes, pos: int) -> int:
    n, start = read_long(buf, pos)
    end = start + n
    if n < 0 or end > len(buf):
        raise NotPatchable("bad string length")
    if n:
        buf[start:end].decode()  # fastavro refuses invalid UTF-8: so must the copy
    return end


def skip_int_bytes_pairs(buf: bytes, pos: int, n: int) -> int:
    """`n` {key: int, value: bytes} records: the lower and upper bounds maps."""
    for _ in range(n):
        if buf[pos] < 0x80:
            pos += 1
        else:
            pos = skip_varints(buf, pos, 1)
        size = buf[pos]
        if size < 0x80:  # a length below 64: its varint is one byte
            if size & 1:
                raise NotPatchable("negative bytes length")
            pos += 1 + (size >> 1)
        else:
            pos = _skip_bytes(buf, pos)
    return pos


def _skip_boolean(buf: bytes, pos: int) -> int:
    if buf[pos] > 1:
        raise NotPatchable("boolean byte is not 0 or 1")
    return pos + 1


def _skip_float(buf: bytes, pos: int) -> int:
    # A float goes through a C double in fastavro: a NaN may come back with another payload.
    if (
        (buf[pos + 3] & 0x7F) == 0x7F
        and (buf[pos + 2] & 0x80)
        and (buf[pos + 2] & 0x7F or buf[pos + 1] or buf[pos])
    ):
        raise NotPatchable("float NaN")
    return pos + 4


def _skip_double(buf: bytes, pos: int) -> int:
    return pos + 8


def skip_null(buf: bytes, pos: int) -> int:
    return pos


def skip_date(buf: bytes, pos: int) -> int:
    days, end = read_long(buf, pos)
    if not _MIN_ORDINAL <= days + _DAYS_SHIFT <= _MAX_ORDINAL:
        raise NotPatchable("date fastavro cannot read")
    return end


PRIMITIVES: dict[str, Skip] = {
    "null": skip_null,
    "boolean": _skip_boolean,
    "int": _skip_long,
    "long": _skip_long,
    "float": _skip_float,
    "double": _skip_double,
    "bytes": _skip_bytes,
    "string": _skip_string,
}


# Regular expressions of the encodings a skipper accepts, for the common shapes only: a run of
# fields whose skippers all have one is skipped by one match of their concatenation (one C call
# per record instead of a Python call per field, most of what reading a manifest entry cost).
# Each pattern matches only byte strings its skipper accepts whole, so a match ends where the
# skipper would end (an Avro value's encoding is self-delimiting: there is one way to split a
# match). What a pattern leaves out (strings of 64 bytes or more, non-ASCII strings, arrays of
# 64 items or more, dates before 1947 or after 4840, floats, enums) goes to the skippers, which
# read or refuse it as before.
ANY_BYTE = rb"[\x00-\xff]"
SHORT = range(64)  # lengths and counts whose varint is one byte: (2 * n).to_bytes()


def _length_prefixed(unit: bytes, below: int = len(SHORT)) -> bytes:
    """A length below `below` (at most 64) and that many `unit`s: bytes (any) or strings (ASCII:
    valid UTF-8)."""
    lengths = SHORT[:below]
    return b"(?:" + b"|".join(re.escape(zigzag(n)) + unit + b"{%d}" % n for n in lengths) + b")"


# A bound of the statistics maps: Iceberg truncates string and binary bounds to 16 bytes, and
# other types' bounds are at most that. The pattern is kept short: it is repeated for every
# item count of two maps, and compiling it is paid once per schema in every process.
BOUND_ITEM = VARINT + _length_prefixed(ANY_BYTE, below=17)


# A date fastavro can read whatever its bytes: one or two varint bytes (|days| <= 8192), or three
# whose first is even (zigzag's sign bit clear: 8,192 to 1,048,575 days, up to the year 4840).
_EVEN_CONTINUATION = b"[" + b"".join(re.escape(bytes([b])) for b in range(0x80, 0x100, 2)) + b"]"
_DATE = rb"(?:[\x00-\x7f]|[\x80-\xff][\x01-\x7f]|" + _EVEN_CONTINUATION + rb"[\x80-\xff][\x01-\x7f])"


def with_pattern(skip: Skip, pattern: bytes | None) -> Skip:
    if pattern is not None:
        skip.pattern = pattern  # type: ignore[attr-defined]
    return skip


def pattern_of(skip: Skip) -> bytes | None:
    """The regular expression of what `skip` accepts (a part of it), if it has one."""
    return getattr(skip, "pattern", None)


for _skip, _pattern in [
    (skip_null, b""),
    (_skip_boolean, rb"[\x00\x01]"),
    (_skip_long, VARINT),
    (_skip_double, ANY_BYTE + b"{8}"),
    (_skip_bytes, _length_prefixed(ANY_BYTE)),
    (_skip_string, _length_prefixed(rb"[\x00-\x7f]")),
    (skip_date, _DATE),
]:
    with_pattern(_skip, _pattern)
