"""Quality: judged sets, runs, run-vs-run comparison and what-if weights; then the
store's order against a re-ranked one over the demo queries and labelled sessions,
and the read log."""

from __future__ import annotations

import streamlit as st

from dashboard.database.model import LabelStoreError
from dashboard.ui.pages import quality as view
from dashboard.ui.pages import quality_runs
from dashboard.ui.widgets.access import require_access
from dashboard.ui.widgets.errors import show_error, show_store_error
from dashboard.ui.widgets.sidebar import store_picker, warm_model

st.title("Retrieval quality")
st.caption(
    "Run a judged set against the store, keep the run, compare it with another run and try other "
    "weights on what it fetched. Figures read saved runs: moving a control never queries the store."
)

require_access()  # the page shows memory text and queries the store
choice = store_picker()
warm_model(choice.name)
quality_runs.show(choice)

st.header("Store order vs re-ranked")
st.caption(
    "How often the top results are relevant, in the store's order and re-ranked by relevance and "
    "recency, over judged queries. Moving a control re-ranks what was already read."
)
settings, k, depth = view.controls()
if choice.error:
    show_store_error(choice.error)
else:
    view.show_demo_quality(choice, settings, k, depth)
try:
    view.show_labelled_quality(choice, settings, depth)
except LabelStoreError as exc:  # the label database went away: say so, keep the page up
    show_error(f"The label store cannot be read: {exc}")
view.show_read_log()
