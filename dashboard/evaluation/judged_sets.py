"""Judged sets: named questions, each with the memories judged relevant to it.

A judged set comes from one of three places:

    JSONL          the demo queries' format, read by dashboard/judged.py (the one
                   model and parser of judged questions): message_id, user_id,
                   query, relevant, answerable; optional ``grades`` {memory_id: 0-3}
                   for graded relevance and optional ``tags`` (e.g. a question category)
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

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from connectors.common import inbound
from connectors.common.errors import MemlensError
from connectors.common.lines import LineIssue, text_file
from dashboard.judged import DEMO_QUERIES, MAX_GRADE, JudgedQuestion, JudgedSet, check_grade, parse_jsonl
from dashboard.ranking.metrics import grades_from_labels


class JudgedSetError(MemlensError, ValueError):
    """A judged set that cannot be used at all (unreadable file, no usable question)."""


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
            grade = check_grade(float(grade_text))
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
    """Labelled turns promoted to questions: the majority label of each pair (a tie is
    unresolved and left out, dashboard/labels/resolution.py). `texts` maps message_id -> (query text, user id); a turn whose query
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


def file_or_kept(
    text: str, db: Any, *, name: str | None = None, topics: str | Path | None = None
) -> JudgedSet | None:
    """What a command's judged-set argument names: the file at `text` when there is
    one (read_file), else the set kept under that name in the app database `db`; None
    when it is neither."""
    if Path(text).exists():
        return read_file(text, name=name, topics=topics)
    loaded: JudgedSet | None = db.judged_sets.load(text)
    return loaded


def read_file(
    path: str | Path, *, name: str | None = None, topics: str | Path | None = None
) -> JudgedSet:
    """A judged set from a JSONL file, or from TREC qrels when `topics` is given."""
    path = Path(path)
    try:
        inbound.regular_file(path, "judged set")
        if topics:
            inbound.regular_file(topics, "topics file")
            text = path.read_text(encoding="utf-8")
            topics_text = Path(topics).read_text(encoding="utf-8")
            questions, issues = parse_trec(text, topics_text, qrels_source=path.name, topics_source=Path(str(topics)).name)
        else:
            with text_file(path) as lines:  # line by line: a large file is never held whole
                questions, issues = parse_jsonl(lines, source=path.name)
    except inbound.InboundError as exc:
        raise JudgedSetError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise JudgedSetError(f"Cannot read {exc.filename if isinstance(exc, OSError) else path}: {exc}") from exc
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


inbound.register_reader(
    inbound.Reader(
        "judged set", read_file, (JudgedSetError,), ".jsonl",
        {"message_id": "q1", "user_id": "sam", "query": "Where does the user live?", "relevant": ["m1"], "grades": {"m1": 3}},
        qualname=f"{__name__}.read_file",
    )
)
