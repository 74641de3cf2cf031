"""Line validation as a table: each reader states its fields (name, type, required or
default, the message for a bad value) instead of writing the checks out.

    FIELDS = (
        LineField("id", non_empty_text, required=True, message="required, a non-empty string"),
        LineField("usage_count", whole_number, default=0, message="{value!r} is not a whole number >= 0"),
    )
    row, issue = read_fields(obj, FIELDS, file="memories.jsonl", line=3)

The fields are checked in the table's order and the first bad one is the line's
issue (file, line, field, message), as every reader here reports it. A field absent
from the object takes its default (a callable default is called, so a ``dict`` is
never shared); an absent required field is told with its message, its value None.
A ``value`` in a message is the value as the file gave it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from connectors.common.errors import MemlensError
from connectors.common.lines import LineIssue

REQUIRED = object()  # the default of a field that has none


class Invalid(MemlensError, ValueError):
    """Raised by a field's type check: the value is not one of that type."""


@dataclass(frozen=True)
class LineField:
    name: str
    check: Callable[[Any], Any]  # the value as the file gave it -> the value to keep, or Invalid
    message: str  # for a bad (or a missing required) value; may quote it as {value!r}
    required: bool = False
    default: Any = None  # or a callable making it, such as dict

    def read(self, obj: dict[str, Any]) -> Any:
        if self.name not in obj:
            if self.required:
                raise Invalid(self.message.format(value=None))
            return self.default() if callable(self.default) else self.default
        value = obj[self.name]
        try:
            return self.check(value)
        except Invalid:
            raise Invalid(self.message.format(value=value)) from None


def read_fields(
    obj: dict[str, Any], fields: tuple[LineField, ...], *, file: str, line: int
) -> tuple[dict[str, Any] | None, LineIssue | None]:
    """The row the fields read from `obj`, or the issue of the first bad field."""
    row: dict[str, Any] = {}
    for field in fields:
        try:
            row[field.name] = field.read(obj)
        except Invalid as exc:
            return None, LineIssue(file, line, field.name, str(exc))
    return row, None


# ------------------------------------------------------------------ the types


def non_empty_text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid
    return value


def number(value: Any) -> float:
    """A finite JSON number (true and false are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Invalid
    return float(value)


def number_between(low: float, high: float) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        if not low <= number(value) <= high:
            raise Invalid
        return float(value)

    return check


def non_negative_number(value: Any) -> float:
    if number(value) < 0:
        raise Invalid
    return float(value)


def whole_number(value: Any) -> int:
    """A JSON integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid
    return value


def json_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Invalid
    return value


def iso_datetime(value: Any) -> datetime:
    """ISO 8601 text (``Z`` allowed) as an aware UTC datetime; no zone means UTC."""
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise Invalid from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
