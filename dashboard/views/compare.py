"""Compare: two stores, or two configurations of one, on the same query side by side."""

from __future__ import annotations

import streamlit as st

from dashboard.store_compare import compare
from dashboard.ui.pages import compare as view
from dashboard.ui.widgets.access import require_access
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.sidebar import user_picker

st.title("Compare two stores")
require_access()  # the page shows memory text
st.caption(
    "The same message against two stores (or two settings of one): ranks, scores, and which "
    "memories each keeps under its own floor."
)

left, right = st.columns(2)
choices = {"a": view.side_picker("a", left), "b": view.side_picker("b", right)}
user = user_picker(choices["a"].store)
k = st.sidebar.number_input("k (results)", min_value=1, max_value=50, value=5, step=1, key="compare_k")
match_by = view.match_by_picker(choices)

with st.form("compare_form"):
    st.text_input("Message", key="compare_query", placeholder="Which UI theme does the user prefer?")
    st.form_submit_button("Compare", type="primary")

results = view.current_results(choices, user, int(k))
if results is None:
    st.stop()

for side, column in (("a", left), ("b", right)):
    answer = results[side]
    if isinstance(answer, str):
        show_error(f"{side.upper()} could not answer: {answer}", column)
    else:
        view.show_side_notes(side, answer, column)
result_a, result_b = results["a"], results["b"]
if isinstance(result_a, str) or isinstance(result_b, str):
    st.stop()

floors = {side: float(st.session_state[f"compare_{side}_floor"]) for side in ("a", "b")}
view.show_comparison(compare(result_a, floors["a"], result_b, floors["b"], match_by=match_by), floors)
