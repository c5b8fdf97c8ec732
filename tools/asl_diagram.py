"""Mermaid diagrams of the state machines, generated from their ASL (the one source of truth).

`python -m tools.asl_diagram` rewrites docs/statemachines.md; `--check` exits 1 when it is stale
(tests/unit/test_docs.py runs the same comparison).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFINITIONS = {
    "Migration (`statemachines/migrate_tables.asl.json`)": ROOT / "statemachines/migrate_tables.asl.json",
    "Ingestion (`statemachines/ingest_source.asl.json`)": ROOT / "statemachines/ingest_source.asl.json",
}
OUTPUT = ROOT / "docs/statemachines.md"
_OPERATORS = {
    "StringEquals": "==",
    "BooleanEquals": "==",
    "NumericEquals": "==",
    "NumericGreaterThan": ">",
    "NumericGreaterThanEquals": ">=",
    "NumericLessThan": "<",
    "NumericLessThanEquals": "<=",
    "IsPresent": "present",
}


def _choice_label(rule: dict[str, Any]) -> str:
    """A short, Mermaid-safe label of a Choice rule (colons end a label in Mermaid)."""
    for combinator in ("And", "Or"):
        if combinator in rule:
            return f" {combinator.lower()} ".join(_choice_label(r) for r in rule[combinator])
    if "Not" in rule:
        return f"not {_choice_label(rule['Not'])}"
    variable = str(rule.get("Variable", "")).removeprefix("$.")
    for key, value in rule.items():
        if key not in ("Variable", "Next"):
            op = _OPERATORS.get(key.removesuffix("Path"), key)
            return f"{variable} {op} {json.dumps(value)}".replace(":", " ").replace('"', "")
    return variable


def _edges(states: dict[str, Any], indent: str) -> Iterator[str]:
    for name, state in states.items():
        kind = state["Type"]
        inner = state.get("ItemProcessor") or state.get("Iterator")
        if inner:
            yield f"{indent}state {name} {{"
            yield f"{indent}    [*] --> {inner['StartAt']}"
            yield from _edges(inner["States"], indent + "    ")
            yield f"{indent}}}"
        for index, branch in enumerate(state.get("Branches", [])):
            yield f"{indent}state {name}_branch{index} {{"
            yield f"{indent}    [*] --> {branch['StartAt']}"
            yield from _edges(branch["States"], indent + "    ")
            yield f"{indent}}}"
            yield f"{indent}{name} --> {name}_branch{index}"
        if kind == "Choice":
            yield f"{indent}state {name} <<choice>>"
            for rule in state.get("Choices", []):
                yield f"{indent}{name} --> {rule['Next']}: {_choice_label(rule)}"
            if "Default" in state:
                yield f"{indent}{name} --> {state['Default']}: otherwise"
        if "Next" in state:
            yield f"{indent}{name} --> {state['Next']}"
        if state.get("End") or kind in ("Succeed", "Fail"):
            yield f"{indent}{name} --> [*]"
        for catch in state.get("Catch", []):
            errors = ", ".join(catch["ErrorEquals"])
            yield f"{indent}{name} --> {catch['Next']}: catch {errors}"


def diagram(definition: dict[str, Any]) -> str:
    lines = ["stateDiagram-v2", f"    [*] --> {definition['StartAt']}", *_edges(definition["States"], "    ")]
    return "\n".join(lines)


def render() -> str:
    parts = [
        "# The state machines",
        "",
        "Generated from the ASL files by `python -m tools.asl_diagram`; do not edit by hand "
        "(a test fails when this page is stale).",
    ]
    for title, path in DEFINITIONS.items():
        parts += ["", f"## {title}", "", "```mermaid", diagram(json.loads(path.read_text())), "```"]
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run `python -m tools.asl_diagram`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
