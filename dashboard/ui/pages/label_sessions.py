"""The Label page's "Manage this session" panel: edit reviewers and overlap, hand one
reviewer's unstarted turns to another, archive, delete (labels kept, a download of
them first). The rules are dashboard/labels/session_admin.py, which `memlens
sessions` uses too. Every change happens in a button callback."""

from __future__ import annotations

import streamlit as st

from dashboard.database import AppDatabase
from dashboard.database.model import LabelStoreError
from dashboard.database.sessions import LabelSession
from dashboard.display import inert_markdown
from dashboard.labels import export
from dashboard.labels.counted import counted
from dashboard.labels.session_admin import edit_session, reassign
from dashboard.ui.widgets.errors import show_error

_DONE, _ERROR = "label_manage_done", "label_manage_error"


def _report(action, *args, **kwargs) -> None:
    state = st.session_state
    state.pop(_ERROR, None)
    try:
        state[_DONE] = action(*args, **kwargs)
    except (KeyError, ValueError, LabelStoreError) as exc:
        state[_ERROR] = str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)


def _edit(db: AppDatabase, name: str) -> None:
    state = st.session_state
    _report(lambda: edit_session(db, name, reviewers=state.get("label_manage_reviewers") or "",
                                 overlap=float(state.get("label_manage_overlap") or 0.0)).line())  # fmt: skip


def _reassign(db: AppDatabase, name: str) -> None:
    state = st.session_state
    _report(lambda: reassign(db, name, state.get("label_manage_from") or "", state.get("label_manage_to") or "").line())


def _archive(db: AppDatabase, name: str, archived: bool) -> None:
    def run() -> str:
        db.sessions.archive(name, archived)
        return f"Session {name} {'archived: its labels still count' if archived else 'opened again'}."

    _report(run)


def _delete(db: AppDatabase, name: str) -> None:
    def run() -> str:
        db.sessions.delete(name)
        st.session_state.pop("label_session", None)
        return f"Session {name} deleted; its labels stay in the label database."

    _report(run)


def manage_panel(db: AppDatabase, session: LabelSession) -> None:
    state = st.session_state
    with st.expander("Manage this session"):
        if state.get("label_manage_for") != session.name:  # the fields start from this session's settings
            state["label_manage_for"] = session.name
            state["label_manage_reviewers"] = ", ".join(session.reviewers)
            state["label_manage_overlap"] = float(session.overlap)
        st.text_input("Reviewers (names or e-mails, comma separated; empty: everyone)", key="label_manage_reviewers")
        st.slider("Overlap: share of turns labelled by two reviewers", 0.0, 1.0, step=0.05, key="label_manage_overlap")
        st.button("Save reviewers and overlap", key="label_manage_save", on_click=_edit, args=(db, session.name),
                  help="Turns nobody has started are dealt again among the reviewers; started turns keep theirs.")  # fmt: skip
        if session.reviewers:
            cols = st.columns(3)
            cols[0].selectbox("Hand the unstarted turns of", session.reviewers, key="label_manage_from")
            cols[1].selectbox("to", session.reviewers, key="label_manage_to")
            cols[2].button("Reassign", key="label_manage_reassign", on_click=_reassign, args=(db, session.name))
        cols = st.columns(3)
        cols[0].button(
            "Open again" if session.archived_at else "Archive",
            key="label_manage_archive",
            on_click=_archive,
            args=(db, session.name, not session.archived_at),
        )
        cols[1].download_button(
            "Download its labels (JSONL)",
            lambda: export.to_jsonl(counted(db, session=session.name).labels),
            file_name=f"{session.name.replace('/', '_')}-labels.jsonl",
            mime="application/jsonl",
            key="label_manage_export",
            on_click="ignore",
        )
        confirmed = st.checkbox("Delete this session (its labels stay in the label database)", key="label_manage_confirm")
        cols[2].button("Delete", key="label_manage_delete", disabled=not confirmed, on_click=_delete,
                       args=(db, session.name))  # fmt: skip
    if error := state.pop(_ERROR, None):
        show_error(error)
    if done := state.pop(_DONE, None):
        st.success(inert_markdown(done))
