"""URI normalisation and prefix mapping on path boundaries.

Iceberg writers spell the same place several ways (`file:/x`, `file:///x`, `/x`; `s3a://` and
`s3://`). Matching happens on a canonical form; the mapped path keeps the user's target spelling
and the untouched remainder of the original path (never URL-decoded: `p=x%2Fy` stays as written).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

from icelake.errors import InvalidMappingError, UnmappedPrefixesError

_S3_ALIASES = ("s3a://", "s3n://")


def canonical(uri: str) -> str:
    """Canonical spelling used for comparisons only. No trailing slash (except a bare root)."""
    if uri.startswith("file:///") and uri.find("//", 7) < 0 and uri[-1] != "/":
        # Already canonical (a file: URI's dot segments are kept as written): what local listings
        # yield, a million times for a big table, returned as is rather than as a new string.
        return uri
    if uri.startswith("/") and "//" not in uri and "/." not in uri and uri[-1] != "/":
        # A plain absolute path already normal (abspath would return it as is), as Iceberg's
        # Hadoop tables write every path: a million of them in a big table's manifests.
        return "file://" + uri
    if uri.startswith(_S3_ALIASES):
        uri = "s3://" + uri.split("://", 1)[1]
    elif uri.startswith("file:"):
        rest = uri[len("file:") :]
        if rest.startswith("//localhost/"):
            rest = rest[len("//localhost") :]
        rest = "/" + rest.lstrip("/")
        uri = "file://" + rest
    elif "://" not in uri:
        if uri.startswith("/") and "//" not in uri and "/." not in uri:
            uri = "file://" + uri  # already normal (abspath would return it as is): the common case
        else:  # abspath keeps exactly two leading slashes (POSIX leaves their meaning open; Linux's is /)
            uri = "file:///" + os.path.abspath(uri).lstrip("/")
    if uri.endswith("/") and not uri.endswith("://") and uri.count("/") > 3:
        scheme, _, rest = uri.partition("://")  # trailing slashes go, the scheme's own never
        uri = f"{scheme}://{rest.rstrip('/')}"
    return uri


def is_local(uri: str) -> bool:
    return canonical(uri).startswith("file://")


def local_path(uri: str) -> str:
    """The file-system path of a local URI."""
    return canonical(uri)[len("file://") :]


def target_spelling(uri: str) -> str:
    """How a user-given target prefix is written into metadata: local paths become file:/// URIs."""
    c = canonical(uri)
    return c if c.startswith("file://") else uri.rstrip("/")


def is_under(path: str, prefix: str) -> bool:
    """True when `path` is `prefix` itself or inside it, on a path boundary (canonical forms)."""
    return path == prefix or path.startswith(prefix + "/")


def parent(uri: str) -> str:
    c = canonical(uri)
    scheme, rest = c.split("://", 1)
    return f"{scheme}://{posixpath.dirname(rest)}"


def source_prefixes(source_metadata: str, mapped_sources: Iterable[str]) -> list[str]:
    """Where a source table's files live, which icelake never writes or deletes: the table's
    directory (a metadata file is at `<location>/metadata/<file>`) and every mapped source prefix."""
    return [source_metadata.rsplit("/", 2)[0], *mapped_sources]


@dataclass(frozen=True)
class Mapping:
    source: str  # canonical
    target: str  # as written into target metadata


class PrefixMap:
    """Longest-prefix mapping from source prefixes to target prefixes."""

    def __init__(self, mappings: Iterable[tuple[str, str]]) -> None:
        by_source: dict[str, Mapping] = {}
        for src, dst in mappings:
            if not src.strip() or not dst.strip():
                raise InvalidMappingError(f"empty prefix in mapping {src!r}={dst!r}; use --map SRC=DST")
            m = Mapping(canonical(src), target_spelling(dst))
            previous = by_source.get(m.source)
            if previous is not None and previous.target != m.target:
                raise InvalidMappingError(
                    f"{src} is mapped twice ({previous.target} and {m.target}); "
                    "keep one --map per source prefix"
                )
            by_source[m.source] = m
        # Longest source first, so nested prefixes win over their parents.
        self._mappings = sorted(by_source.values(), key=lambda m: len(m.source), reverse=True)
        # (source, source + "/", mapping): `is_under` inlined, its prefix made once, not once per
        # lookup (a big table's rewrite maps a million paths).
        self._inside = [(m.source, m.source + "/", m) for m in self._mappings]

    @property
    def mappings(self) -> list[Mapping]:
        return list(self._mappings)

    def match(self, uri: str) -> Mapping | None:
        return self.match_canonical(canonical(uri))

    def match_canonical(self, c: str) -> Mapping | None:
        """`match` for a path already in its canonical spelling (a plan's million file paths are
        made canonical once, when read from the manifests, not again at every lookup)."""
        for source, inside, m in self._inside:
            if c.startswith(inside) or c == source:
                return m
        return None

    def map(self, uri: str) -> str | None:
        """The target URI for `uri`, or None when no mapping covers it."""
        c = canonical(uri)
        m = self.match_canonical(c)
        return None if m is None else m.target + c[len(m.source) :]

    def require(self, uri: str) -> str:
        """The target URI for `uri`; an unmapped path is an error (plans check this up front)."""
        mapped = self.map(uri)
        if mapped is None:
            raise UnmappedPrefixesError({uri: 1})
        return mapped

    def under_any_source(self, uri: str) -> bool:
        return self.match(uri) is not None


_URI_START = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://|file:/|/)")


def parse_map_option(value: str) -> tuple[str, str]:
    """`SRC=DST` from the command line: split at the first '=' that is followed by a URI or path."""
    for i, ch in enumerate(value):
        if ch == "=" and i > 0 and _URI_START.match(value[i + 1 :]):
            return value[:i], value[i + 1 :]
    raise InvalidMappingError(
        f"--map {value!r} is not SRC=DST with two URIs (e.g. --map s3://old/data=s3://new/data)"
    )
