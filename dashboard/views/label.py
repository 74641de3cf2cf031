"""Label: work through a labelling session drawn from a retrieval log, one turn at a time."""

from __future__ import annotations

import streamlit as st

from dashboard.display import inert_markdown
from dashboard.labels.model import LabelStoreError
from dashboard.ui import cache
from dashboard.ui import label_view as view
from dashboard.ui.access import require_access, require_reviewer
from dashboard.ui.sidebar import store_picker

st.title("Label a session")
st.caption(
    "Judge the memories a store returned for logged messages: relevant, not relevant or skip, "
    "from the keyboard. Labels are saved by id the moment you press a key."
)
require_access()
reviewer = require_reviewer()
choice = store_picker()
try:
    labels = cache.label_store()
    session = view.session_picker(labels)
    with st.expander("New labelling session from a log", expanded=session is None):
        view.new_session_form(labels, view.log_loader())
    if session is not None:
        view.labelling_panel(labels, session, reviewer, choice)
        view.session_results(labels, session)
except LabelStoreError as exc:  # the label database went away: say so, keep the app up
    st.error(inert_markdown(str(exc)))
