"""Declared column types (Iceberg type names) and the strict conversion of JSON values to them.

A declared column never changes a value silently: a value the type cannot hold exactly (a fraction
in an integer column, a number out of range, a string that is not a number, a timestamp without a
date...) raises `TypeConflictError` naming the column, the value and the type. The merge turns that
into a quarantined batch. Floating-point columns (`float`, `double`) are approximate by nature: they
take any finite number in range, and an integer only when the type holds it exactly.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from icelake.errors import TypeConflictError

_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
PRIMITIVES = ("boolean", "int", "long", "float", "double", "date", "timestamp", "timestamptz", "string")
_ALIASES = {"integer": "int", "bigint": "long", "timestamp_ntz": "timestamp", "bool": "boolean"}
_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_FLOAT_MAX = 3.4028234663852886e38
_WIDE = Context(prec=100)  # decimal(38,S) values need more than the default 28 digits
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class IcebergType:
    """One declared type: `name` is an Iceberg primitive name; decimals carry precision and scale."""

    name: str
    precision: int = 0
    scale: int = 0

    def __str__(self) -> str:
        return f"decimal({self.precision},{self.scale})" if self.name == "decimal" else self.name

    @property
    def spark_sql(self) -> str:
        """The Spark SQL type of the column (Iceberg `timestamp` is Spark TIMESTAMP_NTZ)."""
        return {
            "boolean": "BOOLEAN",
            "int": "INT",
            "long": "BIGINT",
            "float": "FLOAT",
            "double": "DOUBLE",
            "date": "DATE",
            "timestamp": "TIMESTAMP_NTZ",
            "timestamptz": "TIMESTAMP",
            "string": "STRING",
        }.get(self.name, f"DECIMAL({self.precision},{self.scale})")

    @property
    def transport_sql(self) -> str:
        """How the converted value travels through Spark's JSON reader before its final cast:
        integers and timestamps (as epoch microseconds) as BIGINT, decimals and dates as exact text."""
        return {
            "boolean": "BOOLEAN",
            "int": "BIGINT",
            "long": "BIGINT",
            "float": "DOUBLE",
            "double": "DOUBLE",
            "timestamp": "BIGINT",
            "timestamptz": "BIGINT",
        }.get(self.name, "STRING")

    def from_transport(self, column_sql: str) -> str:
        """A Spark SQL expression turning the transported column into the declared type."""
        if self.name in ("timestamp", "timestamptz"):
            return f"CAST(timestamp_micros({column_sql}) AS {self.spark_sql})"
        return f"CAST({column_sql} AS {self.spark_sql})"


def parse_type(text: str) -> IcebergType:
    """`long`, `decimal(12,2)`, `timestamptz`, ... (Iceberg names; `bigint`/`integer` accepted)."""
    name = text.strip().lower()
    name = _ALIASES.get(name, name)
    if name in PRIMITIVES:
        return IcebergType(name)
    match = _DECIMAL.match(name)
    if match:
        precision, scale = int(match.group(1)), int(match.group(2))
        if not 1 <= precision <= 38 or scale > precision:
            raise ValueError(f"{text!r}: a decimal needs 1 <= precision <= 38 and scale <= precision")
        return IcebergType("decimal", precision, scale)
    raise ValueError(
        f"{text!r} is not a supported Iceberg type; use one of {', '.join(PRIMITIVES)}, decimal(P,S)"
    )


def can_promote(old: IcebergType, new: IcebergType) -> bool:
    """Iceberg's promotions: int -> long, float -> double, decimal(P,S) -> decimal(P',S) with P' > P."""
    if (old.name, new.name) in (("int", "long"), ("float", "double")):
        return True
    return old.name == new.name == "decimal" and new.scale == old.scale and new.precision > old.precision


