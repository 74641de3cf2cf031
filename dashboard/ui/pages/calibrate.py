"""The Calibrate page's pieces: where the labels come from, the controls, the
summary, the four charts, the sweep table and the exports.

Nothing here queries a memory store: calibration works on labelled scores only, so
moving a control reruns arithmetic, never a retrieval.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.calibration.advice import FloorAdvice
from dashboard.calibration.label_files import LabelFile, LabelFileError, from_labels, issue_text
from dashboard.calibration.report import floor_file, unknown_space_caption
from dashboard.calibration.scores import TooFewLabels
from dashboard.calibration.sweep import (
    Calibration,
    CalibrationError,
    LabelledScores,
    calibrate,
    evaluate,
    format_floor,
    shown_interval,
)
from dashboard.calibration.turn_fit import RULE_NAMES, rule_section
from dashboard.charts import calibration as charts
from dashboard.database.model import LabelStoreError
from dashboard.demo import DEMO_LABELS, load_demo_labels
from dashboard.display import code_span, inert_markdown
from dashboard.floor import default_floor, floor_list
from dashboard.judging.judge_agreement import JudgeAgreement
from dashboard.judging.label_source import JUDGE, PEOPLE_ELSE_JUDGE, MergedLabels, merge_labels
from dashboard.labels.counted import CountedLabels
from dashboard.turn_rule import FLOOR
from dashboard.ui.pages import calibrate_advice as advice_ui
from dashboard.ui.pages.calibrate_rules import ShippedRule
from dashboard.ui.widgets import cache, label_counting, session, store_names
from dashboard.ui.widgets import label_source_choice as label_source_ui
from dashboard.ui.widgets.errors import show_error

SOURCE_STORE = "Label store"
SOURCE_UPLOAD = "Upload a file"
SOURCE_RUN = "A saved run"
ALL = "(all)"
DEFAULT_FLOORS_TEXT = "0.15, 0.20, 0.25, 0.30, 0.35, 0.40"
MAX_TABLE_ROWS = 2_000
MAX_ISSUES_SHOWN = 200


@dataclass
class LabelSource:
    labels: LabelFile
    kind: str  # "store" | "upload" | "demo"
    filters: dict[str, Any] = field(default_factory=dict)
    # Set when any label came from a judge: how far that judge agrees with people.
    agreement: JudgeAgreement | None = None
    # Set for the label store: the people's labels by the one rule, and what it left out.
    counted: CountedLabels | None = None


# ------------------------------------------------------------------ the floor from Inspect


def current_floor() -> float:
    """The floor the Inspect slider is set to (its default before Inspect is opened),
    read from the one value the session keeps for it (ui/widgets/session.py)."""
    return float(session.value("floor", default_floor()))


# ------------------------------------------------------------------ where labels come from


def label_source() -> LabelSource | None:
    source = st.radio(
        "Labels from", [SOURCE_STORE, SOURCE_UPLOAD, SOURCE_RUN], key="calibrate_source", horizontal=True
    )
    if source == SOURCE_UPLOAD:
        return _uploaded_labels()
    if source == SOURCE_RUN:
        return _run_labels()
    try:
        return _stored_labels()
    except LabelStoreError as exc:  # the label database went away: say so, keep the page up
        show_error(f"The label store cannot be read: {exc}. Upload a label file to calibrate meanwhile.")
        return None


def _label_date(stamp: str) -> date | None:
    try:
        return datetime.fromisoformat(stamp).date()
    except (TypeError, ValueError):
        return None


def show_agreement(source: LabelSource) -> None:
    """Beside the figures whenever a judge supplied some of the labels."""
    if source.agreement is not None:
        label_source_ui.show_agreement(source.agreement, source.filters.get("judge_labels", 0))


def _stored_labels() -> LabelSource:
    db = cache.app_database()
    everything = db.labels.find()
    sources = db.judge_labels.sources()
    if not everything and not sources:
        st.info(
            "**Demo data.** The label store has no labels yet, so this page shows the bundled demo "
            f"judgments ({code_span(f'demo_data/{DEMO_LABELS.name}')}: the demo queries run against the demo store "
            "at k = 5, each hit judged by id). Label hits on the Inspect page, or upload a label "
            "file, to calibrate on your own labels.",
            icon="🧪",
        )
        return LabelSource(load_demo_labels(), "demo")

    rule, judge = label_source_ui.label_rule(sources, "calibrate_label_source", "calibrate_fill_judge")
    stamps = [row.updated_at for row in everything]
    if judge is not None:
        judgments = db.judge_labels.find(source=judge)
        stamps += [j.created_at for j in judgments]
    else:
        judgments = []
    days = sorted(d for d in (_label_date(stamp) for stamp in stamps) if d)
    sessions = [s.name for s in db.sessions.all()]
    cols = st.columns(4 if sessions else 3)
    # A store only the picked judge graded (its labels record it) can be picked too.
    stores = sorted(set(db.labels.stores()) | {j.store for j in judgments if j.store})
    store_name = cols[0].selectbox("Store", [ALL, *stores], key="calibrate_store", format_func=store_names.name_of)
    reviewer = cols[1].selectbox("Reviewer", [ALL, *db.labels.reviewers()], key="calibrate_reviewer")
    picked = cols[2].date_input("Labelled between", value=(days[0], days[-1]) if days else None, key="calibrate_dates")
    session_name = cols[3].selectbox("Session", [ALL, *sessions], key="calibrate_session") if sessions else ALL
    dates = tuple(picked) if isinstance(picked, (tuple, list)) else (picked,)
    since = dates[0] if dates else None
    until = dates[-1] if dates else None
    # updated_at is an ISO timestamp: everything on the last day sorts before the next day.
    until_text = (until + timedelta(days=1)).isoformat() if until else None
    filters: dict[str, Any] = {
        "store": None if store_name == ALL else store_name,
        "reviewer": None if reviewer == ALL else reviewer,
        "from": since.isoformat() if since else None,
        "to": until.isoformat() if until else None,
    }
    found = label_counting.counted_for_page(db, everything, None if session_name == ALL else session_name, filters, until_text)
    labels = found.labels
    if judge is None:
        if not everything:
            st.info("No person has labelled yet: pick a judge under Label source to calibrate on its labels.")
        return LabelSource(from_labels(labels), "store", filters, counted=found)
    merged: MergedLabels = merge_labels(
        labels,
        judgments,
        rule,
        judge,
        stores={row.message_id: row.store for row in everything},
        store=filters["store"],
        since=since.isoformat() if since else None,
        until=until_text,
    )
    filters.update(label_source=rule, judge=judge, people_labels=merged.from_people, judge_labels=merged.from_judge)
    if rule == JUDGE and reviewer != ALL:
        st.caption("Judge labels have no reviewer: the Reviewer filter applies to the agreement with people only.")
    agreed = label_source_ui.agreement(found.raw, judgments, judge, resolved=found.labels)
    kappa = agreed.kappa if agreed.kappa is not None and agreed.kappa == agreed.kappa else None  # NaN is not JSON
    filters["agreement"] = {"kappa": kappa, "kappa_interval": agreed.kappa_interval, "pairs": agreed.count}
    name = "label store" if rule == PEOPLE_ELSE_JUDGE else f"label store ({judge})"
    return LabelSource(from_labels(merged.labels, source=name), "store", filters, agreement=agreed, counted=found)


def _uploaded_labels() -> LabelSource | None:
    upload = st.file_uploader(
        "Label file: JSONL or CSV in the export format, or any file with score and label",
        type=["jsonl", "ndjson", "json", "csv", "txt"],
        key="calibrate_upload",
    )
    if upload is None:
        st.info("Choose a label file to calibrate on.")
        return None
    try:
        # Parsed once per file content, not on every rerun (cache.py keys it by hash).
        with st.spinner(f"Reading {upload.name}…", show_time=True):  # a big file takes seconds
            labels = cache.parsed_label_file(upload.getvalue(), upload.name)
    except LabelFileError as exc:
        show_error(str(exc))
        return None
    return LabelSource(labels, "upload", {"file": upload.name})


def _run_labels() -> LabelSource | None:
    """A saved run's hits, judged by its judged set (see the Quality page)."""
    from dashboard.evaluation.export import judged_label_file

    db = cache.app_database()
    runs = {r.run_id: f"{r.name} · {r.run_id} · {r.status}" for r in reversed(db.runs.all())}
    if not runs:
        st.info("No saved run yet: run a judged set on the Quality page.")
        return None
    run_id: str = st.selectbox("Run", list(runs), format_func=lambda r: runs[r], key="calibrate_run")
    info = db.runs.get(run_id)
    judged = cache.judged_set(db, info.set_name, info.set_hash) if info else None
    if info is None or judged is None:
        show_error("This run's judged set is gone.")
        return None
    labels = judged_label_file(info, cache.run_outcomes(db, info), judged)
    st.caption(store_names.run_description(info))  # the floor JSON names its clock (filters.as_of)
    return LabelSource(labels, "run", {"run": run_id, **({"as_of": info.as_of} if info.as_of else {})})


