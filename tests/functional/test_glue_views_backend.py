"""The embedded AWS's Glue multi-dialect views (icelake/local/glue_views.py), checked against the
service model's shapes in botocore's own JSON: the raw GetTable answer member by member against
the `Table` output shape, and what Glue refuses refused."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.lake import SOURCE_ACCOUNT, Lake
from tests.shapes import BASE_TYPES, check_shape

MODEL = botocore.session.get_session().get_service_model("glue")
_TYPES = {**BASE_TYPES, "map": dict, "timestamp": (int, float, str)}
DEFINITION = {
    "IsProtected": True,
    "Definer": f"arn:aws:iam::{SOURCE_ACCOUNT}:role/definer",
    "SubObjects": [f"arn:aws:glue:us-east-1:{SOURCE_ACCOUNT}:table/sales/orders"],
    "Representations": [
        {"Dialect": "SPARK", "DialectVersion": "3.5", "ViewOriginalText": "SELECT id FROM sales.orders"},
        {"Dialect": "ATHENA", "DialectVersion": "3", "ViewOriginalText": "SELECT id FROM sales.orders"},
    ],
}


def _raw_tables(glue: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def keep(**kw: Any) -> None:
        if kw["model"].name == "GetTable" and kw["http_response"].status_code == 200:
            seen.append(json.loads(kw["http_response"].content)["Table"])

    glue.meta.events.register("after-call.glue", keep)
    return seen


def test_a_multi_dialect_view_answers_in_the_models_shapes(patched_lake: Lake) -> None:
    glue = patched_lake.source.client("glue")
    raw = _raw_tables(glue)
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_table(DatabaseName="sales", TableInput={"Name": "ids", "ViewDefinition": DEFINITION})
    first = glue.get_table(DatabaseName="sales", Name="ids")["Table"]
    changed = {**DEFINITION, "Representations": DEFINITION["Representations"][:1]}
    glue.update_table(DatabaseName="sales", TableInput={"Name": "ids", "ViewDefinition": changed})
    second = glue.get_table(DatabaseName="sales", Name="ids")["Table"]

    for i, table in enumerate(raw):
        check_shape(MODEL.shape_for("Table"), table, f"GetTable[{i}].Table", _TYPES)
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
def test_what_glue_refuses_is_refused(patched_lake: Lake, definition: dict[str, Any], says: str) -> None:
    # botocore's own checks off: the embedded AWS is what must refuse
    glue = patched_lake.source.client("glue", config=Config(parameter_validation=False))
    glue.create_database(DatabaseInput={"Name": "sales"})
    with pytest.raises(ClientError) as refused:
        glue.create_table(DatabaseName="sales", TableInput={"Name": "v", "ViewDefinition": definition})
    assert refused.value.response["Error"]["Code"] == "InvalidInputException"
    assert says in refused.value.response["Error"]["Message"]
    assert glue.get_tables(DatabaseName="sales")["TableList"] == []
