"""Reading labelled scores for calibration: label files and label-store rows. Pure.

A label file is JSONL (one object a line) or CSV with a header, in the export format
of ``dashboard/labels/export.py`` (``message_id``, ``memory_id``, ``rank``, ``score``,
``label``, ``reviewer``, ``store``, ``created_at``, ``updated_at``) or just
``score`` and ``label``; an optional ``user_id`` (or ``user``) and ``tag`` (or
``category``) column lets the floor be compared across segments. Every problem is
reported with its line number and field; the usable rows are still used:

* a line that is not JSON, or not an object, or a CSV record with too many cells:
  the row is skipped;
* a missing or wrong score (not a finite number) or label (not ``relevant`` /
  ``not_relevant``), an id that is not text: the row is skipped;
* a bad optional field (``rank``, ``reviewer``, ``store``, timestamps): that field is
  ignored, the row kept;
* several rows for one (``message_id``, ``memory_id``) pair: one label per pair, by
  the rule of ``one_label_per_pair`` (the same for label files and the label store):
  a second row of the same reviewer is a duplicate, reported with its line and
  skipped; across reviewers the most recently updated label is used.

Only a file that cannot be read at all (not UTF-8, a CSV header without ``score``
and ``label``) raises ``LabelFileError``. Extra columns (the opt-in texts included)
are not read, so nothing but ids and scores reaches the calibration.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from connectors.common import inbound
from connectors.common.errors import MemlensError
from connectors.common.lines import LINE, MAX_RANK, LineIssue, clip, echo, json_objects, text_file, utf8_error_offset
from dashboard.calibration.scores import LabelledScores, labelled_scores
from dashboard.database.model import LABEL_VALUES, distinct_reviewers, reviewer_key
from dashboard.labels.export import restore_cell
from dashboard.labels.resolution import RULE, majority

ID_FIELDS = ("message_id", "memory_id")
TEXT_FIELDS = ("reviewer", "store")
TIME_FIELDS = ("created_at", "updated_at")
# Optional segment columns, under the names label files give them: a floor per user
# or per tag (a question category, say) is worth a look when they differ.
SEGMENT_COLUMNS = {"user": ("user_id", "user"), "tag": ("tag", "category")}
SHOWN_ISSUES = 20


class LabelFileError(MemlensError, ValueError):
    """The whole file is unusable; the message says which file and why."""


@dataclass
class LabelRow:
    line: int  # where the row came from (file line, or position for label-store rows)
    score: float
    label: str
    message_id: str | None = None
    memory_id: str | None = None
    rank: int | None = None
    reviewer: str | None = None
    store: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    user: str | None = None
    tag: str | None = None


def issue_text(issue: LineIssue) -> str:
    """An issue of a label file as the reports write it: where, what, and whether
    the row was skipped or only the field ignored."""
    outcome = "row skipped" if issue.skipped else "field ignored, row used"
    return f"{issue.at()} ({outcome})"


@dataclass
class LabelFile:
    source: str  # file name, "upload", "label store", ...
    format: str  # "jsonl" | "csv" | "label store"
    rows: list[LabelRow] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    row_name: str = "line"
    # message_id -> answerable, from a judged set (a saved run's labels); None for
    # label files and the label store, where only the labels say.
    answerable: dict[str, bool] | None = None

    @property
    def skipped(self) -> int:
        return len({issue.line for issue in self.issues if issue.skipped})

    @property
    def has_message_ids(self) -> bool:
        return bool(self.rows) and all(row.message_id for row in self.rows)

    def labelled_scores(self) -> LabelledScores:
        """The rows as calibration input (raises CalibrationError when unusable).
        Message ids are used only when every row has one: a turn count over some of
        the rows would be wrong."""
        data = labelled_scores(
            [row.score for row in self.rows],
            [row.label for row in self.rows],
            [row.message_id for row in self.rows] if self.has_message_ids else None,
            row_numbers=[row.line for row in self.rows],
            row_name=self.row_name,
        )
        if data.turn is not None and all(row.rank is not None for row in self.rows):
            # The turns whose top hit nobody labelled (see LabelledScores.sampled).
            top_seen = np.zeros(data.turns, dtype=bool)
            top_seen[data.turn[np.array([row.rank == 1 for row in self.rows])]] = True
            data = dataclasses.replace(data, sampled=int((~top_seen).sum()))
        if self.answerable is None or data.turn is None:
            return data
        per_turn = np.zeros(data.turns, dtype=bool)
        per_turn[data.turn] = [bool(self.answerable.get(row.message_id or "", False)) for row in self.rows]
        # A relevant labelled hit makes a turn answerable whatever the set says.
        per_turn[data.turn[data.relevant]] = True
        return dataclasses.replace(data, answerable=per_turn)

    def date_range(self) -> tuple[str, str] | None:
        """(first created_at, last updated_at) over the rows that carry them."""
        created = [made for row in self.rows if (made := row.created_at)]
        updated = [last for row in self.rows if (last := row.updated_at or row.created_at)]
        if not created and not updated:
            return None
        return min(created or updated), max(updated or created)

    def stores(self) -> list[str]:
        return sorted({row.store for row in self.rows if row.store})

    def reviewers(self) -> list[str]:
        """Each reviewer once, however their name was typed ("José" precomposed or with a
        combining accent, any case): the first spelling in the file stands for the rest."""
        return sorted(distinct_reviewers(row.reviewer for row in self.rows if row.reviewer))

    def issue_report(self, limit: int = SHOWN_ISSUES) -> str:
        lines = [f"{self.source}: {issue_text(issue)}" for issue in self.issues[:limit]]
        if len(self.issues) > limit:
            lines.append(f"{self.source}: ... and {len(self.issues) - limit} more problems")
        return "\n".join(lines)

    def summary(self) -> str:
        text = f"{self.source}: {len(self.rows)} usable labelled rows"
        if self.skipped:
            text += f", {self.skipped} skipped"
        return text


# ----------------------------------------------------------------- reading files


def read_label_file(path: str | Path) -> LabelFile:
    """A label file read line by line (a large one is never held whole in memory)."""
    path = Path(path)
    source = str(path)
    try:
        inbound.regular_file(path, "label file")
        with path.open("rb") as handle:
            head = handle.read(1 << 16).decode("utf-8-sig", errors="ignore")  # enough to tell the format
        fmt = _guess_format(head, source)
        # JSONL splits at line feeds only; the csv module wants the file's own line ends
        with text_file(path, newline="\n" if fmt == "jsonl" else "") as handle:
            return _parse(handle, source, fmt, head)
    except inbound.InboundError as exc:
        raise LabelFileError(f"Cannot read {exc}") from None
    except UnicodeDecodeError:
        raise LabelFileError(
            f"{source} is not UTF-8 text (byte {utf8_error_offset(path)}): save it as UTF-8 JSONL or CSV"
        ) from None
    except OSError as exc:
        raise LabelFileError(f"Cannot read {path}: {exc.strerror or exc}") from exc


def parse_label_bytes(data: bytes, source: str = "upload") -> LabelFile:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LabelFileError(
            f"{source} is not UTF-8 text (byte {exc.start}): save it as UTF-8 JSONL or CSV"
        ) from None
    return parse_label_text(text, source=source)


def parse_label_text(text: str, source: str = "upload", fmt: str | None = None) -> LabelFile:
    """Parse JSONL or CSV; ``fmt`` ("jsonl" / "csv") overrides the guess from the
    file name and the first character."""
    fmt = fmt or _guess_format(text, source)
    return _parse(text, source, fmt, text)


def _parse(lines: str | TextIO, source: str, fmt: str, head: str) -> LabelFile:
    """`lines`: the whole text, or a file read line by line; `head`: its start."""
    if fmt == "jsonl":
        return _parse_jsonl(lines, source, head)
    if fmt == "csv":
        return _parse_csv(io.StringIO(lines, newline="") if isinstance(lines, str) else lines, source)
    raise LabelFileError(f"{source}: unknown format {echo(fmt)}; use jsonl or csv")


def _guess_format(text: str, source: str) -> str:
    suffix = Path(source).suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    stripped = text.lstrip()
    if not stripped:
        return "jsonl"  # empty either way; JSONL reads it without a header complaint
    return "jsonl" if stripped[0] in "{[" else "csv"


def _parse_jsonl(text: str | TextIO, source: str, head: str) -> LabelFile:
    result = LabelFile(source=source, format="jsonl")
    if head.lstrip().startswith("["):
        raise LabelFileError(
            f"{source}: this is one JSON array; write one JSON object per line (JSONL), "
            "as memlens exports do"
        )
    for number, obj in json_objects(text, source, result.issues):
        _add_row(result, number, obj, from_csv=False)
    return one_label_per_pair(result)


def _parse_csv(handle: TextIO, source: str) -> LabelFile:
    result = LabelFile(source=source, format="csv")
    reader = csv.DictReader(handle)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:  # e.g. one header cell longer than csv's field limit
        raise LabelFileError(f"{source}: the CSV header (line 1) cannot be read ({exc})") from None
    missing = [name for name in ("score", "label") if name not in header]
    if missing:
        found = clip(", ".join(repr(h) for h in header) or "nothing")
        raise LabelFileError(
            f"{source}: the CSV header (line 1) must name the columns 'score' and 'label' "
            f"(missing {', '.join(repr(m) for m in missing)}; found {found})"
        )
    try:
        for record in reader:
            number = reader.line_num
            if None in record:  # more cells than the header names
                result.issues.append(
                    LineIssue(result.source, number, LINE, f"{len(header) + len(record[None])} cells but the header names {len(header)}")
                )
                continue
            if all(value in (None, "") for value in record.values()):
                continue
            _add_row(result, number, record, from_csv=True)
    except csv.Error as exc:
        result.issues.append(LineIssue(result.source, reader.line_num, LINE, f"unreadable CSV ({exc}); the rest of the file was not read"))
    return one_label_per_pair(result)


# ----------------------------------------------------------------- one row


def _cell(value: Any) -> Any:
    """A CSV cell as written (the export's rule, undone by export.restore_cell)."""
    return restore_cell(value)


def _add_row(result: LabelFile, number: int, obj: dict[str, Any], *, from_csv: bool) -> None:
    values = {key: _cell(value) if from_csv else value for key, value in obj.items() if key is not None}
    problems: list[LineIssue] = []

    score = _score(values.get("score"), from_csv)
    if isinstance(score, str):
        problems.append(LineIssue(result.source, number, "score", score))
    label = values.get("label")
    if label is None:
        problems.append(LineIssue(result.source, number, "label", "missing"))
    elif label not in LABEL_VALUES:
        problems.append(
            LineIssue(result.source, number, "label", f"unknown label {echo(label)}; expected {' or '.join(repr(v) for v in LABEL_VALUES)}")
        )
    ids: dict[str, str | None] = {}
    for name in ID_FIELDS:
        value = values.get(name)
        if value is None or value == "":
            ids[name] = None
        elif isinstance(value, str):
            ids[name] = value
        elif isinstance(value, int) and not isinstance(value, bool):
            ids[name] = str(value)
        else:
            problems.append(LineIssue(result.source, number, name, f"must be text, got {type(value).__name__} {echo(value)}"))
    if problems:
        result.issues.extend(problems)
        return

    # No problems: the score is a number and the label one of LABEL_VALUES.
    row = LabelRow(line=number, score=float(score), label=str(label), message_id=ids["message_id"], memory_id=ids["memory_id"])
    row.rank = _optional_rank(result, number, values.get("rank"), from_csv)
    for name in TEXT_FIELDS:
        value = values.get(name)
        if value is not None and not isinstance(value, str):
            result.issues.append(LineIssue(result.source, number, name, f"must be text, got {type(value).__name__}", skipped=False))
        else:
            setattr(row, name, value)
    for name, columns in SEGMENT_COLUMNS.items():
        column = next((c for c in columns if values.get(c) is not None), None)
        if column is None:
            continue
        value = values[column]
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            result.issues.append(LineIssue(result.source, number, column, f"must be text, got {type(value).__name__}", skipped=False))
        else:
            setattr(row, name, value)
    for name in TIME_FIELDS:
        value = values.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not _is_timestamp(value):
            result.issues.append(
                LineIssue(result.source, number, name, f"not an ISO 8601 timestamp: {echo(value)}", skipped=False)
            )
        else:
            setattr(row, name, value)
    result.rows.append(row)


def _score(value: Any, from_csv: bool) -> float | str:
    """The score, or a message saying what is wrong with it."""
    if value is None:
        return "missing"
    if from_csv:
        try:
            number = float(value)
        except ValueError:
            return f"not a number: {echo(value)}"
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a number, got {type(value).__name__} {echo(value)}"
    else:
        number = float(value)
    if not math.isfinite(number):
        return f"not a finite number: {echo(value)}"
    return number


def _optional_rank(result: LabelFile, number: int, value: Any, from_csv: bool) -> int | None:
    if value is None:
        return None
    rank: int | None = None
    if from_csv:
        try:
            rank = int(value)
        except ValueError:
            rank = None
    elif isinstance(value, int) and not isinstance(value, bool):
        rank = value
    if rank is None or not 1 <= rank <= MAX_RANK:
        result.issues.append(LineIssue(result.source, number, "rank", f"must be a whole number from 1 to {MAX_RANK:,}, got {echo(value)}", skipped=False))
        return None
    return rank


def _is_timestamp(value: str) -> bool:
    """An ISO 8601 time inside the inbound boundary's range (year 9999 is not one)."""
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return False
    return inbound.sane_time(stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC))


