"""The FileIO of a local file system (`LocalFileIO`): writes that a reader never sees half done
(a temp file beside the target, renamed; `remove_stale_temp_files` clears a killed writer's),
and listings in S3's key order, walked with one stat per file, in a worker process when a
range's walk is CPU (`scan_range`, `ListedRange`)."""

from __future__ import annotations

import os
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from icelake.aws.fileio.base import FileIO, ObjectInfo, R
from icelake.uris import local_path

TEMP_PREFIX = ".icelake-"
_UMASK = os.umask(0o022)  # read once (os.umask can only be read by setting it), then restored
os.umask(_UMASK)


def remove_stale_temp_files(root: str) -> int:
    """Delete the temp files under a local `root` that icelake writers left when they were killed
    (their process is gone); returns how many. Files of live writers are left alone."""
    removed = 0
    for dirpath, _dirs, files in os.walk(local_path(root)):
        for name in files:
            pid = name[len(TEMP_PREFIX) :].split("-", 1)[0]
            if name.startswith(TEMP_PREFIX) and pid.isdigit() and not _alive(int(pid)):
                Path(dirpath, name).unlink(missing_ok=True)
                removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


class LocalFileIO(FileIO):
    def stat(self, uri: str) -> ObjectInfo | None:
        try:
            st = os.stat(local_path(uri))
        except FileNotFoundError:
            return None
        return ObjectInfo(size=st.st_size) if os.path.isfile(local_path(uri)) else None

    def read(self, uri: str) -> bytes:
        return Path(local_path(uri)).read_bytes()

    def read_tail(self, uri: str, nbytes: int) -> bytes:
        with open(local_path(uri), "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - nbytes))
            return fh.read()

    def write(self, uri: str, data: bytes) -> None:
        path = local_path(uri)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # Write beside the target and rename: a reader never sees half a file. The pid in the name
        # lets a later run tell a dead writer's leftovers (`remove_stale_temp_files`).
        fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=os.path.dirname(path))
        try:
            os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; a written file gets the usual mode
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def create_exclusive(self, uri: str, data: bytes) -> bool:
        path = local_path(uri)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True

    def list(self, prefix: str, start_after: str | None = None) -> Iterator[tuple[str, ObjectInfo]]:
        # A key's path as written (file:///x or /x): made canonical, a trailing '/' would be dropped.
        after = start_after.removeprefix("file://") if start_after else None
        for path, size in _scan(local_path(prefix), after):
            yield "file://" + path, ObjectInfo(size=size)

    def parse_in(self, cpu: Executor | None, uri: str, job: Callable[..., R], *args: Any) -> R | None:
        if cpu is None:
            return super().parse_in(cpu, uri, job, *args)
        return cpu.submit(_read_and_parse, job, uri, *args).result()

    def list_range(
        self, prefix: str, start_after: str | None, until: str, cpu: Executor | None = None
    ) -> Iterable[tuple[str, ObjectInfo]]:
        if cpu is None:
            return super().list_range(prefix, start_after, until, cpu)
        # A stat per file is most of a walk's time, and a thread's stat queues for the GIL behind
        # the others: a range is walked in a worker process, and only its keys and sizes come back.
        return ListedRange(*cpu.submit(scan_range, prefix, start_after, until).result())

    def delete(self, uri: str) -> None:
        Path(local_path(uri)).unlink(missing_ok=True)


def _read_and_parse(job: Callable[..., R], uri: str, *args: Any) -> R | None:
    """`LocalFileIO().parse_in` in the worker process: the file is read there."""
    try:
        data = LocalFileIO().read(uri)
    except Exception:
        return None
    return job(uri, data, *args)


@dataclass(frozen=True)
class ListedRange:
    """A range walked in a worker process: its keys, in key order, and their sizes, as they came
    back (a caller that wants only these keys can take them as they are: `inventory`)."""

    keys: list[str]
    sizes: array[int]

    def __iter__(self) -> Iterator[tuple[str, ObjectInfo]]:
        return zip(self.keys, map(ObjectInfo, self.sizes), strict=True)


def scan_range(prefix: str, start_after: str | None, until: str) -> tuple[list[str], array[int]]:
    """`LocalFileIO().list_range(...)` as (keys, sizes), which cross processes cheaply (a million
    ObjectInfos would not): a top-level function, to run in a worker process."""
    keys: list[str] = []
    sizes = array("q")
    after = start_after.removeprefix("file://") if start_after else None
    last = local_path(until)
    for path, size in _scan(local_path(prefix), after):
        if path > last:  # in key order: the first one past `until` ends the range
            break
        keys.append("file://" + path)
        sizes.append(size)
    return keys, sizes


def _scan(directory: str, after: str | None) -> Iterator[tuple[str, int]]:
    """Every file's path under `directory` with its size, in S3's order, after the path `after` if given.
    S3 orders keys as strings: a directory's files come where its name followed by '/' sorts among
    its siblings, so each directory's entries are sorted that way and walked depth first. A stack,
    not recursion: each file is yielded once, not passed up through a generator per level."""
    pending = _sorted_entries(directory, after)  # (key, size; -1 for a directory), the next one on top
    while pending:
        key, size = pending.pop()
        if size < 0:
            pending += _sorted_entries(key[:-1], after)
        else:
            yield key, size


def _sorted_entries(directory: str, after: str | None) -> list[tuple[str, int]]:
    """The files (with their sizes) and directories (their key ends in '/', their size is -1) in
    `directory` after `after`, last first. A million files cost a million stat calls and little
    more: each is asked by its name in the open directory (fstatat), not by its whole path."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # absent, not a directory, unreadable: as os.walk, nothing under it
        return []
    try:
        keyed = _keyed_entries(fd, directory, after)
    finally:
        os.close(fd)
    keyed.sort(key=itemgetter(0), reverse=True)
    return keyed


def _keyed_entries(fd: int, directory: str, after: str | None) -> list[tuple[str, int]]:
    """`_sorted_entries` of the open directory `fd`, unsorted."""
    try:
        with os.scandir(fd) as found:
            entries = list(found)
    except OSError:  # unreadable: as os.walk, nothing under it
        return []
    prefix = directory if directory.endswith("/") else directory + "/"
    keyed: list[tuple[str, int]] = []
    for e in entries:
        path = prefix + e.name
        if not e.is_dir():
            if after is None or path > after:
                keyed.append((path, e.stat().st_size))
        # As os.walk, a linked directory is not followed. A directory's files all sort between its
        # path + '/' and its path + '0' ('/' + 1): one wholly at or before `after` is not read.
        elif not e.is_symlink() and (after is None or path + "0" > after):
            keyed.append((path + "/", -1))
    return keyed
