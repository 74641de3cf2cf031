"""A judge's measured trust beside its suggestions on the Label page, and whether
its suggestion can be accepted with one key (the rule: dashboard/judging/trust.py).

Each judge suggesting on the turn gets one line: its kappa against people, precision
and recall per label, and the number of people's labels behind them; a warning for
each problem of its grades (one grade for every pair, placeholder reasons, ...);
and, when Accept is off for it, why, and what turns it on.
"""

from __future__ import annotations

import os

import streamlit as st

from dashboard.database import AppDatabase
from dashboard.database.judge_labels import JudgeLabel
from dashboard.database.model import NOT_RELEVANT, RELEVANT, LabelStoreError
from dashboard.display import inert_markdown
from dashboard.judging.judge_agreement import from_record
from dashboard.judging.trust import MIN_KAPPA_ENV, MIN_LABELS_ENV, JudgeTrust, TrustBar, trust_from_summary
from dashboard.ui.widgets.errors import show_error

TRUST_KEY = "_label_judge_trust"  # (what it was counted for, the trust), this browser session


def trust_bar() -> TrustBar:
    try:
        return TrustBar.from_environ(dict(os.environ))
    except ValueError as exc:  # a typo in a setting: say so, and keep the defaults
        show_error(f"{exc}; the defaults are used")
        return TrustBar()


def suggestion_trust(db: AppDatabase, sources: set[str], moment: tuple = ()) -> dict[str, JudgeTrust]:
    """source -> its trust, for the judges suggesting on this turn; empty when the
    label database cannot be read (then no suggestion can be accepted).

    Counted again only when `moment` changes (the turn, the labels done), not on every
    rerun: the count runs over every label in the database, a fraction of a second
    at tens of thousands, which a key press should not wait for each time."""
    if not sources:
        return {}
    bar = trust_bar()
    key = (tuple(sorted(sources)), moment, bar)
    kept = st.session_state.get(TRUST_KEY)
    if kept and kept[0] == key:
        return kept[1]
    try:
        found = {
            source: trust_from_summary(source, db.judge_labels.summary(source), bar, from_record(source, db.judge_labels.record(source)))
            for source in sorted(sources)
        }
    except LabelStoreError:
        return {}
    st.session_state[TRUST_KEY] = (key, found)
    return found


def show_trust(trusts: dict[str, JudgeTrust]) -> None:
    with st.container(key="label_judge_trust"):
        for trust in trusts.values():
            st.caption(inert_markdown(trust.figures()))
            for warning in trust.check.warnings():
                st.warning(inert_markdown(f"Broken judge? {warning}"))
            why = trust.why_hints_only()
            if why:
                st.caption(inert_markdown(
                    f"Suggestions from {trust.source} are hints only, Accept is off: {why}. It turns on at "
                    f"{trust.bar.min_labels} people's labels and kappa {trust.bar.min_kappa:g} "
                    f"({MIN_LABELS_ENV}, {MIN_KAPPA_ENV})."
                ))


def people_labels(db: AppDatabase, message_id: str) -> dict[str, set[str]]:
    """memory id -> the labels people gave it in this turn (any reviewer)."""
    try:
        found: dict[str, set[str]] = {}
        for label in db.labels.find(message_id=message_id):
            found.setdefault(label.memory_id, set()).add(label.label)
        return found
    except LabelStoreError:
        return {}


def aligned_mark(suggestion: JudgeLabel, people: set[str]) -> str:
    """" · aligned with people" / " · not aligned: people said ..." where people labelled
    the row (split people: both shown); nothing where no person has."""
    if not people:
        return ""
    verdict = RELEVANT if suggestion.relevant else NOT_RELEVANT
    if people == {verdict}:
        return " · ✓ aligned with people"
    return " · ✗ not aligned: people said " + " / ".join(sorted(people)).replace("_", " ")
