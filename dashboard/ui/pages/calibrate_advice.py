"""The Calibrate page's floor advice: the mode picker (cost ratio, target recall,
target precision, F-beta), the diagnosis with its warnings, answerable and
unanswerable turns, and the floors per segment.

The arithmetic lives in dashboard/calibration (choice, diagnosis, advice, segments);
here it is only asked for and shown. Results are kept in session state against the
calibration they came from, so a rerun that changes nothing recomputes nothing (the
bootstrap intervals are the slow part on large label sets).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.calibration.advice import FloorAdvice, advise, empties_prompts
from dashboard.calibration.choice import COST_RATIO, FBETA, TARGET_PRECISION, TARGET_RECALL
from dashboard.calibration.diagnosis import missed_text
from dashboard.calibration.label_files import LabelFile
from dashboard.calibration.segments import SegmentFloor, segment_fields, segment_floors, segments_for_export
from dashboard.calibration.sweep import Calibration, format_floor, shown_interval
from dashboard.display import inert_markdown

MODE_LABELS = {
    COST_RATIO: "Cost ratio",
    TARGET_RECALL: "Target recall",
    TARGET_PRECISION: "Target precision",
    FBETA: "Max F-beta",
}
SEGMENT_LABELS = {"user": "user", "store": "store", "tag": "tag (e.g. question category)"}
SEGMENTS_EXPORTED = "_segments_exported"  # the floors per segment shown on this run, for the floor JSON
DEFAULT_COST_RATIO = 1.0  # the page's cost ratio until the reviewer sets another
AS_ASKED = "cost_ratio_as_asked"  # the box that exports the default cost ratio's floor even when it empties prompts
AS_ASKED_LABEL = "Export the cost-ratio floor as asked"


@dataclass(frozen=True)
class ModeSettings:
    mode: str
    target: float  # the share, beta or cost ratio the mode needs


def mode_controls(cost_ratio: float) -> ModeSettings:
    """How the recommended (and exported) floor is chosen."""
    mode = st.radio(
        "Choose the floor by",
        list(MODE_LABELS),
        format_func=MODE_LABELS.__getitem__,
        key="floor_mode",
        horizontal=True,
        help="Cost ratio: the least cost × irrelevant kept + relevant dropped. Target recall: the highest floor "
        "keeping at least that share of relevant memories. Target precision: the lowest floor at which at least "
        "that share of what is kept is relevant. Max F-beta: the best balance of the two (beta > 1 favours recall).",
    )
    if mode == TARGET_RECALL:
        target = st.slider("Keep at least this share of relevant memories", 0.5, 1.0, 0.9, 0.01, key="target_recall")
    elif mode == TARGET_PRECISION:
        target = st.slider("At least this share of what is kept is relevant", 0.1, 1.0, 0.8, 0.01, key="target_precision")
    elif mode == FBETA:
        target = st.number_input("beta", min_value=0.1, max_value=10.0, value=1.0, step=0.5, key="fbeta_beta")
    else:
        target = cost_ratio
    return ModeSettings(mode, float(target))


def floor_advice(result: Calibration, settings: ModeSettings) -> FloorAdvice:
    """The advice for this calibration and mode, kept until either changes.

    The advice rests on the labels and the recommendation, not on the listed floors:
    when only the floor list changed (the page keeps the same recommendation object),
    the kept advice is reused and only its turn split is counted at the new floors.
    """
    key = (id(result.recommendation), settings, bool(st.session_state.get(AS_ASKED, False)))
    memo = st.session_state.get("_floor_advice_memo")
    if memo is not None and memo[0] == key:
        advice = memo[1]
        if advice.calibration is result:
            return advice
        split = advice.split.at(result.sweep.floor) if advice.split is not None else None
        return dataclasses.replace(advice, calibration=result, split=split)
    targets = {} if settings.mode == COST_RATIO else {settings.mode: settings.target}
    # As memlens calibrate does at its default cost ratio: a floor that drops more than
    # half the relevant labels is not the line a team copies unless asked for.
    guard = settings.target == DEFAULT_COST_RATIO and not st.session_state.get(AS_ASKED, False)
    advice = advise(result, targets, settings.mode, resamples=None, guard_recall=guard,
                    ask_cost_ratio=f"tick “{AS_ASKED_LABEL}” (or set another cost ratio)")
    st.session_state["_floor_advice_memo"] = (key, advice)
    return advice


# ------------------------------------------------------------------ diagnosis


def show_diagnosis(advice: FloorAdvice) -> None:
    """How separable the scores are, and every warning, above the recommendation."""
    diagnosis = advice.diagnosis
    if not diagnosis.separates:
        st.subheader("Diagnosis")
        cols = st.columns(3)
        cols[0].metric(
            "ROC AUC", f"{diagnosis.roc_auc:.2f}",
            help="The chance that a relevant hit outscores an irrelevant one (0.5: the score says nothing; 1: it separates).",
        )  # fmt: skip
        cols[1].metric(
            "Average precision", f"{diagnosis.average_precision:.2f}",
            help="Precision averaged over the recall levels, as scikit-learn computes it; the relevant share is what "
            "a score that says nothing would get.",
        )  # fmt: skip
        cols[2].metric("Relevant share", f"{diagnosis.relevant_share:.1%}")
    for warning in advice.warnings:
        st.warning(inert_markdown(warning), icon="⚠️")
    calibration = advice.calibration
    default_cost = calibration.recommendation.cost_ratio == DEFAULT_COST_RATIO
    if advice.fallback or (advice.mode == COST_RATIO and default_cost and empties_prompts(calibration)):
        if advice.fallback:
            st.warning(inert_markdown(advice.fallback) + ".", icon="⚠️")
        st.checkbox(AS_ASKED_LABEL, key=AS_ASKED, help="Export the floor the cost ratio gives, though it drops more "
                    "than half of the relevant memories.")


def recommendation_caption(advice: FloorAdvice) -> str | None:
    """For a mode other than the cost ratio: what it keeps and drops, its interval,
    and the cost-ratio floor beside it."""
    chosen = advice.chosen
    if chosen is None:
        return None
    rec = advice.calibration.recommendation
    cost = (
        f"At cost ratio {rec.cost_ratio:g} the floor would be {format_floor(rec.floor)} "
        f"(keeps {rec.kept_irrelevant:,} irrelevant, drops {rec.dropped_relevant:,} relevant)."
    )
    if not chosen.reached:
        line = chosen.line()
        return f"{line[0].upper()}{line[1:]}; the floor shown is the cost-ratio one. {cost}"
    low, high = shown_interval(advice.floor, chosen.interval) if chosen.interval else (0.0, 0.0)
    interval = (
        f"{chosen.confidence:.0%} interval {format_floor(low)}–{format_floor(high)} "
        f"({chosen.resamples_used} resamples of {chosen.resampled})"
        if chosen.interval
        else chosen.interval_note or "no interval"
    )
    return (
        f"Keeps {chosen.kept_irrelevant:,} irrelevant, drops {chosen.dropped_relevant:,} relevant; precision "
        f"{chosen.precision:.2f}, recall {chosen.recall:.2f}; {interval}. {cost}"
    )


def show_turns(advice: FloorAdvice) -> None:
    """No memory in answerable turns (a loss) and unanswerable ones (the right outcome)."""
    if advice.split is None:
        return
    split = advice.split.at(np.array([advice.floor]))
    parts = []
    if split.answerable:
        parts.append(
            f"no memory in **{split.answerable_share[0]:.0%}** of the {split.answerable:,} answerable turns "
            "(a relevant memory was there: a loss)"
        )
    if split.unanswerable:
        parts.append(
            f"**{split.unanswerable_share[0]:.0%}** of the {split.unanswerable:,} turns with no relevant memory "
            "(the right outcome)"
            if split.known
            else f"**{split.unanswerable_share[0]:.0%}** of the {split.unanswerable:,} turns with no relevant memory "
            "labelled (unknown whether right: the labels do not say whether their question had an answer)"
        )
    if split.missed:
        parts.append(missed_text(split.missed))
    st.caption(f"At floor {format_floor(advice.floor)}: " + "; ".join(parts) + ".")


# ------------------------------------------------------------------ segments


def _segment_frame(segments: list[SegmentFloor]) -> pd.DataFrame:
    shown = [shown_interval(s.floor, s.interval) if s.interval and s.floor is not None else None for s in segments]
    return pd.DataFrame(
        {
            "segment": [s.segment for s in segments],
            "labels": [s.rows for s in segments],
            "relevant": [s.relevant for s in segments],
            "turns": [s.turns for s in segments],
            "floor": [s.floor for s in segments],
            "interval_low": [interval[0] if interval else None for interval in shown],
            "interval_high": [interval[1] if interval else None for interval in shown],
            "note": [s.note or "" for s in segments],
        }
    )


def show_segments(labels: LabelFile, advice: FloorAdvice) -> None:
    """The floor per user, store or tag, with its interval, beside the one floor for all."""
    st.subheader("Floors per segment")
    fields = segment_fields(labels)
    st.session_state[SEGMENTS_EXPORTED] = {}  # what the floor JSON carries, set again below when floors are shown
    if not fields:
        st.caption(
            "Floors per segment need labels that carry a user (`user_id`), a store or a tag (`tag`, e.g. a "
            "question category) with at least two values."
        )
        return
    by = st.selectbox("Segment by", fields, format_func=SEGMENT_LABELS.__getitem__, key="segment_by")
    # The labels are read again on every rerun (a new object each time), so the key
    # is what the floors depend on: the calibrated rows and each row's segment.
    key = (id(advice.calibration), by, advice.mode, advice.target, hash(tuple(getattr(row, by) for row in labels.rows)))
    memo = st.session_state.get("_segment_memo")
    if memo is not None and memo[0] == key:
        segments = memo[1]
    else:
        segments = segment_floors(labels, by, advice.mode, advice.target)
        st.session_state["_segment_memo"] = (key, segments)
    st.session_state[SEGMENTS_EXPORTED] = segments_for_export(by, segments)
    st.caption(
        f"The {inert_markdown(advice.name)} floor of each {inert_markdown(by)}, with its 95% bootstrap interval; the first row is the one floor "
        "for all segments."
    )
    st.dataframe(
        _segment_frame(segments),
        hide_index=True,
        width="stretch",
        key="segment_table",
        column_config={
            "floor": st.column_config.NumberColumn("floor", format="%.4f"),
            "interval_low": st.column_config.NumberColumn("95% interval from", format="%.3f"),
            "interval_high": st.column_config.NumberColumn("to", format="%.3f"),
        },
    )
    # One box for all the shaky segments: a box each would bury the table.
    # a segment is named by a user id, store or tag from the labels: inert
    shaky = [f"- {inert_markdown(segment.title(by))}: {inert_markdown(segment.note)}." for segment in segments if segment.note]
    if shaky:
        st.warning("\n".join(shaky))
