"""One reviewer working through a labelling session. Pure: the Label page and the
tests drive the same functions.

The reviewer's queue is read from the label database on every call, never kept
in memory: a label is written when the button is pressed, so a crash, a reload
or a second browser tab loses nothing and agrees with the others. An action
returns an ``UndoStep`` holding what the row was before, so undo restores it
exactly (a relabel goes back to the old label, a first label is removed).
"""

from __future__ import annotations

from dataclasses import dataclass

from connectors.common.errors import MemlensError
from dashboard.database import AppDatabase
from dashboard.database.sessions import LabelSession, SessionItem
from dashboard.labels.resolution import on_list

ACTIONS = ("relevant", "not_relevant", "skip")


@dataclass(frozen=True)
class Turn:
    """One message of the session and the rows of it this reviewer labels."""

    message_id: str
    user_id: str | None
    query_text: str | None
    items: tuple[SessionItem, ...]


@dataclass(frozen=True)
class UndoStep:
    session: str
    message_id: str
    memory_id: str
    reviewer: str
    action: str
    previous_label: str | None  # None: the row had no label from this reviewer
    was_skipped: bool


@dataclass
class ReviewerQueue:
    """A reviewer's share of a session and where they are in it."""

    session: LabelSession
    reviewer: str
    items: list[SessionItem]  # the rows this reviewer labels, in session order
    labels: dict[tuple[str, str], str]  # (message_id, memory_id) -> this reviewer's label
    skipped: set[tuple[str, str]]
    assigned: bool  # False when the session names no reviewers, or not this one

    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def done(self) -> int:
        return sum(1 for item in self.items if self.status(item) is not None)

    def status(self, item: SessionItem) -> str | None:
        key = (item.message_id, item.memory_id)
        if key in self.labels:
            return self.labels[key]
        return "skip" if key in self.skipped else None

    def current(self) -> tuple[Turn, SessionItem] | None:
        """The first row not yet labelled or skipped, and its turn; None when done."""
        for item in self.items:
            if self.status(item) is None:
                return self.turn(item.message_id), item
        return None

    def turn(self, message_id: str) -> Turn:
        rows = tuple(item for item in self.items if item.message_id == message_id)
        query = next((item.query_text for item in rows if item.query_text), None)
        user = next((item.user_id for item in rows if item.user_id), None)
        return Turn(message_id, user, query, rows)

    def turns(self) -> list[str]:
        return list(dict.fromkeys(item.message_id for item in self.items))


def load_queue(db: AppDatabase, session_name: str, reviewer: str) -> ReviewerQueue:
    session = db.sessions.get(session_name)
    if session is None:
        raise KeyError(f"no labelling session named {session_name!r}")
    items = db.sessions.items(session_name)
    assignments = db.sessions.assignments(session_name)
    # Names match case-insensitively: "Ana" works through ana's queue, not a queue of her own.
    assigned = bool(assignments) and any(on_list(reviewer, names) for names in assignments.values())
    if assigned:
        items = [item for item in items if on_list(reviewer, assignments.get(item.message_id, []))]
    labels = {(row.message_id, row.memory_id): row.label for row in db.sessions.labels(session_name, reviewer=reviewer)}
    skipped = {(m, k) for m, k, _ in db.sessions.skips(session_name, reviewer=reviewer)}
    return ReviewerQueue(session, reviewer, items, labels, skipped, assigned)


class NotAReviewer(MemlensError, ValueError):
    """A name the session does not list: its labels would count for no one the lead chose."""


def check_reviewer(session: LabelSession, reviewer: str) -> None:
    """NotAReviewer unless `reviewer` is on the session's list (case-insensitively);
    a session that names no reviewers takes anyone."""
    if session.reviewers and not on_list(reviewer, session.reviewers):
        raise NotAReviewer(
            f"{reviewer!r} is not among this session's reviewers ({', '.join(session.reviewers)}): "
            "nothing was saved. Check the spelling, or ask the session's lead to add the name."
        )


def label_store_name(item: SessionItem, session: LabelSession, connected: str | None) -> str:
    """What a label's `store` says: the store the log row names, else the session's,
    else the store connected while labelling."""
    return item.store or session.store or connected or "unknown"


def record(
    db: AppDatabase,
    session: LabelSession,
    item: SessionItem,
    reviewer: str,
    action: str,
    *,
    connected_store: str | None = None,
    memory_missing: bool = False,
) -> UndoStep:
    """Write one action at once and say how to take it back. A memory the store no
    longer has can be marked not relevant or skipped, not relevant."""
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    check_reviewer(session, reviewer)
    if memory_missing and action == "relevant":
        raise ValueError(f"memory {item.memory_id} is missing from the store: it cannot be judged relevant")
    previous = db.labels.get(item.message_id, item.memory_id, reviewer)
    key = (item.message_id, item.memory_id)
    was_skipped = any((m, k) == key for m, k, _ in db.sessions.skips(session.name, reviewer=reviewer))
    if action == "skip":
        db.sessions.skip(session.name, *key, reviewer)
    else:
        db.labels.save(
            message_id=item.message_id,
            memory_id=item.memory_id,
            label=action,
            reviewer=reviewer,
            store=label_store_name(item, session, connected_store),
            rank=item.rank,
            score=item.score,
        )
        if was_skipped:
            db.sessions.unskip(session.name, *key, reviewer)
    return UndoStep(
        session.name,
        item.message_id,
        item.memory_id,
        reviewer,
        action,
        previous.label if previous else None,
        was_skipped,
    )


def undo(db: AppDatabase, step: UndoStep, item: SessionItem, session: LabelSession, connected_store: str | None = None) -> None:
    """Put the row back the way it was before `step`."""
    key = (step.message_id, step.memory_id, step.reviewer)
    if step.previous_label is None:
        db.labels.delete(*key)
    else:
        db.labels.save(
            message_id=step.message_id,
            memory_id=step.memory_id,
            label=step.previous_label,
            reviewer=step.reviewer,
            store=label_store_name(item, session, connected_store),
            rank=item.rank,
            score=item.score,
        )
    if step.was_skipped:
        db.sessions.skip(step.session, *key)
    else:
        db.sessions.unskip(step.session, *key)
