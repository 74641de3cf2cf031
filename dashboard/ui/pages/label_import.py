"""The Label page's "Import people's labels" form: a label file (JSONL or CSV export,
TREC qrels) uploaded and kept as a labelling session, as `memlens labels import`
does (the rule: dashboard/labels/people_files.py). The session then serves as the
people side of a judge's agreement."""

from __future__ import annotations

import streamlit as st

from dashboard.database import AppDatabase
from dashboard.database.sessions import SessionExists
from dashboard.display import inert_markdown
from dashboard.labels.people_files import PeopleFileError, import_as_session, read_people_bytes
from dashboard.ui.widgets.errors import show_error

MAX_ISSUES_SHOWN = 20


def _import(db: AppDatabase) -> None:
    state = st.session_state
    state.pop("label_import_result", None)
    upload = state.get("label_import_file")
    name = (state.get("label_import_session") or "").strip()
    if upload is None or not name:
        state["label_import_result"] = ("error", "Choose a label file and name the session first.", [])
        return
    try:
        found = read_people_bytes(upload.getvalue(), upload.name)
        issues = [str(issue) for issue in found.issues[:MAX_ISSUES_SHOWN]]
        if not found.labels:
            state["label_import_result"] = ("error", f"{upload.name} holds no usable label; nothing imported.", issues)
            return
        session, written = import_as_session(db, found, name)
    except (PeopleFileError, SessionExists) as exc:
        state["label_import_result"] = ("error", str(exc), [])
        return
    state["label_import_result"] = ("ok", f"{found.summary()}; session {session.name}: {session.size} rows, {written} label(s) imported.", issues)
    state["label_session"] = session.name  # open it


def import_form(db: AppDatabase) -> None:
    st.file_uploader("Label file (JSONL, CSV or TREC qrels)", key="label_import_file", type=["jsonl", "json", "csv", "qrels", "txt"])
    st.text_input("Session name", key="label_import_session")
    st.button("Import as a session", key="label_import_run", on_click=_import, args=(db,),
              help="Each label is saved under its reviewer (rows naming none: 'imported'); the session's rows are the labelled pairs.")
    result = st.session_state.get("label_import_result")
    if result:
        kind, message, issues = result
        if kind == "ok":
            st.success(inert_markdown(message))
        else:
            show_error(message)
        for issue in issues:
            st.caption(inert_markdown(issue))
