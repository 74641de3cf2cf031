"""Quality: precision of the top results for the store's order and a re-ranked one,
over the demo queries and any labelled session; and the read log."""

from __future__ import annotations

import streamlit as st

from dashboard.labels.model import LabelStoreError
from dashboard.ui import inspect_view, quality_view
from dashboard.ui.access import require_access
from dashboard.ui.sidebar import store_picker

st.title("Retrieval quality")
st.caption(
    "How often the top results are relevant, in the store's order and re-ranked by relevance and "
    "recency, over judged queries. Moving a control re-ranks what was already read."
)

require_access()  # the page shows memory text and queries the store
choice = store_picker()
inspect_view.warm_model(choice.name)
settings, k, cutoff = quality_view.controls()
if choice.error:
    st.error(f"Cannot open the store: {choice.error}")
else:
    quality_view.show_demo_quality(choice, settings, k, cutoff)
try:
    quality_view.show_labelled_quality(choice, settings, cutoff)
except LabelStoreError as exc:  # the label database went away: say so, keep the page up
    st.error(f"The label store cannot be read: {exc}")
quality_view.show_read_log()
