"""memlens's own files, told apart from retrieval logs before a log is read.

Every log reader asks here first (``retrieval_log.read_log`` and ``read_log_bytes``,
and ``columnar.file_kind``, which the monitor reads each file through), so one rule
names them all, from the first line (a floor file: the first object) alone:

* a run export (``memlens runs export RUN --format jsonl``): one line per question
  with its ranked hits under ``hits``; read as a log it gave "imported 0 rows" and
  every question as a turn with no memory;
* a label export (the Label, Inspect or Calibrate download, label JSONL or CSV): only
  the rows someone labelled, a sample of each turn, so turn figures from it would be
  the sample's;
* a memories file (what ``memlens import`` takes, demo_data/memories.jsonl): read as
  a log it gave a field error per line, 23,529 of them;
* a judged set (demo_data/queries.jsonl, dashboard/judged.py): read as a log, each
  question was a "turn" with no timestamp;
* a floor file (``memlens-floor.json``, dashboard/floor_config.py).

``own_file`` names what such a file is and where it goes instead (a sentence);
``None`` for anything else, which the log reader then reads (and judges) as a log.
``refuse_own_file`` raises ``OwnFileError`` with that sentence. Pure.
"""

from __future__ import annotations

import json
from pathlib import Path

from dashboard.database.model import EXPORT_FIELDS
from dashboard.logs.log_files import LogFormatError

# The first line of a run export holds one question's hits, a floor file's first
# object its floors per segment: well under this.
PEEK_BYTES = 1 << 20

RUN_EXPORT = (
    "a memlens run export (memlens runs export RUN --format jsonl: one line per question with its ranked hits), "
    "not a retrieval log; the run itself is in memlens's database (memlens runs list), where memlens compare, "
    "memlens whatif and the Calibrate page read it"
)
LABEL_EXPORT = (
    "a memlens label export (labels by id, the rows a reviewer labelled: a sample of each turn), not a retrieval "
    "log; give it to memlens calibrate, or read the log the labels were drawn from"
)
MEMORIES_FILE = (
    "a memlens memories file (one memory a line: id, user_id, text), not a retrieval log; give it to `memlens import`"
)
JUDGED_SET = (
    "a memlens judged set (one question a line with the memories that answer it), not a retrieval log; "
    "give it to `memlens eval`"
)
FLOOR_FILE = (
    "a memlens floor file (the floor Calibrate exports), not a retrieval log; give it to "
    "`memlens monitor --floor-config` with the log, or to FloorConfig.load in the agent"
)


class OwnFileError(LogFormatError):
    """A file memlens wrote or reads elsewhere, given where a retrieval log is read.
    Exit 2: the input is unusable here, and the message says where it goes."""


def _first_line(head: bytes) -> bytes:
    """The first non-blank line of `head` (without looking past it)."""
    start = 0
    while start < len(head):
        end = head.find(b"\n", start)
        end = len(head) if end < 0 else end
        if head[start:end].strip():
            return head[start:end]
        start = end + 1
    return b""


def _first_object(head: bytes) -> dict | None:
    """The first JSON object of `head`: its first non-blank line, else, when that line
    only opens one (a pretty-printed document, as a floor file is), the whole of `head`."""
    line = _first_line(head).decode("utf-8-sig", errors="replace").strip()
    try:
        first = json.loads(line if line != "{" else head.decode("utf-8-sig", errors="replace"))
    except ValueError:
        return None
    return first if isinstance(first, dict) else None


def _what_object(first: dict) -> str | None:
    keys = set(first)
    if "run_id" in keys and isinstance(first.get("hits"), list) and "message_id" in keys:
        return RUN_EXPORT
    if {"message_id", "memory_id", "label", "reviewer"} <= keys:
        return LABEL_EXPORT
    if "message_id" in keys and "memory_id" not in keys and "query" in keys and ("relevant" in keys or "grades" in keys):
        return JUDGED_SET
    if "message_id" in keys or "memory_id" in keys:
        return None  # a log row (or a bad one): the log reader judges it
    if {"id", "text"} <= keys:
        return MEMORIES_FILE
    if "floor" in keys:
        return FLOOR_FILE
    return None


def own_file_head(head: bytes, name: str) -> str | None:
    """What memlens file the bytes `head` (a file's start) are, or None."""
    suffix = Path(name).suffix.lower()
    if suffix in (".parquet", ".pq"):
        return None
    if suffix == ".csv":
        line = _first_line(head).decode("utf-8-sig", errors="replace")
        header = {cell.strip().strip('"') for cell in line.split(",")}
        return LABEL_EXPORT if set(EXPORT_FIELDS) <= header else None
    first = _first_object(head)
    return _what_object(first) if first is not None else None


def own_file(path: str | Path) -> str | None:
    """What memlens file `path` is (a sentence), or None when it is none of them."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            # The first line is enough, but for a pretty-printed document: a large
            # log costs one line read here, not a megabyte.
            head = b""
            for raw in iter(lambda: handle.readline(PEEK_BYTES), b""):
                head += raw
                if raw.strip() or len(head) >= PEEK_BYTES:  # a file of blank lines is read no further
                    break
            if head.strip().lstrip(b"\xef\xbb\xbf") == b"{":
                head += handle.read(max(0, PEEK_BYTES - len(head)))
    except OSError:
        return None  # the log reader says why the file cannot be read
    return own_file_head(head, str(path))


def refuse_own_file(path: str | Path, head: bytes | None = None) -> None:
    """Raise OwnFileError naming what `path` is when it is one of memlens's own files
    (read from `head` when given: an upload held in memory)."""
    what = own_file(path) if head is None else own_file_head(head[:PEEK_BYTES], str(path))
    if what is not None:
        raise OwnFileError(f"{path} is {what}")