def show_issues(labels: LabelFile) -> None:
    for note in labels.notes:
        st.caption(inert_markdown(note))
    if not labels.issues:
        return
    st.warning(
        f"{len(labels.issues):d} problem(s) in {inert_markdown(labels.source)}: {labels.skipped:d} row(s) skipped, "
        f"{len(labels.rows):d} usable row(s) used."
    )
    with st.expander("Problems, by line"):
        shown = labels.issues[:MAX_ISSUES_SHOWN]
        st.dataframe(
            pd.DataFrame(
                {
                    "line": [i.line for i in shown],
                    "field": [i.field for i in shown],
                    "problem": [i.message for i in shown],
                    "outcome": ["row skipped" if i.skipped else "field ignored" for i in shown],
                }
            ),
            hide_index=True,
            width="stretch",
        )
        if len(labels.issues) > MAX_ISSUES_SHOWN:
            st.caption(f"Showing the first {MAX_ISSUES_SHOWN} of {len(labels.issues):,} problems; download them all:")
        st.download_button(
            "Download every problem",
            lambda: "\n".join(f"{labels.source}: {issue_text(issue)}" for issue in labels.issues) + "\n",
            file_name="label-file-problems.txt",
            key="calibrate_issues_download",
            on_click="ignore",
        )


def scores_or_error(labels: LabelFile) -> LabelledScores | None:
    # The same LabelFile object (an upload is cached by content) gives the same
    # arrays: a rerun that changes a control does not rebuild them from the rows.
    memo = st.session_state.get("_scores_memo")
    if memo is not None and memo[0] is labels:
        return memo[1]
    try:
        scores = labels.labelled_scores()
        st.session_state["_scores_memo"] = (labels, scores)
        return scores
    except TooFewLabels as exc:
        # Not a fault: the reviewer's next step, so a warning rather than an error box.
        st.warning(inert_markdown(f"Not enough labels to calibrate on {labels.source} yet: {exc}"))
        return None
    except CalibrationError as exc:
        show_error(f"Cannot calibrate on {labels.source}: {exc}")
        return None


