"""Athena's view envelope: `/* Presto View: <base64 of JSON> */` in ViewOriginalText, the JSON
holding originalSql, catalog, schema, columns, owner and runAsInvoker (ViewExpandedText is
`/* Presto View */`)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from icelake.errors import UnreadableSql

START, END = "/* Presto View: ", " */"


def decode(text: str) -> dict[str, Any]:
    """The envelope's JSON; an envelope that is not one is unreadable, never guessed at."""
    body = text.strip()
    if not (body.startswith(START) and body.endswith(END)):
        raise UnreadableSql("ViewOriginalText is not an Athena view envelope (/* Presto View: ... */)")
    try:
        view: dict[str, Any] = json.loads(base64.b64decode(body[len(START) : -len(END)], validate=True))
    except (binascii.Error, ValueError) as exc:
        raise UnreadableSql(f"the Athena view envelope does not decode: {exc}") from None
    if not isinstance(view, dict) or not isinstance(view.get("originalSql"), str):
        raise UnreadableSql("the Athena view envelope holds no originalSql")
    return view


def encode(view: dict[str, Any]) -> str:
    """The envelope of `view` as Athena writes it (compact JSON, standard base64)."""
    raw = json.dumps(view, separators=(",", ":")).encode()
    return f"{START}{base64.b64encode(raw).decode()}{END}"


def moved(view: dict[str, Any], sql: str, schema: str) -> dict[str, Any]:
    """The same view on the target: its SQL renamed, its schema the target database; columns,
    catalog, owner and runAsInvoker as they were (keys in their order)."""
    return {**view, "originalSql": sql, "schema": schema}
