"""One reader for line files (JSONL): one JSON object per line, every bad line named.

Every JSONL file memlens reads goes through here: memories to import, label files,
retrieval logs, judged queries, the app's own read log, the demo data. A bad line
never stops a read: it becomes a `LineIssue` naming the file, the line and the field,
and the other lines are used.

It lives in connectors/ because the embedded store imports memories from JSONL and
connectors never import dashboard; dashboard modules import it from here.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

LINE = "(line)"  # the `field` of an issue about the whole line rather than one field
# Bounds against hostile files: an issue quotes at most MAX_ECHO_CHARS of the input,
# and a line nested deeper than MAX_DEPTH is refused before anything recurses into it.
MAX_ECHO_CHARS = 200
MAX_DEPTH = 64
# The largest rank a file may give: every whole number up to 2**53 is exact as a
# float (logs are read through float columns), and it fits a 64-bit integer.
MAX_RANK = 2**53


def echo(value: Any, limit: int = MAX_ECHO_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters: what a message may quote of the input."""
    if isinstance(value, str) and len(value) > limit:
        value = value[: limit + 1]  # repr of a 1 MB string would build 1 MB first
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """Text cut to ``limit`` characters, for quoting a list the input gave (a header)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _depth_over(value: Any, limit: int) -> bool:
    """True when `value` nests containers more than `limit` deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values() if isinstance(child, (dict, list)))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item if isinstance(child, (dict, list)))
    return False


@dataclass(frozen=True)
class LineIssue:
    """What was wrong with one line (or one row) of a file."""

    file: str
    line: int  # 1-based; 0 when the whole file could not be read
    field: str  # the field's name, or "(line)" when the line itself is unreadable
    message: str
    skipped: bool = True  # False: only this field was ignored, the rest of the row is used

    def __post_init__(self) -> None:
        # However a message was built, it never carries more than a bounded piece of
        # the input (a 12 MB header, a 1 MB value) to a page or a report.
        if len(self.message) > 2 * MAX_ECHO_CHARS:
            object.__setattr__(self, "message", self.message[: 2 * MAX_ECHO_CHARS - 1] + "…")
        if len(self.field) > MAX_ECHO_CHARS:
            object.__setattr__(self, "field", self.field[: MAX_ECHO_CHARS - 1] + "…")

    def at(self) -> str:
        """The issue without the file name: for lists that already say which file."""
        return f"line {self.line}, field {self.field!r}: {self.message}"

    def __str__(self) -> str:
        return f"{self.file}: {self.at()}"


def bounded_json(text: str) -> tuple[Any, str | None]:
    """(value, None) for JSON text within the bounds every reader keeps, else
    (None, why not): not JSON, nested more than MAX_DEPTH deep, or a number longer
    than Python converts. The one place those bounds are applied, for whole lines
    and for JSON held inside a field (an OTLP attribute, say)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return None, f"nested more than {MAX_DEPTH} levels deep"
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        return None, f"a number too long to read ({exc.args[0].split(':')[0]})"
    # Counting brackets is C-speed; only a text that might nest deeply is walked.
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth_over(value, MAX_DEPTH):
        return None, f"nested more than {MAX_DEPTH} levels deep"
    return value, None


def parse_line(line: str, number: int, file: str) -> dict[str, Any] | LineIssue:
    """One line as a JSON object, or the issue saying why it is not one."""
    obj, problem = bounded_json(line)
    if problem is not None:
        return LineIssue(file, number, LINE, problem)
    if not isinstance(obj, dict):
        return LineIssue(file, number, LINE, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def json_objects(text: str | Iterable[str], file: str, issues: list[LineIssue]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line holding a JSON object; blank lines are
    passed over, and every other line is appended to `issues` as it is met (so a
    caller adding its own issues per object keeps them in line order). `text` is the
    whole text, or its lines one at a time (a file opened with ``newline="\\n"``,
    read in bounded memory: ``text_file``)."""
    # Line feeds only: splitlines() would also break inside a JSON string holding a
    # raw U+2028 or U+0085, which JSON allows and memlens's own exports may carry.
    lines = text.split("\n") if isinstance(text, str) else (line.removesuffix("\n") for line in text)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parsed = parse_line(line, number, file)
        if isinstance(parsed, LineIssue):
            issues.append(parsed)
        else:
            yield number, parsed


def text_file(path: str | Path, *, newline: str = "\n") -> TextIO:
    """`path` opened as UTF-8 text (a byte-order mark dropped) to be read line by line:
    a large file is never held whole. ``newline="\\n"`` splits at line feeds only, as
    ``json_objects`` does with whole text; ``""`` is what the csv module wants. A
    byte that is not UTF-8 raises UnicodeDecodeError as the line is read
    (``utf8_error_offset`` says where)."""
    return open(path, encoding="utf-8-sig", newline=newline)


def utf8_error_offset(path: str | Path) -> int:
    """The offset in the file of its first byte that is not UTF-8 (a read line by
    line only knows the offset in the block it was decoding)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                return offset + exc.start - len(decoder.getstate()[0])
            offset += len(block)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            return offset + exc.start - len(decoder.getstate()[0])
    return offset
