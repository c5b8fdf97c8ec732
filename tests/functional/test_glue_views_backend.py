"""The embedded AWS's Glue multi-dialect views (icelake/local/glue_views.py), checked against the
service model's shapes in botocore's own JSON: the raw GetTable answer member by member against
the `Table` output shape, and what Glue refuses refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from icelake.local.embedded import moto_patches
from icelake.local.moto_server import embedded_aws
from tests.lake import SOURCE_ACCOUNT, Lake, build_lake

MODEL = botocore.session.get_session().get_service_model("glue")
_TYPES = {"string": str, "boolean": bool, "integer": int, "long": int, "list": list, "structure": dict}
_TYPES |= {"map": dict, "timestamp": (int, float, str)}
DEFINITION = {
    "IsProtected": True,
    "Definer": f"arn:aws:iam::{SOURCE_ACCOUNT}:role/definer",
    "SubObjects": [f"arn:aws:glue:us-east-1:{SOURCE_ACCOUNT}:table/sales/orders"],
    "Representations": [
        {"Dialect": "SPARK", "DialectVersion": "3.5", "ViewOriginalText": "SELECT id FROM sales.orders"},
        {"Dialect": "ATHENA", "DialectVersion": "3", "ViewOriginalText": "SELECT id FROM sales.orders"},
    ],
}


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[Lake]:
    with moto_patches(Path(__file__).resolve().parents[2]), embedded_aws():
        yield build_lake(tmp_path / "local")


def _check(shape: Any, value: Any, where: str) -> None:
    assert isinstance(value, _TYPES[shape.type_name]), f"{where}: {value!r} is not a {shape.type_name}"
    if shape.type_name == "structure":
        unknown = set(value) - set(shape.members)
        assert not unknown, f"{where}: {sorted(unknown)} are not members of {shape.name}"
        for name, member in value.items():
            _check(shape.members[name], member, f"{where}.{name}")
    elif shape.type_name == "list":
        for i, item in enumerate(value):
            _check(shape.member, item, f"{where}[{i}]")


def _raw_tables(glue: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def keep(**kw: Any) -> None:
        if kw["model"].name == "GetTable" and kw["http_response"].status_code == 200:
            seen.append(json.loads(kw["http_response"].content)["Table"])

    glue.meta.events.register("after-call.glue", keep)
    return seen


def test_a_multi_dialect_view_answers_in_the_models_shapes(lake: Lake) -> None:
    glue = lake.source.client("glue")
    raw = _raw_tables(glue)
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_table(DatabaseName="sales", TableInput={"Name": "ids", "ViewDefinition": DEFINITION})
    first = glue.get_table(DatabaseName="sales", Name="ids")["Table"]
    changed = {**DEFINITION, "Representations": DEFINITION["Representations"][:1]}
    glue.update_table(DatabaseName="sales", TableInput={"Name": "ids", "ViewDefinition": changed})
    second = glue.get_table(DatabaseName="sales", Name="ids")["Table"]

    for i, table in enumerate(raw):
        _check(MODEL.shape_for("Table"), table, f"GetTable[{i}].Table")
    assert first["IsMultiDialectView"] is True and first["TableType"] == "VIRTUAL_VIEW"
    definition = first["ViewDefinition"]
    assert {k: definition[k] for k in ("IsProtected", "Definer", "SubObjects")} == {
        k: DEFINITION[k] for k in ("IsProtected", "Definer", "SubObjects")
    }
    assert [r["IsStale"] for r in definition["Representations"]] == [False, False]
    assert [r["Dialect"] for r in definition["Representations"]] == ["SPARK", "ATHENA"]
    assert (definition["ViewVersionId"], second["ViewDefinition"]["ViewVersionId"]) == (1, 2)
    assert [r["Dialect"] for r in second["ViewDefinition"]["Representations"]] == ["SPARK"]


@pytest.mark.parametrize(
    ("definition", "says"),
    [
        (
            {"Representations": [{"Dialect": "POSTGRES", "ViewOriginalText": "SELECT 1"}]},
            "'POSTGRES' is not one of",
        ),
        ({"Representations": [{"Dialect": "SPARK"}]}, "needs its ViewOriginalText"),
        ({"Representations": []}, "at least one representation"),
    ],
)
def test_what_glue_refuses_is_refused(lake: Lake, definition: dict[str, Any], says: str) -> None:
    # botocore's own checks off: the embedded AWS is what must refuse
    glue = lake.source.client("glue", config=Config(parameter_validation=False))
    glue.create_database(DatabaseInput={"Name": "sales"})
    with pytest.raises(ClientError) as refused:
        glue.create_table(DatabaseName="sales", TableInput={"Name": "v", "ViewDefinition": definition})
    assert refused.value.response["Error"]["Code"] == "InvalidInputException"
    assert says in refused.value.response["Error"]["Message"]
    assert glue.get_tables(DatabaseName="sales")["TableList"] == []
