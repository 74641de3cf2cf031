"""Calibrate: choose the score floor from labelled scores."""

from __future__ import annotations

import streamlit as st

from dashboard.ui.pages import calibrate as view
from dashboard.ui.pages import calibrate_advice as advice_ui
from dashboard.ui.pages import calibrate_rules as rules_ui
from dashboard.ui.pages.calibrate_checks import direction_allows
from dashboard.ui.widgets import label_counting
from dashboard.ui.widgets.access import require_access

st.title("Calibrate the floor")
require_access()  # labels and uploads name memories and reviewers
st.caption(
    "Every floor against your labels: the irrelevant memories it would keep, the relevant ones it "
    "would drop, and the turns it would leave with no memory."
)

floor = view.current_floor()
source = view.label_source()
if source is None:
    st.stop()
view.show_issues(source.labels)
if not direction_allows(source.labels):
    st.stop()
data = view.scores_or_error(source.labels)
if data is None:
    st.stop()

cost_ratio, floors = view.controls()
mode = advice_ui.mode_controls(cost_ratio)
result = view.calibration(data, floors, cost_ratio)
advice = advice_ui.floor_advice(result, mode)
view.show_agreement(source)  # beside the figures whenever a judge supplied labels
label_counting.show_resolution(source.counted)  # the rule, the kappa and the unresolved ties behind the figures
view.show_summary(result, floor, advice)
view.show_charts(result, floor, advice)
view.show_sweep_table(result, advice)
advice_ui.show_segments(source.labels, advice)
shipped = rules_ui.show_rules(source.labels, advice)  # the turn rules beside the floor, and the one to ship
view.show_exports(result, source, advice, shipped)
