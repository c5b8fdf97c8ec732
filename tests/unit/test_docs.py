"""docs/statemachines.md is generated from the ASL and must follow every change to it."""

from __future__ import annotations

import json
import re

from tools import asl_diagram


def _state_names(states: dict[str, object]) -> set[str]:
    names = set(states)
    for state in states.values():
        assert isinstance(state, dict)
        inner = state.get("ItemProcessor") or state.get("Iterator")
        if inner:
            names |= _state_names(inner["States"])
        for branch in state.get("Branches", []):
            names |= _state_names(branch["States"])
    return names


def test_diagrams_are_current() -> None:
    assert asl_diagram.OUTPUT.read_text() == asl_diagram.render(), (
        "docs/statemachines.md is stale: run `.venv/bin/python -m tools.asl_diagram`"
    )


def test_every_state_and_transition_is_drawn() -> None:
    for path in asl_diagram.DEFINITIONS.values():
        definition = json.loads(path.read_text())
        drawn = asl_diagram.diagram(definition)
        nodes = set(re.findall(r"\b([A-Za-z][A-Za-z0-9_]*) -->", drawn))
        assert _state_names(definition["States"]) <= nodes | set(re.findall(r"--> (\w+)", drawn))
        for name, state in definition["States"].items():
            if "Next" in state:
                assert f"{name} --> {state['Next']}\n" in drawn + "\n"


def test_choice_labels_are_mermaid_safe() -> None:
    label = asl_diagram._choice_label(
        {"And": [{"Variable": "$.a", "StringEquals": "x:y"}, {"Not": {"Variable": "$.b", "IsPresent": True}}]}
    )
    assert ":" not in label
    assert label == "a == x y and not b present true"