# ------------------------------------------------------------------ controls


def controls() -> tuple[float, list[float]]:
    cols = st.columns(2)
    cost_ratio = cols[0].number_input(
        "A wrong memory costs this many missed ones",
        min_value=0.01,
        max_value=1000.0,
        value=1.0,
        step=0.5,
        key="cost_ratio",
        help="The recommended floor minimises cost × irrelevant kept + relevant dropped. "
        "A stray preference is a nuisance (1); a wrong allergy in a meal plan is not (10 or more).",
    )
    text = cols[1].text_input("Floors to list", value=DEFAULT_FLOORS_TEXT, key="calibrate_floors")
    floors, problems = floor_list(text)
    if problems:
        st.warning(f"Left out of the floor list: {inert_markdown('; '.join(problems))}.")
    return float(cost_ratio), floors


def calibration(data: LabelledScores, floors: list[float], cost_ratio: float) -> Calibration:
    """The calibration of these labels, recomputed only when the labels, the floors
    or the cost ratio change (the bootstrap is the slow part on large label sets)."""
    digest = hashlib.sha1(data.scores.tobytes() + data.relevant.tobytes())
    if data.turn is not None:
        digest.update(data.turn.tobytes())
        digest.update(str(data.sampled).encode())
    key = (digest.hexdigest(), tuple(floors), cost_ratio)
    memo = st.session_state.get("_calibration_memo")
    if memo is not None and memo[0] == key:
        return memo[1]
    # The recommendation (and its bootstrap) reads the distinct scores only, never
    # the listed floors: editing the floor list reuses it and recomputes the counts.
    rec_key = key[0], cost_ratio
    rec_memo = st.session_state.get("_recommendation_memo")
    if rec_memo is not None and rec_memo[0] == rec_key:
        result = dataclasses.replace(calibrate(data, floors, cost_ratio, resamples=0), recommendation=rec_memo[1])
    else:
        result = calibrate(data, floors, cost_ratio)
        st.session_state["_recommendation_memo"] = (rec_key, result.recommendation)
    st.session_state["_calibration_memo"] = (key, result)
    return result


# ------------------------------------------------------------------ results


def _percent(value: float | None) -> str:
    return "n/a" if value is None or value != value else f"{value:.0%}"


