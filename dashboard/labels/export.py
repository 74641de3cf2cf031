"""Label exports: JSONL, CSV and TREC qrels. Pure functions returning text.

JSONL is one object per label with EXPORT_FIELDS (plus the texts only when the user
opted in), readable by ``pandas.read_json(lines=True)`` or a plain json loop.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable

from dashboard.database.model import EXPORT_FIELDS, TEXT_FIELDS, Label

# Spreadsheets run a cell that starts with one of these as a formula.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


_SPACE = re.compile(r"\s")


def trec_token(value: str) -> str:
    """An id as one TREC column: TREC files (qrels, runs) are whitespace-separated
    lines, so an id holding a space would shift the columns and one holding a line
    break would write a line of its own (a forged judgment). Every whitespace
    character becomes "_"; an empty id is "_"."""
    return _SPACE.sub("_", value) or "_"


def neutralise_cell(value: object) -> object:
    """Prefix a text cell that a spreadsheet would evaluate with a quote; numbers
    (a negative score included) are left as numbers. Reversible (``restore_cell``):
    a text that begins with a quote itself, or with or after blanks that a reader
    would strip, is prefixed too, so a leading quote always means "the exporter put
    it here" and the rest of the cell is the value exactly."""
    if isinstance(value, str) and (value.startswith((*FORMULA_PREFIXES, "'")) or value != value.strip()):
        return "'" + value
    return value


def restore_cell(value: str | None) -> str | None:
    """A CSV cell as memlens reads it back, the one inverse of ``neutralise_cell``
    (labels import, label files): after a leading quote, the rest exactly; any other
    cell (a hand-written file) without surrounding blanks. Empty is None."""
    if value is None:
        return None
    value = value[1:] if value.startswith("'") else value.strip()
    return value if value != "" else None


def _columns(include_text: bool) -> tuple[str, ...]:
    return EXPORT_FIELDS + (TEXT_FIELDS if include_text else ())


def to_jsonl(labels: Iterable[Label], *, include_text: bool = False) -> str:
    return "".join(
        json.dumps(label.export_row(include_text), ensure_ascii=False) + "\n" for label in labels
    )


def to_csv(labels: Iterable[Label], *, include_text: bool = False) -> str:
    out = io.StringIO()
    # CRLF (RFC 4180): the writer quotes a cell holding any character of the line
    # ending, so with "\n" alone a memory text holding a bare "\r" broke its row.
    writer = csv.DictWriter(out, fieldnames=_columns(include_text), lineterminator="\r\n")
    writer.writeheader()
    for label in labels:
        writer.writerow({k: neutralise_cell(v) for k, v in label.export_row(include_text).items()})
    return out.getvalue()


def to_qrels(labels: Iterable[Label]) -> str:
    """TREC qrels: `message_id 0 memory_id relevance`. Several reviewers of one
    pair collapse by the one rule (dashboard/labels/resolution.py): the majority,
    and a tie is unresolved and left out (pass resolved labels to apply an
    adjudication). Ids go through `trec_token`, so each label is exactly one line."""
    from dashboard.labels.resolution import majority, votes_by_pair

    lines = []
    for (message, memory), votes in sorted(votes_by_pair(labels).items()):
        label = majority([vote.label for vote in votes.values()])
        if label is not None:
            lines.append(f"{trec_token(message)} 0 {trec_token(memory)} {int(label == 'relevant')}")
    return "\n".join(lines) + ("\n" if lines else "")
