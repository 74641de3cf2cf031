"""Reading memories to import into the embedded store: one JSON object a line
(through connectors/common/lines.py), checked field by field, so a bad line is reported
(file, line number, field, what was wrong) and the good lines are still imported."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from connectors.common.lines import LineIssue, json_objects

DEFAULT_IMPORTANCE = 0.5
IMPORTANCE_MIN, IMPORTANCE_MAX = 0.05, 1.0


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


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _validate_line(
    obj: dict[str, Any], line: int, now: datetime, file: str
) -> tuple[dict[str, Any] | None, LineIssue | None]:
    def bad(name: str, message: str):
        return None, LineIssue(file, line, name, message)

    row: dict[str, Any] = {}
    for name in ("id", "user_id", "text"):
        value = obj.get(name)
        if not isinstance(value, str) or not value.strip():
            return bad(name, "required, a non-empty string")
        row[name] = value
    if "created_at" in obj and obj["created_at"] is not None:
        try:
            row["created_at"] = _utc(datetime.fromisoformat(str(obj["created_at"]).replace("Z", "+00:00")))
        except ValueError:
            return bad("created_at", f"{obj['created_at']!r} is not an ISO 8601 date-time")
    elif "age_days" in obj:
        age = obj["age_days"]
        if isinstance(age, bool) or not isinstance(age, (int, float)) or not math.isfinite(age) or age < 0:
            return bad("age_days", f"{age!r} is not a number of days >= 0")
        row["created_at"] = now - timedelta(days=age)
    else:
        return bad("created_at", "one of created_at or age_days is required")
    importance = obj.get("importance", DEFAULT_IMPORTANCE)
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not (
        IMPORTANCE_MIN <= importance <= IMPORTANCE_MAX
    ):
        return bad("importance", f"{importance!r} is not a number in [{IMPORTANCE_MIN}, {IMPORTANCE_MAX}]")
    row["importance"] = float(importance)
    usage = obj.get("usage_count", 0)
    if isinstance(usage, bool) or not isinstance(usage, int) or usage < 0:
        return bad("usage_count", f"{usage!r} is not a whole number >= 0")
    row["usage_count"] = usage
    metadata = obj.get("metadata", {})
    if not isinstance(metadata, dict):
        return bad("metadata", "must be a JSON object")
    row["metadata"] = metadata
    return row, None


def _parse_jsonl(text: str, now: datetime, report: ImportReport) -> list[dict[str, Any]]:
    rows = []
    for number, obj in json_objects(text, report.source, report.issues):
        row, issue = _validate_line(obj, number, now, report.source)
        if issue:
            report.issues.append(issue)
        elif row is not None:
            rows.append(row)
    return rows
