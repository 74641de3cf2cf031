"""One reader for line files (JSONL): one JSON object per line, every bad line named.

Every JSONL file memlens reads goes through here: memories to import, label files,
retrieval logs, judged queries, the app's own read log, the demo data. A bad line
never stops a read: it becomes a `LineIssue` naming the file, the line and the field,
and the other lines are used.

It lives in connectors/ because the embedded store imports memories from JSONL and
connectors never import dashboard; dashboard modules import it from here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

LINE = "(line)"  # the `field` of an issue about the whole line rather than one field


@dataclass(frozen=True)
class LineIssue:
    """What was wrong with one line (or one row) of a file."""

    file: str
    line: int  # 1-based; 0 when the whole file could not be read
    field: str  # the field's name, or "(line)" when the line itself is unreadable
    message: str
    skipped: bool = True  # False: only this field was ignored, the rest of the row is used

    def at(self) -> str:
        """The issue without the file name: for lists that already say which file."""
        return f"line {self.line}, field {self.field!r}: {self.message}"

    def __str__(self) -> str:
        return f"{self.file}: {self.at()}"


def parse_line(line: str, number: int, file: str) -> dict[str, Any] | LineIssue:
    """One line as a JSON object, or the issue saying why it is not one."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return LineIssue(file, number, LINE, f"not valid JSON: {exc.msg} at column {exc.colno}")
    if not isinstance(obj, dict):
        return LineIssue(file, number, LINE, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def json_objects(text: str, file: str, issues: list[LineIssue]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line holding a JSON object; blank lines are
    passed over, and every other line is appended to `issues` as it is met (so a
    caller adding its own issues per object keeps them in line order)."""
    # Line feeds only: splitlines() would also break inside a JSON string holding a
    # raw U+2028 or U+0085, which JSON allows and memlens's own exports may carry.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        parsed = parse_line(line, number, file)
        if isinstance(parsed, LineIssue):
            issues.append(parsed)
        else:
            yield number, parsed
