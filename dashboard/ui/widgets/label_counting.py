"""How a page shows the labels it counts: the one rule (dashboard/labels/resolution.py),
the reviewers' kappa, the unresolved ties and the labels left out, and the operator's
reviewer list the counting reads (MEMLENS_REVIEWERS, environment or st.secrets)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.database import AppDatabase
from dashboard.database.model import Label
from dashboard.display import inert_markdown
from dashboard.labels.counted import CountedLabels, counted, filter_labels
from dashboard.labels.resolution import REVIEWERS_ENV, RULE
from dashboard.ui.widgets.secret_lookup import secret_value


def reviewers_setting() -> dict[str, str]:
    """The operator's reviewer list, as dashboard/labels/counted.py reads it."""
    return {REVIEWERS_ENV: secret_value(REVIEWERS_ENV) or ""}


def counted_for_page(
    db: AppDatabase, everything: list[Label], session: str | None, filters: dict[str, Any], until: str | None
) -> CountedLabels:
    """The labels Calibrate counts under its filters (store, reviewer, from; `until`
    the ISO text it stops at) and Session, by the one rule; one reviewer's own
    figures leave adjudications out. `filters` (what the floor JSON records) gains
    the session, the rule and what was left out."""
    raw = db.sessions.labels(session) if session else everything
    raw = filter_labels(raw, filters["store"], filters["reviewer"], filters["from"], until)
    found = counted(db, session=session, labels=raw, environ=reviewers_setting(), adjudicated=filters["reviewer"] is None)
    filters.update(session=session, rule=RULE, unresolved=len(found.resolution.unresolved),
                   flagged_labels=sum(found.resolution.flagged.values()))  # fmt: skip
    return found


def show_resolution(found: CountedLabels | None) -> None:
    """Wherever labels are counted: the rule, the agreement behind the figures, the
    unresolved ties and the labels left out (a mistyped name is seen, not counted)."""
    if found is None:
        return
    report = found.agreement()
    kappa = report.kappa if report.kappa is not None and report.kappa == report.kappa else None
    cols = st.columns(3)
    cols[0].metric(report.method_name if report.method else "Kappa", f"{kappa:.3f}" if kappa is not None else "n/a",
                   help=report.headline())  # fmt: skip
    cols[1].metric("Unresolved disagreements", f"{len(found.resolution.unresolved):,}",
                   help="Ties between reviewers: left out of every figure until adjudicated on the Label page.")  # fmt: skip
    cols[2].metric("Adjudicated pairs", f"{found.resolution.adjudicated:,}")
    lines = found.resolution.lines()
    st.caption(inert_markdown(" ".join(lines[:2])))
    if found.resolution.flagged:
        st.warning(inert_markdown(lines[2]))
