"""The Monitor page's precision side: a judge grades a seeded sample of kept memories
per window (dashboard/monitoring/precision.py), the grades cached in the app database
with `memlens monitor --judge`'s, so grades a cron run made show here without a
request. A chart of each window's kept precision with its Wilson interval, the
alerts, and a labelling session drawn from exactly the judged pairs of a window, so
people can check the judge. The sample's grades go through the checks `memlens judge`
runs first: a judge that fails them has its figures shown as untrusted, with the
reason, and nothing is compared or alerted on (`memlens monitor --judge` exits 3).
Where the logs carry a shadow config's decisions, the judge grades what either side
kept, each pair once, and a table compares the two sides' kept precision per window
(dashboard/monitoring/shadow_precision.py), as the command does."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.database.judge_labels import judge_source
from dashboard.database.model import LabelStoreError
from dashboard.database.sessions import SessionExists
from dashboard.display import inert_markdown
from dashboard.judging.client import ChatClient
from dashboard.judging.judges import LlmJudge
from dashboard.labels import sampling
from dashboard.monitoring import decisions, sample_grades, shadow_precision
from dashboard.monitoring.alerts import MonitorResult
from dashboard.monitoring.precision import TOP, SampledTurn, precision_alerts, sample_turns, window_precision
from dashboard.monitoring.relation import TURNS, LogSet, turn_queries
from dashboard.monitoring.windows import WINDOWS, window_label, window_rows
from dashboard.ui.widgets import cache
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.llm_ranker_panel import model_config
from dashboard.ui.widgets.sidebar import StoreChoice

NOT_WATCHED = (
    "Relevance is not being watched: the figures above count turns left with no memory, not wrong memories "
    "let in. Configure a model (MEMLENS_LLM_BASE_URL and MEMLENS_LLM_MODEL) and a judge grades the top "
    f"{TOP} kept memories of a sample of turns per window here, or run `memlens monitor --judge` (docs/monitoring.md)."
)


def show_precision(logs: LogSet, result: MonitorResult, choice: StoreChoice) -> None:
    """`choice`: the sidebar's store, which the memory text is read from and a session is tied to;
    the query text comes from the logs as the page read them (their `query` column)."""
    st.subheader("Kept precision: are the memories let in right?")
    config, problem = model_config()
    if problem:
        show_error(f"The model settings are unusable: {problem}")
        return
    if config is None:
        st.info(NOT_WATCHED)
        return
    cols = st.columns(3)
    name = cols[0].text_input("Judge name", value="umbrela", key="monitor_judge_name").strip() or "umbrela"
    size = int(cols[1].number_input("Turns judged per window", min_value=1, max_value=500, value=20, key="monitor_judge_sample"))
    target = float(cols[2].number_input("Precision target (0: none)", min_value=0.0, max_value=1.0, value=0.0, step=0.05, key="monitor_precision_target"))
    settings = result.settings
    source = judge_source(name, config.model)
    con = logs.con.cursor()
    # the command's sample: what the windows keep (the floor, the logged decisions or the floor file's rule)
    sampled, eligible = sample_turns(
        con, settings.floor, settings.window, size, turns=settings.turns, counting=settings.counting, rule=settings.rule
    )
    # a shadow config's sample beside it: the judge grades what either side kept (the command's sample, seed 0)
    shadow = decisions.shadow_windows(con, settings.window) if decisions.has_shadow(con, TURNS) else None
    shadowed = shadow_precision.shadow_sample(con, settings.floor, settings.window, size, turns=settings.turns) if shadow else []
    everything = sampled + shadowed
    db = cache.app_database()
    grades = sample_grades.cached_grades(everything, db, source)
    pairs = len({(t.message_id, memory_id) for t in everything for memory_id, _, _ in t.pairs()})  # each pair once
    if pairs > len(grades):
        st.caption(f"Memory text is read by id from the sidebar's store ({inert_markdown(choice.display_name)}).")
        allowed = st.checkbox(
            f"Send the query and memory text of {pairs - len(grades):,} pair(s) to {config.host} ({config.model})",
            key="monitor_judge_send_text",
            help="Nothing is sent to the model until this is ticked. Grades already in the app database are not sent again.",
        )
        if st.button("Grade the sample", key="monitor_judge_run", disabled=not allowed) and allowed:
            _grade(logs, everything, source, name, config, choice)
            grades = sample_grades.cached_grades(everything, db, source)
    windows = window_precision(sampled, eligible, grades, lambda start: window_label(start, settings.window))
    check = sample_grades.sample_check(everything, db, source)
    if check.degenerate:
        _untrusted(check, source, size, len(grades), pairs)
        st.caption(inert_markdown(_agreement(db, source)))  # what people's labels say of this judge, if any
        return
    baseline, alerts = precision_alerts(
        windows, [w.start for w in result.baseline.windows], alpha=settings.alpha, target=target or None
    )
    for warning in check.warnings():  # a problem in part of the sample: said, the figures still stand
        st.warning(inert_markdown(warning))
    st.caption(
        f"{inert_markdown(source)}: the top {TOP} kept memories of {size:d} sampled turn(s) per window (stratified by top-1 band, seed 0); "
        f"{len(grades):,} of {pairs:,} pair(s) graded."
        + (f" Baseline kept precision {baseline.precision:.1%} over {baseline.pairs:,} pair(s)." if baseline and baseline.precision is not None else "")
    )
    if grades:
        st.caption(inert_markdown(_agreement(db, source)))  # a judge's figures stand beside its agreement with people
    for alert in alerts:
        st.warning(inert_markdown(alert.line()), icon=":material/notifications_active:")
    _chart(windows, baseline, alerts, target)
    if shadow is not None:
        _shadow_table(shadow, shadowed, grades)
    alerted = [a.window for a in alerts]
    if alerted:
        _judged_session_form(logs, sampled, windows, alerted, source, WINDOWS[settings.window], choice.fingerprint)


def _shadow_table(report: decisions.ShadowReport, shadowed: list[SampledTurn], grades: dict) -> None:
    """Each side's kept precision per window and the paired test, as `memlens monitor --judge` shows them."""
    shadow_precision.judge_sides(report, shadowed, grades)  # seed 0, as the page's sample
    st.markdown("**Kept precision, shipped and candidate**")
    st.caption(
        f"The top {TOP} memories each side kept of the sampled turns carrying the candidate's decisions, each pair graded "
        "once; the difference (candidate - shipped) with its paired bootstrap p over the sampled turns (Holm over the windows)."
    )
    st.dataframe(
        pd.DataFrame(shadow_precision.shadow_precision_table(report)),
        hide_index=True,
        key="monitor_shadow_precision_table",
        column_config={
            "shipped kept precision": st.column_config.NumberColumn(format="percent"),
            "candidate kept precision": st.column_config.NumberColumn(format="percent"),
            "difference": st.column_config.NumberColumn(format="percent"),
            "p": st.column_config.NumberColumn(format="%.2g"),
        },
    )