def _show(value: Any) -> str:
    text = str(value) if isinstance(value, Decimal) else json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _number(column: str, value: Any, kind: IcebergType) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise TypeConflictError(column, _show(value), str(kind), "it is not a number")
    try:
        number = Decimal(value.strip()) if isinstance(value, str) else Decimal(value)
    except InvalidOperation:
        raise TypeConflictError(column, _show(value), str(kind), "it is not a number") from None
    if not number.is_finite():
        raise TypeConflictError(column, _show(value), str(kind), "it is not a finite number")
    return number


def _timestamp(column: str, value: Any, kind: IcebergType) -> int:
    if not isinstance(value, str):
        raise TypeConflictError(column, _show(value), str(kind), "a timestamp must be an ISO-8601 string")
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise TypeConflictError(column, _show(value), str(kind), "it is not an ISO-8601 timestamp") from None
    if kind.name == "timestamp":
        if when.tzinfo is not None:
            raise TypeConflictError(
                column, _show(value), str(kind), "it has a UTC offset; declare the column timestamptz"
            )
        when = when.replace(tzinfo=UTC)
    elif when.tzinfo is None:
        raise TypeConflictError(
            column, _show(value), str(kind), "it has no UTC offset; declare the column timestamp"
        )
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _to_string(column: str, value: Any, kind: IcebergType) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bool | int):  # the exact JSON text of the number or boolean
        return json.dumps(value)
    raise TypeConflictError(column, _show(value), str(kind), "objects and lists are not strings")


def _to_boolean(column: str, value: Any, kind: IcebergType) -> Any:
    if isinstance(value, bool):
        return value
    raise TypeConflictError(column, _show(value), str(kind), "it is not true or false")


def _to_date(column: str, value: Any, kind: IcebergType) -> Any:
    try:
        if not isinstance(value, str):
            raise ValueError("not a string")
        return date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise TypeConflictError(column, _show(value), str(kind), "it is not an ISO-8601 date") from None


def _to_integer(column: str, value: Any, kind: IcebergType) -> Any:
    number = _number(column, value, kind)
    if number != number.to_integral_value():
        raise TypeConflictError(column, _show(value), str(kind), "it has a fraction")
    low, high = _INT_RANGE[kind.name]
    if not low <= number <= high:
        raise TypeConflictError(column, _show(value), str(kind), f"it is outside [{low}, {high}]")
    return int(number)


def _to_floating(column: str, value: Any, kind: IcebergType) -> Any:
    number = _number(column, value, kind)
    as_float = float(number)
    if math.isinf(as_float) or (kind.name == "float" and abs(as_float) > _FLOAT_MAX):
        raise TypeConflictError(column, _show(value), str(kind), "it is out of range")
    if number == number.to_integral_value() and Decimal(as_float) != number:
        raise TypeConflictError(column, _show(value), str(kind), "the integer has no exact binary form")
    return as_float


def _to_decimal(column: str, value: Any, kind: IcebergType) -> Any:
    number = _number(column, value, kind)
    try:
        exact = number.quantize(Decimal(1).scaleb(-kind.scale), context=_WIDE)
    except InvalidOperation:
        raise TypeConflictError(column, _show(value), str(kind), "it is out of range") from None
    if exact != number:
        why = f"it has more than {kind.scale} decimal places"
        raise TypeConflictError(column, _show(value), str(kind), why)
    if len(exact.as_tuple().digits) > kind.precision and exact != 0:
        why = f"it has more than {kind.precision} digits"
        raise TypeConflictError(column, _show(value), str(kind), why)
    return format(exact, "f")


_CONVERTERS = {
    "string": _to_string,
    "boolean": _to_boolean,
    "date": _to_date,
    "timestamp": _timestamp,
    "timestamptz": _timestamp,
    "int": _to_integer,
    "long": _to_integer,
    "float": _to_floating,
    "double": _to_floating,
    "decimal": _to_decimal,
}


def convert(column: str, value: Any, kind: IcebergType) -> Any:
    """`value` (from json.loads with parse_float=Decimal) as the JSON value Spark reads into the
    column's transport type; raises TypeConflictError when `kind` cannot hold it exactly."""
    if value is None:
        return None
    return _CONVERTERS[kind.name](column, value, kind)
