"""The Quality page's miss anatomy of the chosen run: where each relevant memory was
lost (not stored, past k, under the floor) or kept, one bar per cause, and each
cause's questions with a link that opens them on Inspect as the run ranked them.

Finding the causes asks the store (a look-up by id, a deeper query), so it waits
for a button, as a run does; the answer is kept for the run, and moving the floor
re-counts it without asking the store again (dashboard/evaluation/misses.py).
A floor file given on the panel counts them under its rule that reads the whole
turn (or its floor) instead of under the Floor slider."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from connectors.base import ConnectorError, MemoryStore
from dashboard import store_link
from dashboard.database import AppDatabase
from dashboard.database.runs import RunInfo
from dashboard.display import inert_link, inert_markdown
from dashboard.evaluation import misses
from dashboard.evaluation.judged_sets import JudgedSet
from dashboard.evaluation.run_compare import inspect_link
from dashboard.floor import floor_text
from dashboard.turn_rule import TurnRule
from dashboard.ui.widgets import cache
from dashboard.ui.widgets.errors import show_store_error
from dashboard.ui.widgets.floor_file import uploaded_floor_file
from dashboard.ui.widgets.progress import progress_bar
from dashboard.ui.widgets.sidebar import StoreChoice, run_link_params

RESULT = "misses_result"
CAUSE_COLOURS = {"not_stored": "#E45756", "past_k": "#F58518", "under_floor": "#BAB0AC", "kept": "#4C78A8"}
MAX_LISTED = 200  # questions listed per cause (the export holds every pair)


def run_store(choice: StoreChoice, info: RunInfo, at_clock: Callable[[StoreChoice, str | None], MemoryStore]) -> tuple[MemoryStore | None, str | None]:
    """The store the run was made on, with its settings and clock; (None, why not)
    when the page cannot open it. The sidebar's store when it is the run's (its key
    included); else, for a store a link could carry, the run's own saved settings."""
    if choice.store is not None and choice.name == info.store and choice.fingerprint == info.fingerprint:
        return at_clock(choice, info.as_of), None
    if why := store_link.cannot_link(info.store):
        return None, (f"this run was made on {info.display_name} (id {info.fingerprint}) and {why}: pick that store and its settings "
                      "in the sidebar to find where its misses were lost")
    return cache.open_store(info.store, json.dumps(info.settings, sort_keys=True, default=str)), None


def _found(info: RunInfo) -> misses.MissAnatomy | None:
    kept = st.session_state.get(RESULT)
    if kept and kept[0] == (info.run_id, info.done, info.finished_at):
        return kept[1]
    return None


def _find(store: MemoryStore, db: AppDatabase, info: RunInfo, judged: JudgedSet) -> None:
    bar = progress_bar(0.0, "Looking the missed memories up")

    def progress(done: int, total: int) -> None:
        bar.progress(done / total if total else 1.0, text=f"deeper queries: {done} of {total} questions")

    try:
        anatomy = misses.locate(store, info, judged.questions, cache.run_outcomes(db, info), progress=progress)
    except ConnectorError as exc:
        show_store_error(exc, "find where the misses were lost")
        return
    finally:
        bar.empty()
    st.session_state[RESULT] = ((info.run_id, info.done, info.finished_at), anatomy)


def _chart(counts: dict[str, int]) -> go.Figure:
    figure = go.Figure(
        go.Bar(x=list(misses.CAUSES), y=[counts[c] for c in misses.CAUSES], customdata=list(misses.CAUSES),
               marker_color=[CAUSE_COLOURS[c] for c in misses.CAUSES], text=[counts[c] for c in misses.CAUSES],
               hovertemplate="%{x}: %{y} pair(s)<extra></extra>")
    )
    figure.update_layout(title="Relevant memories by where they were lost", height=300, margin={"t": 40, "b": 20},
                         yaxis_title="pairs")
    return figure


def _picked_cause() -> None:
    """A click on a bar picks its cause in the list below (a new click only: the
    chart keeps its selection across reruns, and must not undo the list's choice)."""
    state = st.session_state
    chart = state.get("misses_chart")
    points = (chart or {}).get("selection", {}).get("points", []) if hasattr(chart, "get") else []
    if not points:
        return
    cause = points[0].get("x") or points[0].get("customdata")
    picked = json.dumps(points[0], sort_keys=True, default=str)
    if cause in misses.CAUSES and state.get("_misses_chart_seen") != picked:
        state["_misses_chart_seen"] = picked
        state["misses_cause"] = cause


def show(db: AppDatabase, runs: list[RunInfo], choice: StoreChoice,
         at_clock: Callable[[StoreChoice, str | None], MemoryStore], floor: float) -> None:
    info = next((r for r in runs if r.run_id == st.session_state.get("eval_run")), None)
    if info is None:
        return
    judged = cache.judged_set(db, info.set_name, info.set_hash)
    if judged is None:
        return  # the run's figures already say its judged set is gone
    st.markdown("**Where the relevant memories were lost**")
    st.caption(
        "Each (question, relevant memory) pair of this run: not stored at all, stored but ranked past k, in the "
        "top k under the floor, or kept. Finding out looks the missed memories up in the store and asks it "
        f"again, deeper (up to {misses.DEFAULT_DEPTH}), with the run's settings and clock."
    )
    store, why_not = None, None
    try:
        store, why_not = run_store(choice, info, at_clock)
    except ConnectorError as exc:
        why_not = f"the run's store cannot be opened: {exc}"
    if why_not:
        st.info(inert_markdown(why_not[0].upper() + why_not[1:] + "."))
    if st.button("Find where each miss was lost", key="misses_find", disabled=store is None) and store is not None:
        _find(store, db, info, judged)
    anatomy = _found(info)
    if anatomy is None:
        return
    floor, rule = _floor_file(floor)
    _show_anatomy(anatomy, judged, floor, rule)


