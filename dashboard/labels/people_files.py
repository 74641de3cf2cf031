"""People's labels from a file: the people side of a judge's agreement, or a session
to import. Pure (reads the file, writes nothing).

Three formats, told apart by the file's suffix, else by its first line:

    JSONL   memlens's label export (dashboard/labels/export.py) or any file with one
            object a line holding ``message_id``, ``memory_id`` and ``label``
            (``relevant`` / ``not_relevant``); ``reviewer``, ``rank``, ``score``,
            ``store`` are read when present
    CSV     the same columns, with a header
    qrels   TREC qrels, ``message_id 0 memory_id grade`` a line (whitespace separated);
            binary grades (0 / 1, as memlens exports them) read 1 as relevant; a file
            with graded relevance (any grade over 1) reads RELEVANT_GRADE and over as
            relevant, as a judge's grade is read

Unlike a calibration label file no score is needed: agreement pairs labels by id.
The texts an opt-in export carries (``query_text``, ``memory_text``) are read only
when asked for (``keep_text``: a judge being aligned grades them).
A bad row is skipped and named by file, line and field; the rest are used. Only a
file that cannot be read at all raises ``PeopleFileError``. The file is read a line
at a time, so its size does not bound memory.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from connectors.common import inbound
from connectors.common.errors import MemlensError
from connectors.common.lines import LINE, MAX_RANK, LineIssue, echo, parse_line
from dashboard.database.judge_labels import RELEVANT_GRADE
from dashboard.database.model import LABEL_VALUES, NOT_RELEVANT, RELEVANT, Label, reviewer_key
from dashboard.labels.export import restore_cell

FORMATS = ("jsonl", "csv", "qrels")
DEFAULT_REVIEWER = "imported"  # when a row names no reviewer (qrels never do)
REQUIRED = ("message_id", "memory_id", "label")


class PeopleFileError(MemlensError, ValueError):
    """The whole file is unusable; the message names the file and why."""


@dataclass
class PeopleLabels:
    source: str
    format: str
    labels: list[Label] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=list)
    keep_text: bool = False  # read query_text / memory_text (an opt-in export's) too
    # (message_id, memory_id, reviewer) -> (line, position in labels): one label per
    # reviewer and pair, so a repeated row cannot count twice in an agreement.
    _seen: dict[tuple[str, str, str], tuple[int, int]] = field(default_factory=dict, repr=False)

    @property
    def skipped(self) -> int:
        return len({issue.line for issue in self.issues if issue.skipped})

    def summary(self) -> str:
        reviewers = {reviewer_key(label.reviewer) for label in self.labels}  # "José" in either Unicode spelling is one
        return (
            f"{self.source}: {len(self.labels)} label(s) from {len(reviewers)} reviewer(s) ({self.format})"
            + (f", {self.skipped} bad row(s) skipped" if self.skipped else "")
        )


def read_people_labels(
    path: str | Path, *, fmt: str | None = None, reviewer: str = DEFAULT_REVIEWER, keep_text: bool = False
) -> PeopleLabels:
    """People's labels from a JSONL, CSV or qrels file; `reviewer` names the labeller of
    rows that name none; `keep_text` reads the texts an opt-in export carries (a judge
    being aligned needs them), which are otherwise never read."""
    path = Path(path)
    if not path.exists():
        raise PeopleFileError(f"{path}: no such file")
    if not path.is_file():  # a FIFO or a device would block or never end
        raise PeopleFileError(f"{path}: not a regular file")
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            return _read(handle, str(path), fmt, reviewer, keep_text)
    except UnicodeDecodeError as exc:
        raise PeopleFileError(f"{path}: not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    except OSError as exc:
        raise PeopleFileError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def read_people_bytes(data: bytes, name: str, *, fmt: str | None = None, reviewer: str = DEFAULT_REVIEWER) -> PeopleLabels:
    """The same from an upload's bytes (`name`: the uploaded file's name)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PeopleFileError(f"{name}: not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    return _read(io.StringIO(text, newline=""), name, fmt, reviewer, False)


def _read(handle: TextIO, source: str, fmt: str | None, reviewer: str, keep_text: bool) -> PeopleLabels:
    first = _first_line(handle)
    handle.seek(0)
    chosen = fmt or guess_format(source, first)
    if chosen not in FORMATS:
        raise PeopleFileError(f"{source}: unknown format {echo(chosen)}; use one of {', '.join(FORMATS)}")
    result = PeopleLabels(source, chosen, keep_text=keep_text)
    {"jsonl": _jsonl, "csv": _csv, "qrels": _qrels}[chosen](handle, result, reviewer)
    return result


def guess_format(name: str, first_line: str) -> str:
    suffix = Path(name).suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".qrels", ".qrel"):
        return "qrels"
    stripped = first_line.strip()
    if stripped.startswith("{"):
        return "jsonl"
    if len(stripped.split()) == 4 and "," not in stripped:
        return "qrels"
    return "csv"


