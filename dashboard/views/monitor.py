"""Monitor: the shipped floor over production logs, window by window."""

from __future__ import annotations

import streamlit as st

from dashboard.database.model import LabelStoreError
from dashboard.ui.pages import monitor as view
from dashboard.ui.pages import monitor_precision
from dashboard.ui.widgets.access import require_access
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.sidebar import store_picker

st.title("Monitor the floor")
require_access()  # logs name turns and memories
# The store the memory text is read from and a labelling session is tied to (by id)
choice = store_picker()
st.caption(
    "Per window: the turns left with no memory at the floor, the top-1 score, and alerts when "
    "either moves away from the baseline. Pick a window to label fresh turns from it."
)
logs = view.log_set()
if logs is None:
    st.stop()
view.show_score_direction(logs)
settings = view.floor_and_settings(logs)
result = view.result(logs, settings)
view.show_summary(result)
if not result.windows:
    st.stop()
view.show_charts(result)
view.show_shadow(logs, result)  # only where the logs carry a shadow config's decisions
try:
    monitor_precision.show_precision(logs, result, choice)
except LabelStoreError as exc:  # the app database went away: say so, keep the page up
    show_error(str(exc))
window = view.pick_window(result)
if window is not None:
    view.show_window(logs, result, window)
    try:
        view.session_form(logs, result, window, choice)
    except LabelStoreError as exc:  # the label database went away: say so, keep the page up
        show_error(str(exc))