def _floor_file(floor: float) -> tuple[float, TurnRule | None]:
    """The floor and rule the misses are counted under: a floor file's (its rule,
    with its floor beside a label-free cut), else the Floor slider's floor alone."""
    config, _ = uploaded_floor_file("misses_floor_file")
    if config is None:
        return floor, None
    said = (
        f"Counted under the floor file's {config.rule.describe()}" + (f" at its floor {floor_text(config.floor)}" if config.rule.kind != "learned" else "")
        if config.rule is not None
        else f"Counted at the floor file's floor {floor_text(config.floor)}"
    )
    segments = "; its floors per segment are not applied here" if config.segments else ""
    st.caption(inert_markdown(f"{said} (the Floor slider above is not used for the misses){segments}."))
    return config.floor, config.rule


def _show_anatomy(anatomy: misses.MissAnatomy, judged: JudgedSet, floor: float, rule: TurnRule | None = None) -> None:
    info = anatomy.info
    counts = anatomy.counts(floor, rule)
    cols = st.columns(len(misses.CAUSES))
    for col, cause in zip(cols, misses.CAUSES, strict=True):
        col.metric(cause, counts[cause])
    for note in anatomy.notes:
        st.caption(inert_markdown(note[0].upper() + note[1:] + "."))
    if counts.get(misses.UNKNOWN):
        st.warning(f"For {counts[misses.UNKNOWN]:d} pair(s) the store could not say whether the memory is stored.")
    if anatomy.skipped_questions:
        st.warning(f"{anatomy.skipped_questions:d} question(s) failed or were not asked in this run: their pairs are left out.")
    st.plotly_chart(_chart(counts), key="misses_chart", on_select="rerun", selection_mode="points")
    by_tag = anatomy.by_tag(floor, rule)
    if by_tag:
        st.dataframe(pd.DataFrame.from_dict(by_tag, orient="index"), key="misses_by_tag")
    _picked_cause()
    if st.session_state.get("misses_cause") not in misses.CAUSES:
        st.session_state["misses_cause"] = next((c for c in misses.CAUSES if counts[c]), "kept")
    cause = str(st.radio("Questions of (or click a bar)", misses.CAUSES, key="misses_cause", horizontal=True,
                         format_func=lambda c: f"{c} ({counts[c]})"))
    _list_cause(anatomy, judged, floor, cause, rule)
    left, right = st.columns(2)
    left.download_button("Download pairs (JSONL)", "".join(line + "\n" for line in misses.jsonl_lines(anatomy, floor, rule)),
                            file_name=f"misses-{info.run_id}.jsonl", mime="application/jsonl", key="misses_download_jsonl")
    right.download_button("Download pairs (CSV)", misses.csv_text(anatomy, floor, rule), file_name=f"misses-{info.run_id}.csv",
                            mime="text/csv", key="misses_download_csv")


def question_links(info: RunInfo, judged: JudgedSet, message_ids: list[str], floor: float) -> dict[str, str]:
    """Each question's Inspect link with the run's store, settings, clock, k and floor
    (the links Compare builds, from the same helpers)."""
    questions = judged.by_id()
    store = run_link_params(info.store, info.settings)
    return {
        m: inspect_link(questions[m].query, questions[m].user_id, info.k, floor, store=store, as_of=info.as_of)
        for m in message_ids
    }


def _list_cause(anatomy: misses.MissAnatomy, judged: JudgedSet, floor: float, cause: str, rule: TurnRule | None = None) -> None:
    info = anatomy.info
    rows: list[dict[str, Any]] = [r for r in anatomy.rows(floor, rule) if r["cause"] == cause]
    if not rows:
        st.caption(f"No pair is {inert_markdown(cause)}.")
        return
    shown = rows[:MAX_LISTED]
    links = question_links(info, judged, list(dict.fromkeys(r["message_id"] for r in shown)), floor)
    frame = pd.DataFrame([{"message_id": r["message_id"], "user": r["user_id"], "memory_id": r["memory_id"],
                           "rank": r["rank"], "score": r["score"], "inspect": links[r["message_id"]]} for r in shown])
    st.dataframe(frame, hide_index=True, width="stretch", key="misses_questions",
                 column_config={"inspect": st.column_config.LinkColumn("Inspect", display_text="open on Inspect")})
    if len(rows) > MAX_LISTED:
        st.caption(f"The first {MAX_LISTED} of {len(rows):d} pairs; the downloads hold every one.")
    # Plain anchors too: a grid cell is drawn on a canvas, which keyboard and
    # screen-reader users cannot follow.
    st.markdown("Open on Inspect: " + ", ".join(
        inert_link(m, link) for m, link in list(links.items())[:5]))
    why_not = store_link.cannot_link(info.store)
    if why_not:
        st.warning(f"The links cannot open this run's store, {inert_markdown(info.display_name)}: {inert_markdown(why_not)}. "
                   f"On Inspect, pick the {inert_markdown(info.store)} store in the sidebar; the run's fingerprint is {inert_markdown(info.fingerprint)}.")