def _first_line(handle: TextIO, limit: int = 65_536) -> str:
    """The start of the first non-blank line (at most `limit` characters read at a
    time: enough to tell the format, and a one-line 10 GB file is not read whole)."""
    while True:
        line = handle.readline(limit)
        if not line:
            return ""
        if line.strip():
            return line


def _lines(handle: TextIO) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(handle, start=1):
        line = line.rstrip("\r\n")
        if line.strip():
            yield number, line


def _jsonl(handle: TextIO, result: PeopleLabels, reviewer: str) -> None:
    for number, line in _lines(handle):
        parsed = parse_line(line, number, result.source)
        if isinstance(parsed, LineIssue):
            result.issues.append(parsed)
        else:
            _add(result, number, parsed, reviewer)


def _csv(handle: TextIO, result: PeopleLabels, reviewer: str) -> None:
    reader = csv.DictReader(handle)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise PeopleFileError(f"{result.source}: the CSV header (line 1) cannot be read ({exc})") from None
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise PeopleFileError(
            f"{result.source}: the CSV header (line 1) must name the columns {', '.join(REQUIRED)} "
            f"(missing {', '.join(missing)})"
        )
    try:
        for record in reader:
            if None in record:
                result.issues.append(LineIssue(result.source, reader.line_num, LINE, "more cells than the header names"))
                continue
            if all(value in (None, "") for value in record.values()):
                continue
            _add(result, reader.line_num, {k: _cell(v) for k, v in record.items()}, reviewer)
    except csv.Error as exc:
        result.issues.append(LineIssue(result.source, reader.line_num, LINE, f"unreadable CSV ({exc}); the rest was not read"))


def _cell(value: Any) -> Any:
    """A CSV cell as written (the export's rule, undone by export.restore_cell)."""
    return restore_cell(value)


def _qrels(handle: TextIO, result: PeopleLabels, reviewer: str) -> None:
    rows: list[tuple[int, str, str, int]] = []
    for number, line in _lines(handle):
        parts = line.split()
        if len(parts) != 4:
            result.issues.append(LineIssue(result.source, number, LINE, f"expected 4 columns (qid 0 docid grade), got {len(parts)}"))
            continue
        qid, _, docid, grade_text = parts
        try:
            grade = int(grade_text)
        except ValueError:
            result.issues.append(LineIssue(result.source, number, "grade", f"{echo(grade_text)} is not a whole number"))
            continue
        rows.append((number, qid, docid, grade))
    cut = RELEVANT_GRADE if any(grade > 1 for *_, grade in rows) else 1
    for number, qid, docid, grade in rows:
        _add(result, number, {"message_id": qid, "memory_id": docid, "label": RELEVANT if grade >= cut else NOT_RELEVANT}, reviewer)


