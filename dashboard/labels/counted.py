"""The labels a figure counts, read from the label database: one function every
surface calls (the Calibrate and Label pages, `memlens calibrate --labels`,
`memlens labels export`, `memlens agreement`), so they count the same pairs.

A session's labels are the labels on its rows from the reviewers on its list (all
reviewers when it names none, or the operator list in ``MEMLENS_REVIEWERS`` when
that is set), resolved by dashboard/labels/resolution.py with the session's
adjudications.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from dashboard.database import AppDatabase
from dashboard.database.model import Label, reviewer_key
from dashboard.database.sessions import LabelSession, NoSuchSession
from dashboard.labels.resolution import REVIEWERS_ENV, Resolution, counted_labels, parse_names, resolve
from dashboard.labels.reviewer_agreement import AgreementReport, agreement


@dataclass
class CountedLabels:
    raw: list[Label]  # the labels read, before the reviewer list and the rule
    resolution: Resolution
    session: LabelSession | None

    @property
    def labels(self) -> list[Label]:
        """One label per resolved pair: what every figure and export counts."""
        return self.resolution.labels

    def agreement(self) -> AgreementReport:
        """Agreement of the counted reviewers (off-list names left out, as in the figures)."""
        return agreement(counted_labels(self.raw, self.resolution.listed)[0])

    def lines(self) -> list[str]:
        report = self.agreement()
        kappa = report.kappa if report.kappa is not None and report.kappa == report.kappa else None
        figure = f"{report.method_name} {kappa:.3f}" if kappa is not None else f"{report.method_name}: n/a"
        return [*self.resolution.lines(), f"Agreement behind these figures: {figure} over {report.rows} row(s)."]


def reviewer_list(session: LabelSession | None, environ: Mapping[str, str]) -> list[str] | None:
    """The names whose labels count: the session's list, else the operator list, else everyone (None)."""
    if session is not None and session.reviewers:
        return list(session.reviewers)
    return parse_names(environ.get(REVIEWERS_ENV)) or None


def counted(
    db: AppDatabase,
    *,
    session: str | None = None,
    labels: list[Label] | None = None,
    environ: Mapping[str, str] | None = None,
    adjudicated: bool = True,
) -> CountedLabels:
    """The session's labels (or `labels`, e.g. the store's filtered by the page),
    resolved by the one rule. `adjudicated=False` leaves adjudications out (a
    figure of one reviewer's own labels)."""
    found = None
    if session is not None:
        found = db.sessions.get(session)
        if found is None:
            known = ", ".join(s.name for s in db.sessions.all()) or "none"
            raise NoSuchSession(f"no labelling session named {session!r} (sessions: {known})")
    raw = list(labels) if labels is not None else db.sessions.labels(session) if session else db.labels.find()
    pairs = {(label.message_id, label.memory_id) for label in raw}
    decisions = db.adjudications.find(pairs) if adjudicated and pairs else []
    return CountedLabels(raw, resolve(raw, decisions, reviewers=reviewer_list(found, environ or {})), found)


def filter_labels(
    labels: Iterable[Label],
    store: str | None = None,
    reviewer: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> list[Label]:
    """The labels of one store / reviewer written from `since` up to `until` (ISO
    text, both inclusive), as ``db.labels.find`` filters them in SQL."""
    return [
        label
        for label in labels
        if (store is None or label.store == store)
        and (reviewer is None or reviewer_key(label.reviewer) == reviewer_key(reviewer))
        and (not since or label.updated_at >= since)
        and (not until or label.updated_at <= until)
    ]
