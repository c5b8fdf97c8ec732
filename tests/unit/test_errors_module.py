"""Every exception class icelake defines lives in icelake/errors.py, so a caller (the CLI, the
state machine's Catch by error name, a test) finds them all in one place."""

from __future__ import annotations

import ast
from pathlib import Path

import icelake.errors

PACKAGE = Path(icelake.errors.__file__).parent


def _exception_classes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            if any(b.endswith(("Error", "Exception")) or b == "NotPatchable" for b in bases):
                found.append(node.name)
    return found


def test_every_exception_class_is_defined_in_the_errors_module() -> None:
    elsewhere = {
        str(path.relative_to(PACKAGE)): classes
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "errors.py" and (classes := _exception_classes(path))
    }
    assert elsewhere == {}, f"move these to icelake/errors.py: {elsewhere}"
    assert len(_exception_classes(PACKAGE / "errors.py")) >= 30  # the module the check reads is the real one
