"""What to copy: each file the plan copies as a `CopyTask`, made when asked (`Copies`), and
the decision per file: absent at the target (a copy), there and the same (skipped), or there and
different (a conflict, unless the run overwrites)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from icelake.aws.fileio import ObjectInfo
from icelake.errors import (
    TargetConflictError,
)
from icelake.migrate.copy.objects import is_same_copy, known_same
from icelake.migrate.copy.schedule import hot_share, spread_by_prefix
from icelake.migrate.copy.table_storage import is_table_storage
from icelake.migrate.inventory import whole_listing
from icelake.migrate.plan.reads import (
    PlanContext,
)
from icelake.migrate.progress import Phase
from icelake.uris import Mapping, PrefixMap, canonical


@dataclass(frozen=True, slots=True)  # slots: one per file copied, a million for a large table
class CopyTask:
    source: str  # canonical
    info: ObjectInfo
    mapping: Mapping  # the prefix mapping that moves it

    @property
    def target(self) -> str:
        """Made when asked, not held: a million target paths would be 150 MB of the plan."""
        return self.mapping.target + self.source[len(self.mapping.source) :]


class Copies(Sequence[CopyTask]):
    """The files to copy, each made into a `CopyTask` when asked, from the source check's answers
    (path -> what the object is). Not held as tasks: a million of them and their list are 64 MB,
    and they would all exist beside those answers at the end of the plan, its peak."""

    __slots__ = ("_infos", "_paths", "_prefix_map")

    def __init__(self, paths: list[str], infos: dict[str, ObjectInfo | None], prefix_map: PrefixMap) -> None:
        self._paths = paths
        self._infos = infos
        self._prefix_map = prefix_map

    def __len__(self) -> int:
        return len(self._paths)

    @overload
    def __getitem__(self, index: int) -> CopyTask: ...

    @overload
    def __getitem__(self, index: slice) -> list[CopyTask]: ...

    def __getitem__(self, index: int | slice) -> CopyTask | list[CopyTask]:
        if isinstance(index, slice):
            return [self._task(p) for p in self._paths[index]]
        return self._task(self._paths[index])

    def __iter__(self) -> Iterator[CopyTask]:
        return map(self._task, self._paths)

    def spread_by_prefix(self) -> Copies:
        """The same copies in the order that keeps every prefix busy for the whole copy
        (`copy_schedule.spread_by_prefix`: the order S3's per-prefix limits want)."""
        return Copies(spread_by_prefix(self._paths), self._infos, self._prefix_map)

    def prefix_spread(self) -> tuple[int, float]:
        """(how many prefixes the copies read from, the busiest one's share of them)."""
        return hot_share(self._paths)

    def pairs(self) -> Iterator[tuple[str, str]]:
        """(source, target) of every copy, without making its task (a file list, a journal)."""
        mappings = self._prefix_map.mappings
        if len(mappings) != 1:
            return map(self._pair, self._paths)
        # One mapping (the common case): a path inside it is mapped without a match call each.
        inside, target, cut = mappings[0].source + "/", mappings[0].target, len(mappings[0].source)
        return ((p, target + p[cut:]) if p.startswith(inside) else self._pair(p) for p in self._paths)

    def _pair(self, path: str) -> tuple[str, str]:
        mapping = self._prefix_map.match_canonical(path)
        assert mapping is not None
        return path, mapping.target + path[len(mapping.source) :]

    def __eq__(self, other: object) -> bool:  # as a list of the same tasks compares
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, like a list

    def _task(self, path: str) -> CopyTask:
        info, mapping = self._infos[path], self._prefix_map.match_canonical(path)
        assert info is not None and mapping is not None
        return CopyTask(path, info, mapping)


def decide_copies(
    ctx: PlanContext,
    paths: list[str],
    src_info: dict[str, ObjectInfo | None],
    prefix_map: PrefixMap,
    *,
    overwrite: bool,
    first_page: bool = True,
    fresh: bool = False,
) -> tuple[Copies, int]:
    """(copies, how many are already there) of the files at `paths`, present at the source. A
    present target is asked in full: its metadata names the copy's source. Anything else at a
    target key is a conflict, unless `overwrite`. `first_page`, `fresh`: see `target_info`."""
    tasks = Copies(paths, src_info, prefix_map)
    src_io, dst_io = ctx.src_io, ctx.dst_io
    dst_info = target_info(ctx, tasks, prefix_map, first_page=first_page, fresh=fresh)
    # An absent target is a copy; only the targets that are there are compared (a read or two each).
    there = [t for t in tasks if dst_info.get(t.target) is not None] if dst_info else []
    if not there:  # a first migration: every file is a copy, and no second list of them is made
        return tasks, 0

    def same(task: CopyTask) -> bool | None:
        t = dst_info[task.target]
        assert t is not None
        if is_table_storage(task.target):  # None: the copy's 412 settles it, reading its source once
            return known_same(task.info, t)
        return is_same_copy(src_io, task.source, task.info, dst_io, task.target, t)

    same_copy = dict(zip((t.source for t in there), ctx.reads.map(same, there, ctx.workers), strict=True))
    conflicts = sorted(t.target for t in there if same_copy[t.source] is False)
    if conflicts and not overwrite:
        raise TargetConflictError(conflicts)
    left = [p for p in paths if not same_copy.get(p, False)]
    return Copies(left, src_info, prefix_map), sum(v is True for v in same_copy.values())


def target_info(
    ctx: PlanContext, tasks: Copies, prefix_map: PrefixMap, *, first_page: bool = True, fresh: bool = False
) -> dict[str, ObjectInfo | None]:
    """target -> what is there, for the targets that are there or may be (absent ones may be left
    out). One page of each target prefix is read first: a prefix that ends within it (the empty
    target of a first migration) has named every key under it, so only the targets that page
    names are asked about; the targets under bigger prefixes are all asked (`reads.stat`).
    Without `first_page` (an incremental sync: the target holds the table already, so the page
    would settle nothing but on a table of a few hundred files) they are all asked at once: a page
    of the table costs what the table holds where the change may be a single file. `fresh`: every
    target is a table's storage that holds only what icelake writes for this table, a table the
    run created (`CopySettings.fresh_target`): nothing is asked (it takes no listing, and a HEAD a
    file is what the table holds), the copies settle a key found taken by their 412."""
    dst_io, progress = ctx.dst_io, ctx.progress
    mappings = prefix_map.mappings if first_page else []
    pages = {m.target: whole_listing(dst_io, m.target) for m in mappings}
    known = {m: {canonical(uri) for uri, _info in page} for m, page in pages.items() if page is not None}
    if fresh and all(is_table_storage(m.target) for m in prefix_map.mappings):
        asked: list[str] = []  # a table's storage this run created: what is there is what it writes
    elif pages and len(known) == len(pages) and not any(known.values()):
        asked = []  # every target prefix is empty: nothing to ask, and no target path to make
    else:
        asked = [
            t.target
            for t in tasks
            if (names := known.get(t.mapping.target)) is None or canonical(t.target) in names
        ]
    phase = Phase(progress, "check target files")
    if not asked:  # the pages settled every target: the phase is still shown, and done at once
        phase.start(len(tasks))
        phase.advance(len(tasks))
        return {}
    dst_roots = [m.target for m in prefix_map.mappings]
    return ctx.reads.stat(dst_io, asked, dst_roots, ctx.workers, phase=phase, full=True)
