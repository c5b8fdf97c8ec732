"""Declared column types: every JSON value is converted exactly or refused with column, value, type."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from icelake.errors import TypeConflictError
from icelake.ingest.models import Scd2Spec
from icelake.ingest.types import can_promote, convert, parse_type


@pytest.mark.parametrize(
    ("kind", "value", "expected"),
    [
        ("long", 29, 29),
        ("long", Decimal("30.0"), 30),  # a whole number written with a fraction part is exact
        ("long", "42", 42),
        ("int", -(2**31), -(2**31)),
        ("double", 29, 29.0),
        ("double", Decimal("29.5"), 29.5),
        ("decimal(5,2)", Decimal("29.5"), "29.50"),
        ("decimal(5,2)", 7, "7.00"),
        (
            "decimal(38,2)",
            Decimal("123456789012345678901234567890123456.78"),
            "123456789012345678901234567890123456.78",
        ),
        ("string", 12, "12"),
        ("string", Decimal("1.50"), "1.50"),
        ("boolean", False, False),
        ("date", "2026-03-01", "2026-03-01"),
        ("timestamptz", "1970-01-01T00:00:01Z", 1_000_000),
        ("timestamptz", "1970-01-01T01:00:00.000002+01:00", 2),
        ("timestamp", "1970-01-01T00:00:00.5", 500_000),
        ("long", None, None),
    ],
)
def test_values_the_type_holds_exactly_are_converted(kind: str, value: Any, expected: Any) -> None:
    assert convert("c", value, parse_type(kind)) == expected


@pytest.mark.parametrize(
    ("kind", "value", "why"),
    [
        ("long", Decimal("29.5"), "fraction"),
        ("long", Decimal("1.75"), "fraction"),
        ("int", 2**31, "outside"),
        ("long", 2**63, "outside"),
        ("long", "lots", "not a number"),
        ("long", True, "not a number"),
        ("decimal(5,2)", Decimal("1.005"), "more than 2 decimal places"),
        ("decimal(5,2)", 1234, "more than 5 digits"),
        ("float", Decimal("1e39"), "out of range"),
        ("double", 2**53 + 1, "no exact binary form"),
        ("double", "NaN", "not a finite number"),
        ("boolean", "true", "not true or false"),
        ("string", {"a": 1}, "not strings"),
        ("date", "01/03/2026", "ISO-8601 date"),
        ("timestamptz", "2026-03-01T00:00:00", "no UTC offset"),
        ("timestamp", "2026-03-01T00:00:00Z", "has a UTC offset"),
    ],
)
def test_values_the_type_cannot_hold_are_refused_naming_column_value_and_type(
    kind: str, value: Any, why: str
) -> None:
    with pytest.raises(TypeConflictError, match=why) as caught:
        convert("score", value, parse_type(kind))
    message = str(caught.value)
    assert "'score'" in message and str(parse_type(kind)) in message
    assert caught.value.column == "score" and caught.value.type_name == str(parse_type(kind))


def test_type_names_promotions_and_spec_validation() -> None:
    assert str(parse_type(" BIGINT ")) == "long" and str(parse_type("decimal(10, 2)")) == "decimal(10,2)"
    assert can_promote(parse_type("int"), parse_type("long"))
    assert can_promote(parse_type("float"), parse_type("double"))
    assert can_promote(parse_type("decimal(10,2)"), parse_type("decimal(12,2)"))
    assert not can_promote(parse_type("decimal(10,2)"), parse_type("decimal(12,3)"))
    assert not can_promote(parse_type("long"), parse_type("double"))
    assert Scd2Spec(table="c.d.t", keys=("id",), types={"n": "BIGINT"}).types == {"n": "long"}
    with pytest.raises(ValueError, match="not a supported Iceberg type"):
        Scd2Spec(table="c.d.t", keys=("id",), types={"n": "number"})
    with pytest.raises(ValueError, match="either schema_ddl or types"):
        Scd2Spec(table="c.d.t", keys=("id",), types={"n": "long"}, schema_ddl="n BIGINT")
    with pytest.raises(ValueError, match="scale <= precision"):
        parse_type("decimal(2,3)")