def show_summary(result: Calibration, current: float, advice: FloorAdvice | None = None) -> None:
    """Label counts, the band (or why there is none), the diagnosis and its warnings,
    then the recommended floor (``advice``'s mode; the cost ratio without one)."""
    data, rec = result.data, result.recommendation
    cols = st.columns(4)
    cols[0].metric("Labelled hits", f"{len(data):,}")
    cols[1].metric("Relevant", f"{data.relevant_count:,}")
    cols[2].metric("Not relevant", f"{data.irrelevant_count:,}")
    cols[3].metric("Turns", f"{data.turns:,}" if data.turn is not None else "n/a")
    for note in result.notes:
        st.caption(inert_markdown(note))

    if result.band:
        st.success(f"Separating band: {inert_markdown(result.band.describe())}.")
    else:
        worst = float(data.scores[data.relevant].min())
        best = float(data.scores[~data.relevant].max())
        st.info(
            f"No floor separates the labels: an irrelevant hit scores {best:.3f} and a relevant one "
            f"{worst:.3f}, so every floor keeps some irrelevant memory or drops some relevant one."
        )
    if advice is not None:
        advice_ui.show_diagnosis(advice)

    now = evaluate(data, [current])
    halves = st.columns(2)
    low, high = shown_interval(rec.floor, rec.interval) if rec.interval else (0.0, 0.0)
    interval = (
        f"{rec.confidence:.0%} interval {format_floor(low)}–{format_floor(high)} "
        f"({rec.resamples_used} resamples of {rec.resampled})"
        if rec.interval
        else rec.interval_note or "no interval"
    )
    mode_caption = advice_ui.recommendation_caption(advice) if advice is not None else None
    halves[0].metric(
        f"Recommended floor ({advice.name if advice is not None else f'cost ratio {rec.cost_ratio:g}'})",
        format_floor(advice.floor if advice is not None else rec.floor),
        help="Cost ratio: the middle of the range of floors with the lowest cost. Targets and F-beta: the "
        "shortest floor keeping exactly what the chosen score keeps. The interval is the floor over bootstrap "
        "resamples of turns.",
    )
    halves[0].caption(
        inert_markdown(mode_caption)
        if mode_caption
        else f"Keeps {rec.kept_irrelevant:,} irrelevant, drops {rec.dropped_relevant:,} relevant, "
        f"no memory in {inert_markdown(_percent(rec.no_memory_share))} of turns; {inert_markdown(interval)}."
    )
    halves[1].metric("Inspect floor", format_floor(current))
    no_memory = now.no_memory_share[0] if now.no_memory_share is not None else None
    halves[1].caption(
        f"Keeps {int(now.kept_irrelevant[0]):,} irrelevant, drops {int(now.dropped_relevant[0]):,} relevant, "
        f"no memory in {inert_markdown(_percent(no_memory))} of turns."
    )
    if advice is not None:
        advice_ui.show_turns(advice)


def show_charts(result: Calibration, current: float, advice: FloorAdvice | None = None) -> None:
    rec, band, sweep = result.recommendation.floor, result.band, result.sweep
    if advice is not None:
        rec = advice.floor
    left, right = st.columns(2)
    left.plotly_chart(
        charts.score_histogram_figure(result.data, current, rec, band), width="stretch", key="calibrate_histogram"
    )
    right.plotly_chart(charts.tradeoff_figure(sweep, current, rec, band), width="stretch", key="calibrate_tradeoff")
    left, right = st.columns(2)
    left.plotly_chart(
        charts.precision_recall_figure(sweep, current, rec, band), width="stretch", key="calibrate_precision_recall"
    )
    if sweep.no_memory_share is None:
        right.info("The share of turns left with no memory needs a message id on every label.")
    else:
        right.plotly_chart(
            charts.no_memory_figure(sweep, current, rec, band, advice.split if advice is not None else None),
            width="stretch",
            key="calibrate_no_memory",
        )


def show_sweep_table(result: Calibration, advice: FloorAdvice | None = None) -> None:
    st.subheader("Every floor")
    frame = advice.sweep_frame() if advice is not None else result.sweep.to_frame()
    if len(frame) > MAX_TABLE_ROWS:
        shown = frame.iloc[charts.thinned(result.sweep, MAX_TABLE_ROWS)]
        st.caption(
            f"{len(frame):,} floors (one per distinct score); showing {len(shown):,} evenly spread ones "
            "and every listed floor. The CSV download has them all."
        )
    else:
        shown = frame
        st.caption(f"{len(frame):,} floors: one per distinct score, plus the listed ones (ticked).")
    st.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        column_config={
            "floor": st.column_config.NumberColumn("floor", format="%.4f"),
            "precision": st.column_config.NumberColumn("precision", format="%.3f"),
            "recall": st.column_config.NumberColumn("recall", format="%.3f"),
            "f1": st.column_config.NumberColumn("F1", format="%.3f"),
            "no_memory_share": st.column_config.NumberColumn("no memory (share of turns)", format="percent"),
            "mean_kept_per_turn": st.column_config.NumberColumn("kept per turn", format="%.2f"),
            "no_memory_share_answerable": st.column_config.NumberColumn("no memory (answerable turns)", format="percent"),
            "no_memory_share_unanswerable": st.column_config.NumberColumn(
                "no memory (turns with no relevant memory)", format="percent"
            ),
        },
    )


