"""Judged sets: named questions, each with the memories judged relevant to it.

A judged set comes from one of three places:

    JSONL          the demo queries' format: message_id, user_id, query, relevant,
                   answerable; optional ``grades`` {memory_id: 0-3} for graded
                   relevance and optional ``tags`` (e.g. a question category)
    TREC           qrels (``qid 0 docid grade``) plus a topics file
                   (``message_id<TAB>query[<TAB>user_id]``); a topic with no
                   relevant docid is an unanswerable question
    labels         labelled turns promoted to a judged set (the majority label of
                   each (message, memory) pair; a turn needs its query text)

Every bad line is named (file, line, field) and the rest is used. A set's
``content_hash`` covers every question, so a run can say exactly which version of
the set it was judged against. Pure functions: no Streamlit, no store calls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectors.common.lines import LineIssue, json_objects
from dashboard.ranking.metrics import DEMO_QUERIES, grades_from_labels

MAX_GRADE = 3


class JudgedSetError(ValueError):
    """A judged set that cannot be used at all (unreadable file, no usable question)."""


@dataclass(frozen=True)
class JudgedQuestion:
    message_id: str
    user_id: str | None
    query: str
    grades: dict[str, int]  # memory id -> grade; > 0 is relevant, 0 judged not relevant
    tags: tuple[str, ...] = ()

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


def _grade(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        return None
    return int(value) if 0 <= value <= MAX_GRADE else None


def _check_tags(tags: Any) -> tuple[str, ...] | None:
    if tags is None:
        return ()
    if isinstance(tags, str):
        return (tags,)
    if isinstance(tags, list) and all(isinstance(t, str) and t for t in tags):
        return tuple(tags)
    return None


def parse_jsonl(text: str, source: str = "judged.jsonl") -> tuple[list[JudgedQuestion], list[LineIssue]]:
    """Questions from JSONL; a bad line is named with its number and field, the
    good lines are used, and a message_id seen twice keeps its first line."""
    questions: list[JudgedQuestion] = []
    issues: list[LineIssue] = []
    seen: dict[str, int] = {}
    for number, obj in json_objects(text.lstrip("\ufeff"), source, issues):

        def bad(name: str, message: str, number: int = number) -> None:
            issues.append(LineIssue(source, number, name, message))

        message_id, query, user_id = obj.get("message_id"), obj.get("query"), obj.get("user_id")
        relevant, answerable, grades = obj.get("relevant", []), obj.get("answerable"), obj.get("grades")
        tags = _check_tags(obj.get("tags"))
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
            not isinstance(grades, dict) or any(_grade(g) is None for g in grades.values())
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


def parse_trec(
    qrels_text: str, topics_text: str, *, qrels_source: str = "qrels", topics_source: str = "topics"
) -> tuple[list[JudgedQuestion], list[LineIssue]]:
    """Questions from TREC qrels plus a tab-separated topics file."""
    issues: list[LineIssue] = []
    topics: dict[str, tuple[str, str | None, int]] = {}
    for number, line in enumerate(topics_text.lstrip("\ufeff").split("\n"), start=1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t")
        if len(parts) not in (2, 3) or not parts[0].strip() or not parts[1].strip():
            issues.append(
                LineIssue(topics_source, number, "(line)", "expected message_id<TAB>query[<TAB>user_id]")
            )
            continue
        message_id = parts[0].strip()
        if message_id in topics:
            issues.append(
                LineIssue(topics_source, number, "message_id", f"{message_id!r} already used on line {topics[message_id][2]}")
            )
            continue
        user = parts[2].strip() if len(parts) == 3 and parts[2].strip() else None
        topics[message_id] = (parts[1].strip(), user, number)
    grades: dict[str, dict[str, int]] = {}
    for number, line in enumerate(qrels_text.lstrip("\ufeff").split("\n"), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            issues.append(LineIssue(qrels_source, number, "(line)", "expected 4 columns: qid 0 docid grade"))
            continue
        qid, _, docid, grade_text = parts
        try:
            grade = _grade(float(grade_text))
        except ValueError:
            grade = None
        if grade is None:
            issues.append(LineIssue(qrels_source, number, "grade", f"{grade_text!r} is not a whole number 0-{MAX_GRADE}"))
            continue
        if qid not in topics:
            issues.append(LineIssue(qrels_source, number, "qid", f"{qid!r} has no line in {topics_source}"))
            continue
        grades.setdefault(qid, {})[docid] = grade
    questions = [
        JudgedQuestion(message_id, user, query, grades.get(message_id, {}))
        for message_id, (query, user, _) in topics.items()
    ]
    return questions, issues


def from_labels(
    labels: Iterable[Any], texts: Mapping[str, tuple[str | None, str | None]], source: str = "labels"
) -> tuple[list[JudgedQuestion], list[LineIssue]]:
    """Labelled turns promoted to questions: the majority label of each pair (ties
    relevant). `texts` maps message_id -> (query text, user id); a turn whose query
    text was not kept cannot be run again, so it is named and left out."""
    grades = grades_from_labels(labels)
    questions, issues = [], []
    for message_id in sorted(grades):
        query, user = texts.get(message_id, (None, None))
        if not query:
            issues.append(
                LineIssue(source, 0, "query_text", f"turn {message_id!r} has no stored query text (keep text when labelling)")
            )
            continue
        questions.append(JudgedQuestion(message_id, user, query, grades[message_id]))
    return questions, issues


def read_file(
    path: str | Path, *, name: str | None = None, topics: str | Path | None = None
) -> JudgedSet:
    """A judged set from a JSONL file, or from TREC qrels when `topics` is given."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        topics_text = Path(topics).read_text(encoding="utf-8") if topics else None
    except (OSError, UnicodeDecodeError) as exc:
        raise JudgedSetError(f"Cannot read {exc.filename if isinstance(exc, OSError) else path}: {exc}") from exc
    if topics_text is not None:
        questions, issues = parse_trec(text, topics_text, qrels_source=path.name, topics_source=Path(str(topics)).name)
    else:
        questions, issues = parse_jsonl(text, source=path.name)
    return _checked(JudgedSet(name or path.stem, questions, source=path.name, issues=issues))


def from_text(text: str, *, name: str, source: str) -> JudgedSet:
    """A judged set from uploaded JSONL text."""
    questions, issues = parse_jsonl(text, source=source)
    return _checked(JudgedSet(name, questions, source=source, issues=issues))


def demo_set() -> JudgedSet:
    """The 38 bundled demo queries, as the judged set "demo"."""
    return read_file(DEMO_QUERIES, name="demo")


def _checked(judged: JudgedSet) -> JudgedSet:
    if not judged.questions:
        detail = f":\n{judged.issue_report()}" if judged.issues else ""
        raise JudgedSetError(f"{judged.source}: no usable question{detail}")
    return judged


def users_missing(asked: Iterable[str | None], held: Iterable[str]) -> list[str]:
    """The users questions are asked for that a store does not hold, sorted: their
    questions can only come back empty, so a run would count them as misses."""
    return sorted({user for user in asked if user} - set(held))
