"""Glue multi-dialect views for the embedded AWS. moto 5.2.5 stores a TableInput as it is given,
so a `ViewDefinition` comes back in the request's shape (ViewDefinitionInput, never checked) and
the table lacks what Glue answers for such a view. This extension, driven by botocore's own Glue
model, refuses a ViewDefinition that is not a ViewDefinitionInput (unknown members, a Dialect
outside the model's enum, a representation without SQL) as Glue does, with
InvalidInputException, and stores what GetTable answers: a `ViewDefinition` of the output shape
(each representation with `IsStale`: false; `ViewVersionId` 1, one more at each update) and
`IsMultiDialectView`: true on the table. tests/functional/test_glue_views_backend.py checks the
answers against the model's shapes.

What it does not do: validate the SQL against its dialect's engine (AWS runs it through Athena or
Spark), or mark a representation stale when a base table changes."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

_ORIGINAL: dict[str, Callable[..., Any]] = {}  # moto's own backend methods


@cache
def _model() -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model("glue")


def _refused(message: str) -> Exception:
    from moto.glue.exceptions import InvalidInputException

    return InvalidInputException("CreateTable", message)


_KINDS: dict[str, type] = {"string": str, "boolean": bool, "long": int, "integer": int, "list": list}
_KINDS |= {"structure": dict, "map": dict}


def _check(shape: Any, value: Any, where: str) -> None:
    """`value` of `shape` (members, enums, element types), else Glue's InvalidInputException."""
    if not _of_kind(value, shape.type_name):
        raise _refused(f"{where}: expected a {shape.type_name}, got {type(value).__name__}")
    if shape.type_name == "structure":
        unknown = sorted(set(value) - set(shape.members))
        if unknown:
            raise _refused(f"{where}: {', '.join(unknown)} not members of {shape.name}")
        for name, member in value.items():
            _check(shape.members[name], member, f"{where}.{name}")
    elif shape.type_name == "list":
        for i, item in enumerate(value):
            _check(shape.member, item, f"{where}[{i}]")
    elif shape.type_name == "string" and shape.enum and value not in shape.enum:
        raise _refused(f"{where}: {value!r} is not one of {', '.join(shape.enum)}")


def _of_kind(value: Any, type_name: str) -> bool:
    return isinstance(value, _KINDS[type_name])


def stored(given: dict[str, Any], version: int) -> dict[str, Any]:
    """A TableInput's ViewDefinition (ViewDefinitionInput) as GetTable answers it (ViewDefinition)."""
    model = _model()
    _check(model.shape_for("ViewDefinitionInput"), given, "TableInput.ViewDefinition")
    representations = given.get("Representations") or []
    if not representations:
        raise _refused("TableInput.ViewDefinition: a multi-dialect view needs at least one representation")
    dialects = [r.get("Dialect") for r in representations]
    if None in dialects or len(set(dialects)) != len(dialects):
        raise _refused("TableInput.ViewDefinition: each representation names its own Dialect, once")
    if any(not r.get("ViewOriginalText") for r in representations):
        raise _refused("TableInput.ViewDefinition: each representation needs its ViewOriginalText")
    output = model.shape_for("ViewDefinition")
    kept = {k: v for k, v in given.items() if k in output.members and k != "Representations"}
    rep_members = model.shape_for("ViewRepresentation").members
    return kept | {
        "ViewVersionId": version,
        "Representations": [
            {k: v for k, v in r.items() if k in rep_members} | {"IsStale": False} for r in representations
        ],
    }


def _shaped(table_input: dict[str, Any], version: int) -> dict[str, Any]:
    if "ViewDefinition" not in table_input:
        return table_input
    shaped = {**table_input, "ViewDefinition": stored(table_input["ViewDefinition"], version)}
    return {"TableType": "VIRTUAL_VIEW", **shaped, "IsMultiDialectView": True}


def create_table(
    self: Any, database_name: str, table_name: str, table_input: dict[str, Any], *args: Any
) -> Any:
    return _ORIGINAL["create_table"](self, database_name, table_name, _shaped(table_input, 1), *args)


def update_table(self: Any, database_name: str, table_name: str, table_input: dict[str, Any]) -> Any:
    if "ViewDefinition" in table_input:
        current = self.get_table(database_name, table_name).as_dict().get("ViewDefinition") or {}
        table_input = _shaped(table_input, int(current.get("ViewVersionId", 0)) + 1)
    return _ORIGINAL["update_table"](self, database_name, table_name, table_input)


def install(replace: Callable[[Any, str, Any], None]) -> None:
    """Wrap moto's Glue backend's create_table and update_table (`replace(owner, name, value)`
    records each change so that it can be undone)."""
    from moto.glue.models import GlueBackend

    for method in (create_table, update_table):
        _ORIGINAL.setdefault(method.__name__, getattr(GlueBackend, method.__name__))
        replace(GlueBackend, method.__name__, method)