def _floor_choice(
    result: Calibration, source: LabelSource, advice: FloorAdvice | None = None, shipped: ShippedRule | None = None
) -> dict[str, Any]:
    """The floor file (report.floor_file: the advice's floor, mode, target and warnings, and the turn rule
    picked to ship with the floor beside it), computed again only when the calibration, the label source,
    the advice, the rule or the labels' score space changes."""
    space = store_names.labels_space(source.labels.stores())
    rule, rule_floor = (None, None)
    if shipped is not None and shipped.kind != FLOOR:
        rule, rule_floor = rule_section(shipped.comparison, shipped.kind)
    key = (
        (id(shipped.comparison), shipped.kind) if shipped is not None else None,
        id(result),
        # the fallback too: the cost ratio's fallback to target recall 0.90 has the same mode, target and floor
        (advice.mode, advice.target, advice.floor, tuple(advice.warnings), advice.fallback) if advice is not None else None,
        source.kind,
        json.dumps(source.filters, sort_keys=True, default=str),
        source.labels.source,
        space,
        json.dumps(st.session_state.get(advice_ui.SEGMENTS_EXPORTED, {}), sort_keys=True),
    )
    memo = st.session_state.get("_floor_choice_memo")
    if memo is None or memo[0] != key:
        choice = floor_file(
            result,
            source.labels,
            advice=advice,
            segments=st.session_state.get(advice_ui.SEGMENTS_EXPORTED, {}),
            filters=source.filters,
            demo=source.kind == "demo",
            score_space=space,
            rule=rule,
            rule_floor=rule_floor,
        )
        memo = (key, choice)
        st.session_state["_floor_choice_memo"] = memo
    return memo[1]


def show_exports(
    result: Calibration, source: LabelSource, advice: FloorAdvice | None = None, shipped: ShippedRule | None = None
) -> None:
    """The sweep CSV, the floor as a .env line and as JSON; with ``advice``, the floor
    of its mode, and the .env comments and the JSON say the mode, target and warnings;
    with a turn rule picked to ship (``shipped``), the JSON carries it."""
    st.subheader("Export")
    rec = result.recommendation
    choice = _floor_choice(result, source, advice, shipped)
    snippet = advice.snippet if advice is not None else rec.snippet
    env_text = advice.env_text() if advice is not None else rec.snippet + "\n"
    st.code(snippet, language="bash")
    if choice.get("score_space") is None:
        st.caption(inert_markdown(unknown_space_caption(source.labels.stores())))
    if choice.get("rule") is not None:
        kind = choice["rule"]["kind"]
        beside = (
            f", with the floor {format_floor(choice['floor'])} beside its cut" if kind != "learned" else ""
        )
        st.caption(
            f"The floor file (JSON) ships the {inert_markdown(RULE_NAMES[kind])}{beside}: the agent side decides "
            "each turn by it. The .env line is the single floor."
        )
    cols = st.columns(3)
    cols[0].download_button(
        "Download the sweep (CSV)",
        # Callable data: at a million labels this file takes seconds and a hundred
        # MB to build, so it is built when the button is clicked, not on each rerun.
        lambda: (advice.sweep_frame() if advice is not None else result.sweep.to_frame()).to_csv(index=False),
        file_name="memlens-sweep.csv",
        mime="text/csv",
        key="download_sweep_csv",
        on_click="ignore",
    )
    cols[1].download_button(
        "Download the floor (.env line)",
        env_text,
        file_name="memlens-floor.env",
        mime="text/plain",
        key="download_floor_env",
        on_click="ignore",
    )
    cols[2].download_button(
        "Download the floor (JSON)",
        lambda: json.dumps(choice, indent=2),
        file_name="memlens-floor.json",
        mime="application/json",
        key="download_floor_json",
        on_click="ignore",
    )
    with st.expander("The numbers behind the floor (JSON)"):
        st.json(choice, expanded=False)
