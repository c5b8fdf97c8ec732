"""The order in which test files go to the workers: longest first.

pytest-xdist (`--dist loadfile`) hands a file to whichever worker is free, in the collection's
order, which it first sorts by the number of tests in a file. Files of one long test (the SCD2
property tests, the corpus's workflow into a table bucket, the README's quick start) came last that
way: at the end of a run one worker ran them for 70-80 s while the other had nothing left. Handed
out longest first (the seconds a run measured, in tests/durations.json), what is left at the end is
short, and both workers finish together. xdist's own reordering is off (`--no-loadscope-reorder` in
pyproject.toml), so this order is the one it follows.

Its hooks are tests/conftest.py's. `pytest --record-durations` measures a run's seconds per file
and writes them there (`make test-durations`); a file not measured yet goes by its number of tests.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
SECONDS_PER_UNMEASURED_TEST = 0.5  # a new file's guess until a run measures it


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def measured() -> dict[str, float]:
    """Seconds per test file as last recorded (setup, call and teardown of all its tests)."""
    if not DURATIONS.exists():
        return {}
    seconds: dict[str, float] = json.loads(DURATIONS.read_text())
    return seconds


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write this run's seconds per test file to {DURATIONS.name} (the order files are run in)",
    )


@pytest.hookimpl(trylast=True)  # after pytest groups a module's tests by their fixtures
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seconds = measured()
    tests = Counter(_file(item.nodeid) for item in items)

    def expected(path: str) -> float:
        return seconds.get(path, tests[path] * SECONDS_PER_UNMEASURED_TEST)

    # Stable: a file's tests keep their order. Ties by path, so every worker collects the same order.
    items.sort(key=lambda item: (-expected(_file(item.nodeid)), _file(item.nodeid)))


class _Recorder:
    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[_file(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.testsfailed or not self.seconds:
            return  # a failed or empty run's times are not the suite's
        table = {path: round(s, 1) for path, s in sorted(self.seconds.items())}
        DURATIONS.write_text(json.dumps(table, indent=1) + "\n")


def record_if_asked(config: pytest.Config) -> None:
    """`--record-durations`, recorded where the reports of every worker arrive: the controller
    (or a run without workers)."""
    if config.getoption("--record-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(), "icelake-durations")
