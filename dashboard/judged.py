"""Judged questions: the one model and the one parser of a judged-question file.

Every reader of judged questions (the demo labels and sample log, the Quality page's
demo queries, judged sets for evaluation, the CLI) uses `JudgedQuestion` and
`parse_jsonl`. A line holds ``message_id``, ``user_id`` (a string or null),
``query``, ``relevant`` memory ids and optional ``answerable`` (when given it must
agree with the judgments), optional ``grades`` {memory_id: 0-3} for graded relevance
and optional ``tags``. demo_data/queries.jsonl is such a file.

A leaf module: it imports no other part of dashboard/, so ranking, evaluation and
the demo tools can all build on it. Pure functions: no Streamlit, no store calls.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectors.common import inbound
from connectors.common.lines import LineIssue, json_objects, text_file, utf8_error_offset

DEMO_QUERIES = Path(__file__).resolve().parents[1] / "demo_data" / "queries.jsonl"
MAX_GRADE = 3


@dataclass(frozen=True)
class JudgedQuestion:
    message_id: str
    user_id: str | None
    query: str
    grades: dict[str, int]  # memory id -> grade; > 0 is relevant, 0 judged not relevant
    tags: tuple[str, ...] = ()

    @property
    def relevant(self) -> tuple[str, ...]:
        """The ids graded > 0, in the order the file gave them."""
        return tuple(memory_id for memory_id, grade in self.grades.items() if grade > 0)

    @property
    def answerable(self) -> bool:
        return any(g > 0 for g in self.grades.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "user_id": self.user_id,
            "query": self.query,
            "grades": dict(sorted(self.grades.items())),
            "tags": list(self.tags),
        }


# A named set of judged questions (dashboard/evaluation/judged_sets.py reads them from
# files; the app database keeps them). Here, beside the question, so the database
# can store one without importing evaluation.
@dataclass
class JudgedSet:
    name: str
    questions: list[JudgedQuestion]
    source: str = ""
    issues: list[LineIssue] = field(default_factory=list)

    @property
    def content_hash(self) -> str:
        return content_hash(self.questions)

    def by_id(self) -> dict[str, JudgedQuestion]:
        return {q.message_id: q for q in self.questions}

    def issue_report(self) -> str:
        return "\n".join(str(issue) for issue in self.issues)


def content_hash(questions: Iterable[JudgedQuestion]) -> str:
    """sha256 over the questions in message-id order: the same judgments in another
    order are the same version."""
    canonical = json.dumps(
        sorted((q.as_dict() for q in questions), key=lambda d: d["message_id"]), sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def check_grade(value: Any) -> int | None:
    """A whole number 0-MAX_GRADE as an int, else None (booleans are not grades)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
        return None
    return int(value) if 0 <= value <= MAX_GRADE else None


def check_tags(tags: Any) -> tuple[str, ...] | None:
    """Tags as a tuple (none, one string or a list of non-empty strings), else None."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        return (tags,)
    if isinstance(tags, list) and all(isinstance(t, str) and t for t in tags):
        return tuple(tags)
    return None


def parse_jsonl(text: str | Iterable[str], source: str = "judged.jsonl") -> tuple[list[JudgedQuestion], list[LineIssue]]:
    """Questions from JSONL (the whole text, or a file's lines one at a time); a bad
    line is named with its number and field, the good lines are used, and a
    message_id seen twice keeps its first line."""
    questions: list[JudgedQuestion] = []
    issues: list[LineIssue] = []
    seen: dict[str, int] = {}
    for number, obj in json_objects(text.lstrip("\ufeff") if isinstance(text, str) else text, source, issues):

        def bad(name: str, message: str, number: int = number) -> None:
            issues.append(LineIssue(source, number, name, message))

        message_id, query, user_id = obj.get("message_id"), obj.get("query"), obj.get("user_id")
        relevant, answerable, grades = obj.get("relevant", []), obj.get("answerable"), obj.get("grades")
        tags = check_tags(obj.get("tags"))
        if not isinstance(message_id, str) or not message_id.strip():
            bad("message_id", "required, a non-empty string")
            continue
        if not isinstance(query, str) or not query.strip():
            bad("query", "required, a non-empty string")
            continue
        if user_id is not None and not isinstance(user_id, str):
            bad("user_id", f"must be a string or null, got {user_id!r}")
            continue
        if not isinstance(relevant, list) or not all(isinstance(m, str) and m for m in relevant):
            bad("relevant", "a list of memory ids (strings)")
            continue
        if grades is not None and (
            not isinstance(grades, dict) or any(check_grade(g) is None for g in grades.values())
        ):
            bad("grades", f"an object of memory id -> whole number 0-{MAX_GRADE}")
            continue
        if tags is None:
            bad("tags", "a string or a list of non-empty strings")
            continue
        judged = {memory_id: 1 for memory_id in relevant}
        judged.update({m: int(g) for m, g in (grades or {}).items()})
        is_answerable = any(g > 0 for g in judged.values())
        if answerable is not None and not isinstance(answerable, bool):
            bad("answerable", f"true or false, got {answerable!r}")
            continue
        if answerable is not None and answerable != is_answerable:
            bad(
                "answerable",
                f"is {str(answerable).lower()} but {sum(g > 0 for g in judged.values())} memory id(s) are "
                "judged relevant: an answerable question needs one, an unanswerable one none",
            )
            continue
        if message_id in seen:
            bad("message_id", f"{message_id!r} already used on line {seen[message_id]}")
            continue
        seen[message_id] = number
        questions.append(JudgedQuestion(message_id, user_id, query, judged, tags))
    return questions, issues


def read_questions(path: str | Path) -> tuple[list[JudgedQuestion], list[LineIssue]]:
    """The questions of a JSONL file and an issue per unusable line; a file that
    cannot be read is one issue (line 0), so a caller reports it like any other."""
    path = Path(path)
    try:
        inbound.regular_file(path, "judged questions file")
        with text_file(path) as lines:  # line by line: a large file is never held whole
            return parse_jsonl(lines, source=path.name)
    except inbound.InboundError as exc:
        return [], [LineIssue(path.name, 0, "(file)", f"cannot read {exc}")]
    except OSError as exc:
        return [], [LineIssue(path.name, 0, "(file)", f"cannot read {path}: {exc.strerror or exc}")]
    except UnicodeDecodeError:
        return [], [LineIssue(path.name, 0, "(file)", f"not UTF-8 text (byte {utf8_error_offset(path)}): save it as UTF-8 JSONL")]


inbound.register_reader(
    inbound.Reader(
        "judged questions", read_questions, (), ".jsonl",
        {"message_id": "q1", "user_id": "sam", "query": "Where does the user live?", "relevant": ["m1"]},
        qualname=f"{__name__}.read_questions",
    )
)
