"""The incremental fetch's watermark, compared: which of two values is newer, and what to ask the
API for next. Below both the fetch (it tracks a batch's newest value) and the landing zone (it
advances the endpoint's watermark once a batch merged)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from icelake.ingest.models import Watermark


def _watermark_key(value: Any) -> tuple[int, Any] | None:
    """A comparable form of a watermark value: numbers as numbers, ISO-8601 strings as instants."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return (1, when if when.tzinfo else when.replace(tzinfo=UTC))
    return None


def newer_watermark(current: Any, candidate: Any) -> Any:
    """The newer of two watermark values (either may be None or unreadable)."""
    a, b = _watermark_key(current), _watermark_key(candidate)
    if b is None:
        return current
    if a is None or (a[0] == b[0] and b[1] > a[1]):
        return candidate
    return current


def since_value(watermark: Watermark, merged: Any) -> str | None:
    """The parameter value to ask for: the newest merged value minus the overlap."""
    key = _watermark_key(merged)
    if key is None:
        return watermark.initial
    if key[0] == 0:
        value = merged - watermark.overlap
        return str(int(value) if float(value).is_integer() and isinstance(merged, int) else value)
    when = key[1] - timedelta(seconds=watermark.overlap)
    return str(when.isoformat().replace("+00:00", "Z"))
