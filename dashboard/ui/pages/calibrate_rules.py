"""The Calibrate page's turn rules (issue 54): beside the single floor, the rules that
read the whole turn (learned, largest-gap, top-ratio) fitted and compared on the same
labels at the same target, held out by turn; their precision, recall and share of
turns with no memory with intervals, the recommendation and its reason, both
held-out precision-recall curves in one chart, and the rule the floor file ships.

The fit and the comparison live in dashboard/calibration/turn_fit.py (the same
call `memlens calibrate --rule` makes); the fit is cached (ui/widgets/cache.py), so
a slider move does not fit again.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from dashboard.calibration.advice import FloorAdvice
from dashboard.calibration.choice import FBETA
from dashboard.calibration.label_files import LabelFile
from dashboard.calibration.scores import CalibrationError
from dashboard.calibration.turn_fit import COMPARED, RULE_NAMES, RuleComparison, RuleFigures, held_out_curves
from dashboard.charts import calibration as charts
from dashboard.display import inert_markdown
from dashboard.turn_rule import FLOOR
from dashboard.ui.widgets import cache

RULE_KEY = "calibrate_rule"  # the rule the floor file ships
MIN_TURNS = 20  # five folds of at least four turns each: fewer, and a fold's figures are a turn or two


@dataclass(frozen=True)
class ShippedRule:
    """The comparison and the rule the reviewer picked to ship (FLOOR: none)."""

    comparison: RuleComparison
    kind: str


def _reason_not_compared(labels: LabelFile, advice: FloorAdvice) -> str | None:
    data = advice.calibration.data
    if data.turn is None:
        return "No turn rules: they read each hit's place among its turn's hits, so every label needs a message id (its turn)."
    if data.turns < MIN_TURNS:
        return f"No turn rules: the labels hold {data.turns:,} turns, fewer than the {MIN_TURNS} a held-out comparison by turn needs."
    if advice.mode == FBETA:
        return "No turn rules at max F-beta: a turn rule is chosen by target recall, target precision or cost ratio; pick one of those above."
    return None


def _shown(value: float, interval: tuple[float, float] | None, share: bool = False) -> str:
    def one(number: float) -> str:
        return "n/a" if number != number else (f"{number:.0%}" if share else f"{number:.3f}")

    return one(value) if interval is None else f"{one(value)} ({one(interval[0])}–{one(interval[1])})"


def _figures_frame(comparison: RuleComparison) -> pd.DataFrame:
    rows = []
    for name in COMPARED:
        figures: RuleFigures = comparison.figures[name]
        rows.append(
            {
                "rule": RULE_NAMES[name] + (" (recommended)" if name == comparison.recommended else ""),
                "precision": _shown(figures.precision, figures.precision_interval),
                "recall": _shown(figures.recall, figures.recall_interval),
                "turns with no memory": _shown(figures.no_memory_share, figures.no_memory_interval, share=True),
            }
        )
    return pd.DataFrame(rows)


def show_rules(labels: LabelFile, advice: FloorAdvice) -> ShippedRule | None:
    """The comparison and the pick of the rule to ship; None (and a one-line reason)
    when these labels cannot be compared."""
    st.subheader("A rule that reads the whole turn")
    why_not = _reason_not_compared(labels, advice)
    if why_not is not None:
        st.caption(why_not)
        return None
    try:
        with st.spinner("Fitting the turn rules, held out by turn…", show_time=True):
            comparison = cache.rule_comparison(labels, advice.mode, advice.target)
    except CalibrationError as exc:
        st.caption(f"No turn rules on these labels: {inert_markdown(str(exc))}.")
        return None
    lines = comparison.lines()
    st.caption(inert_markdown(lines[0]))  # the target, the folds, the turns, the resamples
    st.dataframe(_figures_frame(comparison), hide_index=True, width="stretch", key="calibrate_rule_figures")
    st.caption(
        "Precision, recall and the share of turns left with no memory, each held out (decided on turns the rule "
        "was not fitted on), with 95% intervals over resamples of turns."
    )
    said = f"**Recommended: {RULE_NAMES[comparison.recommended]}.** {inert_markdown(comparison.reason[0].upper() + comparison.reason[1:])}."
    if comparison.recommended == FLOOR:
        st.info(said)
    else:
        st.success(said)
    st.caption(inert_markdown(lines[-2]))  # the learned rule against the largest-gap cut at that cut's recall
    st.plotly_chart(
        charts.held_out_figure(held_out_curves(comparison), comparison.figures, RULE_NAMES, comparison.recommended),
        width="stretch",
        key="calibrate_rule_curves",
    )
    # The pick starts at the recommendation, and starts there again whenever the
    # recommendation changes (other labels, another target); the reviewer moves it after.
    seen = (id(comparison), comparison.recommended)  # the cached comparison is one object per labels and target
    if st.session_state.get("_calibrate_rule_seen") != seen or st.session_state.get(RULE_KEY) not in COMPARED:
        st.session_state["_calibrate_rule_seen"] = seen
        st.session_state[RULE_KEY] = comparison.recommended
    kind = str(
        st.radio(
            "Ship in the floor file",
            list(COMPARED),
            format_func=lambda name: RULE_NAMES[name] + (" (recommended)" if name == comparison.recommended else ""),
            key=RULE_KEY,
            horizontal=True,
            help="The floor file (JSON) below carries this rule, as `memlens calibrate --rule` writes it; "
            "the single floor writes no rule.",
        )
    )
    if kind != comparison.recommended:
        st.warning(
            f"The floor file ships the {RULE_NAMES[kind]}, but on these labels the held-out comparison recommends the "
            f"{RULE_NAMES[comparison.recommended]}."
        )
    return ShippedRule(comparison, kind)
