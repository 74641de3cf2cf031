"""memlens's own exports, told apart from retrieval logs before a log is read.

A run export (``memlens runs export RUN --format jsonl``) holds one line per question
with its ranked hits under ``hits``; read as a retrieval log it gave "imported 0 rows"
and every question as a turn with no memory. A label export (the Label, Inspect or
Calibrate download, ``memlens`` label JSONL or CSV) holds only the rows someone
labelled, a sample of each turn, so turn figures from it would be the sample's.
``own_export`` names what such a file is and where it goes instead; ``None`` for
anything else, which the log reader then reads (and judges) as a log. Pure.
"""

from __future__ import annotations

import json
from pathlib import Path

from dashboard.database.model import EXPORT_FIELDS

PEEK_BYTES = 1 << 20  # the first line of a run export holds one question's hits: well under this

RUN_EXPORT = (
    "a memlens run export (memlens runs export RUN --format jsonl: one line per question with its ranked hits), "
    "not a retrieval log; the run itself is in memlens's database (memlens runs list), where memlens compare, "
    "memlens whatif and the Calibrate page read it"
)
LABEL_EXPORT = (
    "a memlens label export (labels by id, the rows a reviewer labelled: a sample of each turn), not a retrieval "
    "log; give it to memlens calibrate, or read the log the labels were drawn from"
)


def _first_line(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            for raw in iter(lambda: handle.readline(PEEK_BYTES), b""):
                if raw.strip():
                    return raw.decode("utf-8-sig", errors="replace").strip()
    except OSError:
        return None  # the log reader says why the file cannot be read
    return None


def own_export(path: str | Path) -> str | None:
    """What memlens export `path` is (a sentence), or None when it is none of them."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        return None
    line = _first_line(path)
    if line is None:
        return None
    if path.suffix.lower() == ".csv":
        header = {cell.strip().strip('"') for cell in line.split(",")}
        return LABEL_EXPORT if set(EXPORT_FIELDS) <= header else None
    try:
        first = json.loads(line)
    except ValueError:
        return None
    if not isinstance(first, dict):
        return None
    if "run_id" in first and isinstance(first.get("hits"), list) and "message_id" in first:
        return RUN_EXPORT
    if {"message_id", "memory_id", "label", "reviewer"} <= set(first):
        return LABEL_EXPORT
    return None
