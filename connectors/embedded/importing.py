"""Reading memories to import into the embedded store: one JSON object a line
(through connectors/common/lines.py), checked field by field, so a bad line is reported
(file, line number, field, what was wrong) and the good lines are still imported.

``read_memories_file`` is the one reader of a memories file (``memlens import``, the demo
store): through the inbound boundary, a regular file of at most ``MAX_MEMORIES_BYTES``
(it is read whole and every new text encoded), created_at from 1970 to 2200."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from connectors.common import inbound
from connectors.common.line_fields import (
    Invalid,
    LineField,
    iso_datetime,
    json_object,
    non_empty_text,
    non_negative_number,
    number_between,
    read_fields,
    whole_number,
)
from connectors.common.lines import LineIssue, json_objects

DEFAULT_IMPORTANCE = 0.5
IMPORTANCE_MIN, IMPORTANCE_MAX = 0.05, 1.0
# The file is read whole and every new text encoded in one go: 256 MB is about a
# million memories, hours of encoding; a larger file is refused before it is read.
MAX_MEMORIES_BYTES = 256 * 1024 * 1024


@dataclass
class ImportReport:
    source: str
    imported: int = 0
    reencoded: int = 0
    ids: list[str] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=list)

    def summary(self) -> str:
        text = f"{self.source}: imported {self.imported} memories"
        if self.issues:
            text += f", rejected {len(self.issues)} line(s):\n" + "\n".join(
                f"  {issue}" for issue in self.issues
            )
        return text


def as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


TEXT_FIELDS = tuple(
    LineField(name, non_empty_text, "required, a non-empty string", required=True) for name in ("id", "user_id", "text")
)
EXTRA_FIELDS = (
    LineField(
        "importance",
        number_between(IMPORTANCE_MIN, IMPORTANCE_MAX),
        f"{{value!r}} is not a number in [{IMPORTANCE_MIN}, {IMPORTANCE_MAX}]",
        default=DEFAULT_IMPORTANCE,
    ),
    LineField("usage_count", whole_number, "{value!r} is not a whole number >= 0", default=0),
    LineField("metadata", json_object, "must be a JSON object", default=dict),
)
def _sane_datetime(value: Any) -> datetime:
    stamp = iso_datetime(value)
    if not inbound.sane_time(stamp):
        raise Invalid
    return stamp


CREATED_AT = LineField(
    "created_at", _sane_datetime,
    f"{{value!r}} is not an ISO 8601 date-time from {inbound.EARLIEST.year} to {inbound.LATEST.year - 1}",
)
AGE_DAYS = LineField("age_days", non_negative_number, "{value!r} is not a number of days >= 0")


def _created_at(obj: dict[str, Any], now: datetime, file: str, line: int) -> tuple[datetime | None, LineIssue | None]:
    """created_at, else now minus age_days: one of the two is required."""
    field = CREATED_AT if obj.get("created_at") is not None else AGE_DAYS if "age_days" in obj else None
    if field is None:
        return None, LineIssue(file, line, "created_at", "one of created_at or age_days is required")
    read, issue = read_fields(obj, (field,), file=file, line=line)
    if read is None:
        return None, issue
    return (read["created_at"] if field is CREATED_AT else now - timedelta(days=read["age_days"])), None


def _validate_line(
    obj: dict[str, Any], line: int, now: datetime, file: str
) -> tuple[dict[str, Any] | None, LineIssue | None]:
    row, issue = read_fields(obj, TEXT_FIELDS, file=file, line=line)
    if row is None:
        return None, issue
    row["created_at"], issue = _created_at(obj, now, file, line)
    if issue is not None:
        return None, issue
    extras, issue = read_fields(obj, EXTRA_FIELDS, file=file, line=line)
    if extras is None:
        return None, issue
    return {**row, **extras}, None


def parse_jsonl(text: str, now: datetime, report: ImportReport) -> list[dict[str, Any]]:
    rows = []
    for number, obj in json_objects(text, report.source, report.issues):
        row, issue = _validate_line(obj, number, now, report.source)
        if issue:
            report.issues.append(issue)
        elif row is not None:
            rows.append(row)
    return rows


def read_memories_file(path: str | Path, now: datetime | None = None) -> tuple[list[dict[str, Any]], list[LineIssue]]:
    """The good lines of a memories file and the bad ones named (file, line, field);
    ``now`` turns age_days into created_at. A file that is not a regular file, is
    larger than ``MAX_MEMORIES_BYTES`` or is not UTF-8 is InboundError naming it."""
    data = inbound.read_small(path, "memories file", limit=MAX_MEMORIES_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise inbound.InboundError(f"{path}: the memories file is not UTF-8 text (byte {exc.start + 1})") from None
    report = ImportReport(source=str(path))
    return parse_jsonl(text, now or datetime.now(UTC), report), report.issues


inbound.register_reader(
    inbound.Reader(
        "memories file", read_memories_file, (inbound.InboundError,), ".jsonl",
        {"id": "m1", "user_id": "sam", "text": "Likes green tea", "created_at": "2026-01-05T09:00:00Z", "importance": 0.5},
        qualname=f"{__name__}.read_memories_file",
    )
)