def _untrusted(check: Any, source: str, size: int, graded: int, pairs: int) -> None:
    """A judge that failed its checks: why, and no figure of it that reads as a measurement."""
    reasons = "; ".join(p.message for p in check.problems if p.whole_run)
    show_error(
        f"Kept precision is untrusted: {reasons}. Its grades of the top {TOP} kept memories of {size:d} sampled turn(s) "
        f"per window ({graded:,} of {pairs:,} pair(s)) are not compared with a baseline and raise no alert; "
        "`memlens monitor --judge` exits 3 on this judge. Fix the judge (its prompt, its model) or use another name."
    )


def _agreement(db: Any, source: str) -> str:
    from dashboard.judging.judge_agreement import judge_agreement
    from dashboard.labels.counted import counted
    from dashboard.ui.widgets.label_counting import reviewers_setting

    found = counted(db, environ=reviewers_setting())  # people's labels by the one rule, adjudications applied
    if not found.raw:
        return f"{source}: no people's labels in the app database, so the judge's agreement with people is unknown."
    judged = db.judge_labels.find(source=source)
    return judge_agreement(found.raw, judged, source, resamples=200, resolved=found.labels).headline()


def _grade(logs: LogSet, sampled: list[SampledTurn], source: str, name: str, config: Any, choice: Any) -> None:
    if choice.store is None:
        show_error(f"The store the memory text is read from is not open: {choice.error}")
        return
    client = ChatClient(config, send_text=True)
    try:
        with st.spinner(f"Grading with {config.model} at {config.host}…", show_time=True):
            run = sample_grades.grade_sample(
                sampled, lambda ids: turn_queries(logs.con.cursor(), ids), judge=LlmJudge(client, name), db=cache.app_database(), store=choice.store,
                store_id=choice.fingerprint, concurrency=config.concurrency,
            )
    except LabelStoreError as exc:
        show_error(str(exc))
        return
    finally:
        client.close()
    st.caption(inert_markdown(run.line(source)))  # the first failure quotes the model's error


