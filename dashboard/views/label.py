"""Label: work through a labelling session drawn from a retrieval log, one turn at a time."""

from __future__ import annotations

import streamlit as st

from dashboard.database.model import LabelStoreError
from dashboard.ui.pages import label as view
from dashboard.ui.pages import label_import, label_sessions, label_team
from dashboard.ui.widgets import cache
from dashboard.ui.widgets import reviewer as reviewer_ui
from dashboard.ui.widgets.access import require_access
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.sidebar import store_picker

st.title("Label a session")
st.caption(
    "Judge the memories a store returned for logged messages: relevant, not relevant or skip, "
    "from the keyboard. Labels are saved by id the moment you press a key."
)
require_access()
reviewer = reviewer_ui.require()
choice = store_picker()
try:
    labels = cache.app_database()
    session = view.session_picker(labels)
    with st.expander("New labelling session from a log", expanded=session is None):
        view.new_session_form(labels, view.log_loader(), choice.fingerprint)
    with st.expander("Import people's labels as a session", expanded=False):
        label_import.import_form(labels)
    if session is not None:
        view.labelling_panel(labels, session, reviewer, choice)
        label_team.session_results(labels, session, reviewer)
        label_sessions.manage_panel(labels, session)
except LabelStoreError as exc:  # the label database went away: say so, keep the app up
    show_error(str(exc))
    # A rerun is all recovery takes (the store tries the server again), so the
    # panel comes back without a reload, and the reviewer's name is kept.
    st.button("Try again", key="label_retry", help="Reconnect to the label database and show the session again")
