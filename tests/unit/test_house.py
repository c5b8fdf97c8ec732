"""The house stays as issue 41 left it: small modules, no import cycle, short parameter lists and
no function too tangled to read. Each guard names what breaks it and what to do."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest
from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "icelake"
MAX_MODULE_LINES = 500
MAX_MODULES_PER_FOLDER = 15  # a room a newcomer can read by its names (issue 56)
MAX_PARAMETERS = 8
WORST_RANK = "C"  # radon: A-C are fine; D (21+) and worse must be split along their decisions


def _modules(*roots: Path) -> Iterator[Path]:
    for root in roots:
        yield from sorted(root.rglob("*.py")) if root.is_dir() else [root]


def _functions(path: Path) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def parameter_count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Every parameter a caller may pass (self and cls not counted; *args and **kwargs one each)."""
    args = fn.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (args.vararg is not None) + (args.kwarg is not None)


# Every folder of code the repo ships or runs (issue 56): the core, the infrastructure, the thin
# Lambda and Glue entry points, the benchmarks.
SIZED = [CORE, ROOT / "cdk", ROOT / "glue_jobs", ROOT / "lambdas", ROOT / "benchmarks"]


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules(*SIZED)
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these along their concerns (at most {MAX_MODULE_LINES} lines): {long}"


def test_no_folder_of_the_core_holds_more_than_15_modules() -> None:
    crowded = {
        str(folder.relative_to(ROOT)): n
        for folder in [CORE, *sorted(p for p in CORE.rglob("*") if p.is_dir())]
        if (n := len(list(folder.glob("*.py")))) > MAX_MODULES_PER_FOLDER
    }
    assert not crowded, (
        f"group these folders' modules into subpackages named for what they do (at most "
        f"{MAX_MODULES_PER_FOLDER} each): {crowded}"
    )


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def imports() -> dict[str, set[str]]:
    """icelake module -> the icelake modules it imports, lazily inside functions too."""
    graph = grimp.build_graph("icelake", include_external_packages=False)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The guard below can fail: a cycle through three modules, and one beside it that is not
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_among_the_core_modules(imports: dict[str, set[str]]) -> None:
    cycles = _cycles(imports)
    assert not cycles, (
        f"modules that import each other (directly or round a loop): {cycles}; move what both need "
        "to a module below both"
    )


def test_no_import_cycle_among_the_core_packages(imports: dict[str, set[str]]) -> None:
    # icelake.assess and icelake.workflow, icelake.cli and icelake.assess: each a layer, one above
    # the other, never both ways
    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    edges: dict[str, set[str]] = {}
    for module, imported in imports.items():
        edges.setdefault(package(module), set()).update(package(m) for m in imported)
    for name, targets in edges.items():
        targets.discard(name)
    cycles = _cycles(edges)
    assert not cycles, f"packages that import each other: {cycles}; move what both need below both"


def test_no_function_of_the_core_takes_more_than_8_parameters() -> None:
    wide = [
        f"{p.relative_to(ROOT)}:{fn.lineno} {fn.name} ({n})"
        for p in _modules(CORE)
        for fn in _functions(p)
        if (n := parameter_count(fn)) > MAX_PARAMETERS
    ]
    assert not wide, (
        f"group what travels together (a frozen dataclass; the engine's knobs are EngineSettings): {wide}"
    )


def test_no_function_ranks_d_or_worse_in_cyclomatic_complexity() -> None:
    roots = [CORE, ROOT / "cdk", ROOT / "lambdas", ROOT / "glue_jobs", ROOT / "app.py"]
    tangled = [
        f"{p.relative_to(ROOT)}:{block.lineno} {block.fullname} {rank}{block.complexity}"
        for p in _modules(*roots)
        for block in cc_visit(p.read_text())
        if (rank := cc_rank(block.complexity)) > WORST_RANK
    ]
    assert not tangled, f"split these along the decisions they make (radon rank at most C): {tangled}"