def _chart(windows: list, baseline: Any, alerts: list, target: float) -> None:
    shown = [w for w in windows if w.pairs]
    figure = go.Figure()
    if baseline is not None and baseline.precision is not None:
        figure.add_hline(y=baseline.precision, line_dash="dot", line_color="gray", annotation_text="baseline")
    if target:
        figure.add_hline(y=target, line_color="crimson", annotation_text=f"target {target:g}")
    figure.add_trace(
        go.Scatter(
            x=[w.start for w in shown],
            y=[w.precision for w in shown],
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [w.interval[1] - w.precision for w in shown],
                "arrayminus": [w.precision - w.interval[0] for w in shown],
            },
            customdata=[w.label for w in shown],
            mode="lines+markers",
            name="kept precision",
            hovertemplate="%{customdata}: %{y:.1%}<extra></extra>",
        )
    )
    alerted = {a.start for a in alerts}
    figure.add_trace(
        go.Scatter(
            x=[w.start for w in shown if w.start in alerted],
            y=[w.precision for w in shown if w.start in alerted],
            mode="markers",
            marker={"symbol": "x", "size": 14, "color": "crimson"},
            name="alert",
        )
    )
    figure.update_layout(title="Kept precision per window (judged sample, 95% interval)", yaxis_tickformat=".0%", yaxis_range=[0, 1.05], height=320, margin={"t": 40, "b": 20})
    st.plotly_chart(figure, key="monitor_precision_chart")


def _judged_session_form(
    logs: LogSet, sampled: list[SampledTurn], windows: list, alerted: list[str], source: str, width: Any, drawn_store: str
) -> None:
    state = st.session_state
    with st.form("monitor_judged_session_form", enter_to_submit=False):
        st.markdown("**Check the judge**: a labelling session of exactly the pairs it graded in an alert window.")
        cols = st.columns(2)
        label = cols[0].selectbox("Alert window", list(dict.fromkeys(alerted)), key="monitor_judged_window")
        cols[1].text_input("Session name", value=f"judged-{label}", key="monitor_judged_session_name")
        submitted = st.form_submit_button("Start a session of the judged pairs")
    if submitted:
        window = next(w for w in windows if w.label == label)
        pairs = {(t.message_id, memory_id) for t in sampled if t.start == window.start for memory_id, _, _ in t.kept}
        rows = window_rows(logs.con.cursor(), window.start, window.start + width)
        rows = rows[[(m, i) in pairs for m, i in zip(rows["message_id"], rows["memory_id"], strict=True)]]
        try:
            session = sampling.save_session(
                cache.app_database(), str(state.get("monitor_judged_session_name") or f"judged-{label}"), rows,
                method="uniform", size=len(rows), seed=1, source=f"pairs {source} graded in {label}", drawn_store=drawn_store,
            )
        except (SessionExists, ValueError, LabelStoreError) as exc:
            show_error(str(exc))
            return
        state["label_session"] = session.name
        st.success(
            f"Session {inert_markdown(repr(session.name))} created: the {session.size:d} pair(s) "
            f"{inert_markdown(source)} graded in {inert_markdown(label)}."
        )
        st.page_link("label.py", label="Label it now", icon=":material/label:")
