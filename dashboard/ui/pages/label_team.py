"""The Label page's team half: a session's labels counted by the one rule, agreement
a lead can act on (pairwise kappa, each reviewer's relevant rate), the adjudication
screen, and the exports. The counting is dashboard/labels/counted.py, the same
function `memlens agreement`, `memlens labels export` and Calibrate use."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.database import AppDatabase
from dashboard.database.model import NOT_RELEVANT, RELEVANT, LabelStoreError
from dashboard.database.sessions import LabelSession
from dashboard.display import inert_markdown
from dashboard.labels import export
from dashboard.labels.adjudication import Disputed, disputed_pairs
from dashboard.labels.counted import CountedLabels, counted
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.label_counting import reviewers_setting

FINAL_LABELS = {RELEVANT: "Relevant", NOT_RELEVANT: "Not relevant"}


def _save(db: AppDatabase, session: LabelSession, by_title: dict[str, Disputed], adjudicator: str) -> None:
    state = st.session_state
    state.pop("label_adjudicate_error", None)
    row = by_title.get(state.get("label_adjudicate_pair") or "")
    if row is None:
        return
    try:
        db.adjudications.save(
            message_id=row.message_id,
            memory_id=row.memory_id,
            label=state.get("label_adjudicate_label") or RELEVANT,
            adjudicator=adjudicator,
            note=state.get("label_adjudicate_note") or "",
            session=session.name,
        )
    except (ValueError, LabelStoreError) as exc:
        state["label_adjudicate_error"] = f"The final label was not saved: {exc}"
        return
    state["label_adjudicate_note"] = ""
    state["label_adjudicate_done"] = f"Saved: {row.message_id} {row.memory_id} is {state.get('label_adjudicate_label')}."


def adjudication_screen(db: AppDatabase, session: LabelSession, found: CountedLabels, adjudicator: str) -> None:
    """Walk the disagreements: pick one, set the final label with a note; saved as its own row."""
    disputed = disputed_pairs(found)
    st.markdown(f"**{len(disputed):d} disagreement(s)**, {len(found.resolution.unresolved):d} of them unresolved ties")
    if not disputed:
        return
    st.dataframe(
        pd.DataFrame(
            [
                {"message id": d.message_id, "memory id": d.memory_id, "rank": d.rank, "score": d.score,
                 **dict(sorted(d.votes.items())), "counts as": ("adjudicated " if d.adjudicated else "") + d.now}
                for d in disputed
            ]
        ),
        hide_index=True,
        width="stretch",
        key="disagreements_table",
    )
    by_title = {d.describe(): d for d in disputed}
    with st.expander("Adjudicate: set the final label of a disagreement", expanded=bool(found.resolution.unresolved)):
        st.selectbox("Disagreement", list(by_title), key="label_adjudicate_pair")
        st.radio("Final label", list(FINAL_LABELS), format_func=FINAL_LABELS.__getitem__, key="label_adjudicate_label",
                 horizontal=True)  # fmt: skip
        st.text_input("Note (why; required)", key="label_adjudicate_note")
        st.button(
            "Save the final label", key="label_adjudicate_save", on_click=_save, args=(db, session, by_title, adjudicator),
            help=f"Saved as its own row: adjudicated by {adjudicator}, now. Reviewers' own labels are kept.",
        )
        if error := st.session_state.get("label_adjudicate_error"):
            show_error(error)
        if done := st.session_state.pop("label_adjudicate_done", None):
            st.success(inert_markdown(done))


MAX_HISTORY_ROWS = 500


def history_panel(db: AppDatabase, found: CountedLabels) -> None:
    """label_history for this session's pairs: who changed what, when (newest first)."""
    pairs = {(label.message_id, label.memory_id) for label in found.raw}
    changes = [h for h in db.labels.changes() if (h["message_id"], h["memory_id"]) in pairs]
    with st.expander(f"Label history: {len(changes)} change(s) to this session's labels"):
        if not changes:
            st.caption("No label of this session has been changed or removed yet.")
            return
        st.dataframe(
            pd.DataFrame(list(reversed(changes))[:MAX_HISTORY_ROWS]), hide_index=True, width="stretch",
            key="label_history_table",
        )  # fmt: skip
        if len(changes) > MAX_HISTORY_ROWS:
            st.caption(f"The newest {MAX_HISTORY_ROWS} of {len(changes):,}; `memlens labels history` prints them all.")


def session_results(db: AppDatabase, session: LabelSession, adjudicator: str) -> None:
    found = counted(db, session=session.name, environ=reviewers_setting())
    st.subheader("Session labels and agreement")
    if not found.raw:
        st.caption("No labels in this session yet.")
        return
    report = found.agreement()
    cols = st.columns(4)
    cols[0].metric("Labels", len(found.raw))
    cols[1].metric("Pairs counted", len(found.labels))
    cols[2].metric("Reviewers", len(report.reviewers))
    kappa = report.kappa if report.kappa is not None and report.kappa == report.kappa else None
    cols[3].metric(report.method_name, f"{kappa:.3f}" if kappa is not None else "n/a")
    st.caption(inert_markdown(report.headline()))
    lines = found.resolution.lines()
    st.caption(inert_markdown(" ".join(lines[:2])))
    if found.resolution.flagged:
        st.warning(inert_markdown(lines[2]))
    if report.pairwise:
        st.markdown("**Pairwise agreement and relevant rates**")
        st.dataframe(
            pd.DataFrame(
                [{"reviewers": f"{p.first} – {p.second}", "kappa": p.kappa, "rows": p.rows, "raw agreement": p.observed}
                 for p in report.pairwise]  # fmt: skip
            ),
            hide_index=True,
            width="stretch",
            key="label_pairwise_table",
            column_config={"kappa": st.column_config.NumberColumn(format="%.3f"),
                           "raw agreement": st.column_config.NumberColumn(format="percent")},
        )  # fmt: skip
    st.dataframe(
        pd.DataFrame(
            [{"reviewer": r.reviewer, "labels": r.labels, "relevant": r.relevant_rate, "shared rows": r.shared,
              "relevant on shared rows": r.shared_rate, "others on the same rows": r.others_rate} for r in report.rates]
        ),  # fmt: skip
        hide_index=True,
        width="stretch",
        key="label_rates_table",
        column_config={
            name: st.column_config.NumberColumn(format="percent")
            for name in ("relevant", "relevant on shared rows", "others on the same rows")
        },
    )
    adjudication_screen(db, session, found, adjudicator)
    history_panel(db, found)
    labels = found.labels
    st.caption("The downloads hold one label per pair, by the rule above: the pairs Calibrate counts.")
    downloads = st.columns(3)
    name = session.name.replace("/", "_")
    downloads[0].download_button(
        "Download JSONL", lambda: export.to_jsonl(labels), file_name=f"{name}-labels.jsonl",
        mime="application/jsonl", key="session_download_jsonl", on_click="ignore",
    )  # fmt: skip
    downloads[1].download_button(
        "Download CSV", lambda: export.to_csv(labels), file_name=f"{name}-labels.csv",
        mime="text/csv", key="session_download_csv", on_click="ignore",
    )  # fmt: skip
    downloads[2].download_button(
        "Download TREC qrels", lambda: export.to_qrels(labels), file_name=f"{name}.qrels",
        mime="text/plain", key="session_download_qrels", on_click="ignore",
    )  # fmt: skip