def _add(result: PeopleLabels, number: int, obj: dict[str, Any], reviewer: str) -> None:
    problems = []
    for name in ("message_id", "memory_id"):
        value = obj.get(name)
        if value is None or value == "":
            problems.append(LineIssue(result.source, number, name, "missing"))
        elif not isinstance(value, (str, int)) or isinstance(value, bool):
            problems.append(LineIssue(result.source, number, name, f"must be text, got {echo(value)}"))
    label = obj.get("label")
    if label not in LABEL_VALUES:
        got = "missing" if label is None else f"must be relevant or not_relevant, got {echo(label)}"
        problems.append(LineIssue(result.source, number, "label", got))
    if problems:
        result.issues.extend(problems)
        return
    who = obj.get("reviewer")
    if who is not None and (not isinstance(who, str) or not who.strip()):
        result.issues.append(LineIssue(result.source, number, "reviewer", f"must be text, got {echo(who)}", skipped=False))
        who = None
    rank = _number(result, number, "rank", obj.get("rank"), whole=True)
    score = _number(result, number, "score", obj.get("score"), whole=False)
    store = _text(obj.get("store"))
    when = _text(obj.get("updated_at")) or _text(obj.get("created_at"))
    row = Label(
        str(obj["message_id"]), str(obj["memory_id"]), rank, score, str(label), (who or reviewer).strip(),
        store, _text(obj.get("created_at")) or when, when,
    )
    if result.keep_text:
        row.query_text = _text(obj.get("query_text")) or None
        row.memory_text = _text(obj.get("memory_text")) or None
    key = (row.message_id, row.memory_id, reviewer_key(row.reviewer))
    if key in result._seen:  # the later row wins, as a relabel would
        line, position = result._seen[key]
        result.issues.append(LineIssue(result.source, line, LINE, f"the same reviewer and pair again on line {number}; the later row is used"))
        result.labels[position] = row
        result._seen[key] = (number, position)
        return
    result._seen[key] = (number, len(result.labels))
    result.labels.append(row)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(result: PeopleLabels, number: int, name: str, value: Any, *, whole: bool) -> Any:
    """An optional number field, None when absent; a bad one is ignored and named."""
    if value is None or value == "":
        return None
    try:
        parsed = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError, OverflowError):  # OverflowError: a 400-digit integer
        parsed = None
    if parsed is None or parsed != parsed or parsed in (float("inf"), float("-inf")) or (
        whole and (not parsed.is_integer() or not 1 <= parsed <= MAX_RANK)
    ):
        result.issues.append(LineIssue(result.source, number, name, f"not a usable {name}: {echo(value)}", skipped=False))
        return None
    return int(parsed) if whole else parsed


def import_as_session(db: Any, found: PeopleLabels, name: str) -> tuple[Any, int]:
    """Save the file's labels as the session `name` (its rows: every labelled pair, in
    file order) with each label under its reviewer; (the session, labels written).
    Raises SessionExists when the name is taken, before anything is written."""
    from dashboard.database.sessions import LabelSession, SessionItem

    file_store = f"imported:{Path(found.source).name}"
    items: dict[tuple[str, str], SessionItem] = {}
    for label in found.labels:
        key = (label.message_id, label.memory_id)
        if key not in items:
            items[key] = SessionItem(len(items), label.message_id, label.memory_id, label.rank, label.score, None, label.store or None)
    session = db.sessions.create(
        LabelSession(name=name, method="imported", size=len(items), source=Path(found.source).name,
                     params={"format": found.format}),
        list(items.values()),
    )
    for label in found.labels:
        db.labels.save(
            message_id=label.message_id, memory_id=label.memory_id, label=label.label, reviewer=label.reviewer,
            store=label.store or file_store, rank=label.rank, score=label.score,
        )
    return session, len(found.labels)


inbound.register_reader(
    inbound.Reader(
        "people labels", read_people_labels, (PeopleFileError,), ".jsonl",
        {"message_id": "t1", "memory_id": "m1", "rank": 1, "score": 0.5, "label": "relevant", "reviewer": "ana"},
        qualname=f"{__name__}.read_people_labels",
    )
)