# ----------------------------------------------------------------- label store


def from_labels(labels: Iterable[Any], source: str = "label store") -> LabelFile:
    """Label-store rows (``dashboard.database.model.Label``) as a LabelFile, one label
    per pair by ``one_label_per_pair`` (the rule label files follow too). Rows
    without a score cannot be placed against a floor and are reported.
    """
    result = LabelFile(source=source, format="label store", row_name="row")
    for position, label in enumerate(labels, start=1):
        score = label.score
        if score is None or not math.isfinite(float(score)):
            result.issues.append(LineIssue(result.source, position, "score", "missing (the store sent no score)"))
            continue
        result.rows.append(
            LabelRow(
                line=position,
                score=float(score),
                label=label.label,
                message_id=label.message_id,
                memory_id=label.memory_id,
                rank=label.rank,
                reviewer=label.reviewer,
                store=label.store,
                created_at=label.created_at,
                updated_at=label.updated_at,
            )
        )
    return one_label_per_pair(result)


# ----------------------------------------------------------------- one label per pair


def one_label_per_pair(result: LabelFile) -> LabelFile:
    """The one rule for several labels of one (message_id, memory_id) pair, used by
    every reader of labels (label files, the label store, ``memlens calibrate``),
    so a pair counts once in a sweep however the labels arrive:

    1. One reviewer has one label per pair: the label store keeps it that way
       (last-write-wins upserts), so a second row of the same reviewer (names
       matched case-insensitively; in a file without reviewers, any second row) is
       a duplicate. It is reported with its line, "duplicate of line N", and
       skipped; the first row stays.
    2. Across reviewers, the rule of dashboard/labels/resolution.py: the majority
       label counts (its first row stands for the pair); a tie is unresolved and
       the pair is left out. Notes say how many pairs had several reviewers and
       how many ties were left out. (An adjudicated label is applied before rows
       reach here: the label store's resolved rows, or a resolved export, hold one
       row per pair.)

    Rows without both ids are kept as they are (nothing says which pair they are).
    Returns `result` with its rows, issues (in line order) and notes updated."""
    first_of: dict[tuple[str, str, str], int] = {}  # (pair, reviewer) -> line of its first row
    rows_of: dict[tuple[str, str], list[LabelRow]] = {}
    kept: list[LabelRow] = []
    for row in result.rows:
        if not (row.message_id and row.memory_id):
            kept.append(row)
            continue
        pair = (row.message_id, row.memory_id)
        own = (*pair, reviewer_key(row.reviewer))
        if own in first_of:
            who = f", reviewer {echo(row.reviewer)}" if row.reviewer else ""
            result.issues.append(
                LineIssue(
                    result.source,
                    row.line,
                    "message_id, memory_id",
                    f"duplicate of line {first_of[own]} (same message_id {echo(pair[0])} and "
                    f"memory_id {echo(pair[1])}{who})",
                )
            )
            continue
        first_of[own] = row.line
        rows_of.setdefault(pair, []).append(row)
    ties = 0
    for rows in rows_of.values():
        label = majority([row.label for row in rows])
        if label is None:
            ties += 1
            continue
        kept.append(next(row for row in rows if row.label == label))
    result.rows = sorted(kept, key=lambda row: row.line)
    result.issues.sort(key=lambda issue: issue.line)  # stable: a line's own issues keep their order
    shared = sum(1 for rows in rows_of.values() if len(rows) > 1)
    if shared:
        result.notes.append(
            f"{shared} memory/message pair(s) were labelled by more than one reviewer; "
            f"the majority label of each is used ({RULE})."
        )
    if ties:
        result.notes.append(f"{ties} pair(s) tied between reviewers: unresolved, left out until adjudicated.")
    return result


inbound.register_reader(
    inbound.Reader(
        "label file", read_label_file, (LabelFileError,), ".jsonl",
        {"message_id": "t1", "memory_id": "m1", "rank": 1, "score": 0.5, "label": "relevant",
         "created_at": "2026-01-01T10:00:00Z"},
        qualname=f"{__name__}.read_label_file",
    )
)
