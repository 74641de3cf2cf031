"""Managing a labelling session after it was drawn, for the Label page and
`memlens sessions`: which turns may be handed to someone else, and how.

A turn is *labelled* for a reviewer when they have a label or a skip on one of its
rows; work done stays where it is. Editing the reviewers or the overlap deals the
turns nobody has started again among the new list (sampling.assign_turns, with the
session's seed); reassigning moves one reviewer's unstarted turns to another.
Archiving hides a session from the Label page's picker (its labels still count);
deleting removes the session and keeps every label.
"""

from __future__ import annotations

from dataclasses import dataclass

from connectors.common.errors import MemlensError
from dashboard.database import AppDatabase
from dashboard.database.model import reviewer_key
from dashboard.database.sessions import NoSuchSession
from dashboard.labels.resolution import on_list, parse_names
from dashboard.labels.sampling import assign_turns


class SessionEditError(MemlensError, ValueError):
    """A change to a session that cannot be made (an overlap out of range, a reviewer
    not on its list); the message says which."""


@dataclass
class Reassigned:
    turns: int  # turns whose assignment changed
    kept: int  # turns left as they were because someone has started them

    def line(self) -> str:
        return f"{self.turns} turn(s) reassigned; {self.kept} turn(s) already started kept their reviewers"


def _started(db: AppDatabase, name: str) -> dict[str, set[str]]:
    """turn -> the reviewer keys with a label or a skip on one of its rows."""
    started: dict[str, set[str]] = {}
    for label in db.sessions.labels(name):
        started.setdefault(label.message_id, set()).add(reviewer_key(label.reviewer))
    for message, _, reviewer in db.sessions.skips(name):
        started.setdefault(message, set()).add(reviewer_key(reviewer))
    return started


def _session(db: AppDatabase, name: str):
    session = db.sessions.get(name)
    if session is None:
        raise NoSuchSession(f"no labelling session named {name!r}")
    return session


def edit_session(db: AppDatabase, name: str, *, reviewers: str | list[str] | None = None,
                 overlap: float | None = None) -> Reassigned:  # fmt: skip
    """New reviewers and/or overlap; the turns nobody started are dealt again."""
    session = _session(db, name)
    if reviewers is None:
        names = list(session.reviewers)
    else:
        names = parse_names(reviewers if isinstance(reviewers, str) else ", ".join(reviewers))
    share = session.overlap if overlap is None else float(overlap)
    if not 0.0 <= share <= 1.0:
        raise SessionEditError(f"overlap must be between 0 and 1, got {share!r}")
    turns = list(dict.fromkeys(item.message_id for item in db.sessions.items(name)))
    started = _started(db, name)
    fresh = [turn for turn in turns if not started.get(turn)]
    dealt = assign_turns(fresh, names, share if len(names) > 1 else 0.0, seed=session.seed)
    # No reviewers: everyone may label every turn, so the fresh turns lose their assignment.
    db.sessions.update(name, reviewers=names, overlap=share if len(names) > 1 else 0.0,
                         assignments={turn: dealt.get(turn, []) for turn in fresh})  # fmt: skip
    return Reassigned(len(fresh), len(turns) - len(fresh))


def reassign(db: AppDatabase, name: str, from_reviewer: str, to_reviewer: str) -> Reassigned:
    """Move `from_reviewer`'s turns they have not started to `to_reviewer` (who must
    be on the session's list, when it has one)."""
    session = _session(db, name)
    if session.reviewers and not on_list(to_reviewer, session.reviewers):
        raise SessionEditError(f"{to_reviewer!r} is not among this session's reviewers: add the name first")
    started = _started(db, name)
    moved, kept = {}, 0
    for turn, names in db.sessions.assignments(name).items():
        if not on_list(from_reviewer, names):
            continue
        if reviewer_key(from_reviewer) in started.get(turn, set()):
            kept += 1
            continue
        others = [n for n in names if reviewer_key(n) != reviewer_key(from_reviewer)]
        moved[turn] = others if on_list(to_reviewer, others) else [*others, to_reviewer.strip()]
    db.sessions.replace_assignments(name, moved)
    return Reassigned(len(moved), kept)
