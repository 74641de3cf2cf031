"""The Monitor page's pieces: logs in, the floor, the windows as charts, one window's
turns, and a labelling session drawn from exactly those turns.

The logs are read once (dashboard/ui/widgets/cache.py keeps the relation and its turns);
moving the floor or picking a window reruns SQL over the cached turns. Drawing a
session reads the window's rows once, when the button is pressed.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.database.model import LabelStoreError
from dashboard.database.sessions import SessionExists
from dashboard.display import code_span, inert_markdown
from dashboard.floor import default_floor
from dashboard.floor_config import FloorConfig, FloorConfigError, ScoreSpaceMismatch
from dashboard.labels import sampling
from dashboard.logs.log_files import LogFormatError
from dashboard.monitoring import decisions, rule_sql, turn_floor
from dashboard.monitoring.alerts import (
    DEFAULT_BASELINE_WINDOWS,
    DEFAULT_MARGIN,
    DRIFT,
    NO_MEMORY,
    MonitorResult,
    Settings,
    monitor,
)
from dashboard.monitoring.relation import TURNS, ConfigFloors, LogSet, count_at_config, turn_queries
from dashboard.monitoring.windows import (
    AT_FLOOR,
    LOGGED_DECISIONS,
    NEAR_FLOOR,
    RULE_DECISIONS,
    WINDOWS,
    Window,
    kept_sql,
    no_memory_sql,
    turn_floor_sql,
    window_rows,
)
from dashboard.ui.widgets import cache
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.sidebar import StoreChoice

DEMO_CHOICE = "Demo: 30 synthetic days with two known changes"
UPLOAD_CHOICE = "Upload log files"
MAX_TURNS_SHOWN = 500
MAX_ISSUES_SHOWN = 200
# how each turn is counted, as `memlens monitor` does without a floor, with --floor-config
# (a config with floors per user or store, or with a turn rule) and with --floor
LOGGED_CHOICE = "Its logged floor (the floor the agent applied)"
CONFIG_CHOICE = "The floor config's floor for its user or store"
RULE_CHOICE = "The floor config's rule, computed from the turn's rows (as the agent applies it)"
SLIDER_CHOICE = "The floor below (what if the floor were this)"


# ------------------------------------------------------------------ the logs


def log_set() -> LogSet | None:
    st.radio("Logs", [DEMO_CHOICE, UPLOAD_CHOICE], key="monitor_source", horizontal=True)
    if st.session_state.get("monitor_source") == UPLOAD_CHOICE:
        uploads = st.file_uploader(
            "Log files (JSONL, CSV, Parquet, OTLP JSON traces, the app's read log): one per day, or any split",
            type=["jsonl", "ndjson", "json", "csv", "parquet"],
            accept_multiple_files=True,
            key="monitor_upload",
        )
        if not uploads:
            st.info("Choose one or more log files.")
            return None
        try:
            with st.spinner("Reading the logs…", show_time=True):
                logs = cache.monitor_logs([(upload.name, upload.getvalue()) for upload in uploads])
        except LogFormatError as exc:
            show_error(str(exc))
            return None
    else:
        with st.spinner("Building the demo log…"):
            logs = cache.monitor_demo_logs()
        st.caption("More turns score under the floor on 2026-01-21; every score is 0.05 lower on 2026-01-26.")
    if logs.issues:
        st.warning(f"{logs.bad_rows:,} bad row(s) were skipped; the other rows are used.")
        st.dataframe(
            pd.DataFrame([{"file": i.file, "line": i.line, "field": i.field, "problem": i.message} for i in logs.issues[:MAX_ISSUES_SHOWN]]),
            hide_index=True,
            key="monitor_issues",
        )
    return logs


def _logged_floors(logs: LogSet) -> list[tuple[float, str, int]] | None:
    """The floors the logs say were applied (floor, segment, turns), or None when a
    turn with a memory carries none: read once per set of logs."""
    memo = st.session_state.get("_monitor_logged_floors")
    if memo is None or memo[0] != id(logs):
        try:
            floors = turn_floor.logged_floors(logs.con.cursor(), TURNS, "these logs")
        except turn_floor.NoLoggedFloor:
            floors = None
        memo = (id(logs), floors)
        st.session_state["_monitor_logged_floors"] = memo
    return memo[1]


def _logged_decisions(logs: LogSet) -> decisions.LoggedDecisions | None:
    """The decisions the agent logged per row (None for logs without them), read once
    per set of logs: what `memlens monitor` counts by without a floor."""
    memo = st.session_state.get("_monitor_logged_decisions")
    if memo is None or memo[0] != id(logs):
        memo = (id(logs), decisions.logged_decisions(logs.con.cursor(), TURNS))
        st.session_state["_monitor_logged_decisions"] = memo
    return memo[1]


def _config_floors(logs: LogSet, config: FloorConfig, digest: str) -> ConfigFloors | None:
    """The config applied to the logs as `memlens monitor --floor-config` applies it
    (relation.count_at_config), once per set of logs and config; None, with the error
    shown, for a config from another score space than the logs' stores or with a rule
    that reads the store's score parts, which no log holds."""
    memo = st.session_state.get("_monitor_config_floors")
    if memo is None or memo[:2] != (id(logs), digest):
        try:
            counted: ConfigFloors | str = count_at_config(logs.con.cursor(), config, "these logs")
        except (ScoreSpaceMismatch, rule_sql.RuleNotInLog) as exc:
            counted = str(exc)
        memo = (id(logs), digest, counted)
        st.session_state["_monitor_config_floors"] = memo
    if isinstance(memo[2], str):
        show_error(memo[2])
        return None
    return memo[2]


def floor_and_settings(logs: LogSet) -> Settings:
    """The floor (each turn's logged one, a floor config's per user or store or its
    turn rule, or one from a floor config or the slider) and the window controls."""
    state = st.session_state
    config_range = None
    counted = None
    upload = st.file_uploader("Floor config (the JSON Calibrate exports), optional", type=["json"], key="monitor_floor_config")
    if upload is not None:
        content = upload.getvalue()
        digest = hashlib.sha256(content).hexdigest()
        try:
            config = FloorConfig.from_bytes(content, upload.name)  # named as the visitor knows it
        except FloorConfigError as exc:
            show_error(str(exc))
            config = None
        if config is not None:
            config_range = config.label_range
            if state.get("_monitor_config_seen") != digest:  # a new config sets the floor once; the slider moves it after
                state["_monitor_config_seen"] = digest
                # At full precision: snapped to the slider's 0.01 grid, every figure
                # would be at another floor than the one shipped (and `memlens monitor`'s).
                state["monitor_floor"] = min(max(config.floor, 0.0), 1.0)
            st.caption(f"Shipped floor {config.floor:g}" + (f"; labelled {config.label_range[0]:%Y-%m-%d}..{config.label_range[1]:%Y-%m-%d}" if config.label_range else ""))
            counted = _config_floors(logs, config, digest)
            for said in counted.notes if counted is not None else []:
                st.caption(f"note: {inert_markdown(said)}")
    # floors per user or store, or a turn rule, to apply as `memlens monitor --floor-config` does
    per_turn_config = counted is not None and (counted.floor is None or counted.decide is not None)
    config_choice = RULE_CHOICE if counted is not None and counted.decide is not None else CONFIG_CHOICE
    if per_turn_config and state.get("_monitor_config_rule_seen") != state.get("_monitor_config_seen"):
        state["_monitor_config_rule_seen"] = state.get("_monitor_config_seen")
        state["monitor_floor_rule"] = config_choice  # a new config with such floors is applied once; the radio moves it after
    floors = _logged_floors(logs)
    decided = _logged_decisions(logs)
    # as the command: turns the agent logged decisions for need no floor; the others do
    loggable = floors is not None or (decided is not None and not decided.without)
    choices = [config_choice] * per_turn_config + [LOGGED_CHOICE] * loggable + [SLIDER_CHOICE]
    if state.get("monitor_floor_rule") not in choices:  # e.g. the config was removed: its choice with it
        state.pop("monitor_floor_rule", None)
    rule = st.radio("Count each turn at", choices, key="monitor_floor_rule") if len(choices) > 1 else SLIDER_CHOICE
    if not loggable:
        st.caption("These logs carry no floor per turn (written before memlens logged it)" + (
            ": count each turn at the floor config's floors or the floor below." if per_turn_config
            else ": every turn is counted at the floor below."
        ))
    logged = rule == LOGGED_CHOICE
    at_config = counted if rule == config_choice and per_turn_config else None
    state.setdefault("monitor_floor", round(default_floor(), 2))
    cols = st.columns(3)
    floor = cols[0].slider("Floor", 0.0, 1.0, step=0.01, key="monitor_floor", disabled=rule != SLIDER_CHOICE)
    window = cols[1].selectbox("Window", list(WINDOWS), index=1, key="monitor_window_width")
    margin = cols[2].number_input(
        "Practical margin (points of no-memory share)", min_value=0.0, max_value=100.0, value=DEFAULT_MARGIN * 100, step=1.0, key="monitor_margin"
    )
    baseline_windows = st.number_input(
        "Baseline: the first N windows (when the floor config's label dates are not in the log)",
        min_value=1,
        value=DEFAULT_BASELINE_WINDOWS,
        step=1,
        key="monitor_baseline_windows",
    )
    settings = Settings(
        floor=float(floor),
        window=window,
        margin=float(margin) / 100,
        baseline_windows=int(baseline_windows),
        config_range=config_range,
    )
    if logged and loggable:
        settings.floor = None
        if floors is not None:
            settings.floor_words = turn_floor.describe_floors(floors, "its logged floor")
        if decided is not None:
            # the agent's own kept or dropped per row, in `memlens monitor`'s header words
            settings.counting, settings.floor_words = LOGGED_DECISIONS, decided.words()
    elif at_config is not None:
        settings.floor, settings.floor_words, settings.turns = at_config.floor, at_config.words, at_config.turns
        if at_config.decide is not None:
            # each turn by the rule's decisions, computed from its rows, as the command counts it
            settings.counting, settings.rule = RULE_DECISIONS, at_config.decide
    return settings


def show_score_direction(logs: LogSet) -> None:
    """Warn when the logs' scores look like a raw distance (dashboard/score_direction.py):
    checked once per set of logs, not on every floor move."""
    from dashboard.monitoring.relation import score_direction

    memo = st.session_state.get("_monitor_direction")
    if memo is None or memo[0] != id(logs):
        memo = (id(logs), score_direction(logs.con.cursor()).warning())
        st.session_state["_monitor_direction"] = memo
    if memo[1]:
        st.warning(inert_markdown(memo[1]), icon="⚠️")


def result(logs: LogSet, settings: Settings) -> MonitorResult:
    # a cursor per run: the cached database is shared by every session of the server
    return monitor(logs.con.cursor(), settings)


# ------------------------------------------------------------------ charts


def show_summary(result: MonitorResult) -> None:
    b = result.baseline
    cols = st.columns(4)
    cols[0].metric("Windows", f"{len(result.windows):,}")
    cols[1].metric("Turns", f"{sum(w.turns for w in result.windows):,}")
    cols[2].metric("Baseline no memory", "-" if b.turns == 0 else f"{b.no_memory_share:.1%}")
    cols[3].metric("Alerts", f"{len(result.alerts):,}")
    st.caption(
        f"Baseline: {inert_markdown(b.how)} ({inert_markdown(b.label)}), {b.turns:,} turns; "
        "every figure at "
        + (
            f"the floor {result.settings.floor:g}."
            if result.settings.floor is not None and result.settings.counting == AT_FLOOR
            else f"{inert_markdown(result.settings.describe_floor())}."
        )
    )
    for note in result.notes:
        st.caption(f"note: {inert_markdown(note)}")
    # An alert is news about the traffic, not a fault of the page: a warning box.
    for alert in result.alerts:
        st.warning(inert_markdown(alert.line()), icon=":material/notifications_active:")


def _alerted(result: MonitorResult, figure: str) -> set:
    return {a.start for a in result.alerts if a.figure == figure}


def show_charts(result: MonitorResult) -> None:
    windows, s, b = result.windows, result.settings, result.baseline
    x = [w.start for w in windows]
    share = go.Figure()
    if b.turns:
        share.add_hrect(
            y0=b.no_memory_share, y1=b.no_memory_share + s.margin, fillcolor="rgba(120,120,120,0.15)", line_width=0,
            annotation_text="baseline + margin", annotation_position="top left",
        )
        share.add_hline(y=b.no_memory_share, line_dash="dot", line_color="gray")
    share.add_trace(go.Scatter(x=x, y=[w.no_memory_share for w in windows], mode="lines+markers", name="no memory",
                               customdata=[w.label(s.window) for w in windows], hovertemplate="%{customdata}: %{y:.1%}<extra></extra>"))
    alerted = _alerted(result, NO_MEMORY)
    share.add_trace(go.Scatter(x=[w.start for w in windows if w.start in alerted], y=[w.no_memory_share for w in windows if w.start in alerted],
                               customdata=[w.label(s.window) for w in windows if w.start in alerted],
                               mode="markers", marker={"symbol": "x", "size": 14, "color": "crimson"}, name="alert"))
    share.update_layout(title="Turns with no memory at the floor", yaxis_tickformat=".0%", height=320, margin={"t": 40, "b": 20})
    st.plotly_chart(share, key="monitor_chart", on_select="rerun", selection_mode="points")

    quantiles = go.Figure()
    for name, values in (("p90", [w.p90 for w in windows]), ("p50", [w.p50 for w in windows]), ("p10", [w.p10 for w in windows])):
        quantiles.add_trace(go.Scatter(x=x, y=values, mode="lines+markers", name=f"top-1 {name}"))
    if s.floor is not None:  # one floor for every turn (else each turn has its own)
        quantiles.add_hline(y=s.floor, line_color="crimson", annotation_text=f"floor {s.floor:g}")
    drifted = _alerted(result, DRIFT)
    quantiles.add_trace(go.Scatter(x=[w.start for w in windows if w.start in drifted], y=[w.p50 for w in windows if w.start in drifted],
                                   mode="markers", marker={"symbol": "x", "size": 14, "color": "crimson"}, name="drift alert"))
    quantiles.update_layout(title="Top-1 score per window", height=320, margin={"t": 40, "b": 20})
    st.plotly_chart(quantiles, key="monitor_quantiles")

    turns = go.Figure(go.Bar(x=x, y=[w.turns for w in windows], name="turns"))
    turns.update_layout(title="Turns per window", height=240, margin={"t": 40, "b": 20})
    st.plotly_chart(turns, key="monitor_turns")


def show_shadow(logs: LogSet, result: MonitorResult) -> None:
    """Where the logs carry a shadow config's decisions: the shipped config and the
    candidate per window, as `memlens monitor` shows them (decisions.shadow_windows)."""
    con = logs.con.cursor()
    if not decisions.has_shadow(con, TURNS):
        return
    report = decisions.shadow_windows(con, result.settings.window)
    if report is None:
        return
    st.subheader("Shipped and candidate, side by side")
    st.caption(
        f"The shipped {inert_markdown(', '.join(report.shipped_rules))} and the candidate "
        f"{inert_markdown(', '.join(report.candidate_rules))} logged in shadow, on the same turns: the share each left "
        "with no memory, and an exact McNemar test over the turns where they disagree (Holm over the windows)."
    )
    st.dataframe(
        pd.DataFrame(decisions.shadow_table(report)),
        hide_index=True,
        key="monitor_shadow_table",
        column_config={
            "shipped no memory": st.column_config.NumberColumn(format="percent"),
            "candidate no memory": st.column_config.NumberColumn(format="percent"),
            "McNemar p": st.column_config.NumberColumn(format="%.2g"),
        },
    )


# ------------------------------------------------------------------ one window


def pick_window(result: MonitorResult) -> Window | None:
    """The window picked on the no-memory chart, or in the list (alerts first by default)."""
    windows = result.windows
    if not windows:
        return None
    state = st.session_state
    labels = [w.label(result.settings.window) for w in windows]
    alerted = {a.window for a in result.alerts}
    chart = state.get("monitor_chart")
    points = (chart or {}).get("selection", {}).get("points", []) if isinstance(chart, dict) or hasattr(chart, "get") else []
    if points:
        point = points[0]
        # every trace carries the window's label; the line's own index is a fallback
        label = point.get("customdata")
        if isinstance(label, list):
            label = label[0] if label else None
        if label not in labels and point.get("curve_number") == 0 and isinstance(point.get("point_index"), int):
            label = labels[point["point_index"]] if 0 <= point["point_index"] < len(labels) else None
        picked = json.dumps(point, sort_keys=True, default=str)
        if label in labels and state.get("_monitor_chart_seen") != picked:
            state["_monitor_chart_seen"] = picked  # a new click picks; an old one does not undo the list
            state["monitor_window"] = label
    if state.get("monitor_window") not in labels:
        state["monitor_window"] = next((label for label in labels if label in alerted), labels[-1])
    label = st.selectbox(
        "Window (or click a point on the first chart)",
        labels,
        key="monitor_window",
        format_func=lambda text: f"{text} (alert)" if text in alerted else text,
    )
    return windows[labels.index(label)]


def show_window(logs: LogSet, result: MonitorResult, window: Window) -> None:
    s = result.settings
    st.subheader(f"Turns of {inert_markdown(window.label(s.window))}")
    st.caption(
        f"{window.turns:,} turns, {window.no_memory_share:.1%} with no memory at {inert_markdown(s.describe_floor())}, "
        f"{window.kept_per_turn:.2f} kept per turn; "
        + (f"{window.near_floor:.1%} with a top-1 within {NEAR_FLOOR} of the floor." if window.near_floor is not None else "")
    )
    at = turn_floor_sql(s.floor)  # the one floor, or each turn's own
    con = logs.con.cursor()
    # kept and no memory as the windows count them: at the floor, or by the logged decisions
    frame = con.execute(
        f"""SELECT message_id, ts AS time, top1 AS "top-1", rows AS memories, {at} AS floor,
                   {kept_sql(con, at, s.turns, s.counting)} AS kept,
                   coalesce({no_memory_sql(at, s.counting)}, false) AS "no memory"
            FROM {s.turns} WHERE ts >= ? AND ts < ? ORDER BY ts, message_id LIMIT {MAX_TURNS_SHOWN}""",
        [window.start, window.end],
    ).df()
    st.dataframe(frame, hide_index=True, key="monitor_turns_table", column_config={"top-1": st.column_config.NumberColumn(format="%.3f")})
    if window.turns > MAX_TURNS_SHOWN:
        st.caption(f"The first {MAX_TURNS_SHOWN:,} of {window.turns:,} turns.")


def _start_session(logs: LogSet, window: Window, window_label: str, drawn_store: str) -> None:
    state = st.session_state
    state.pop("monitor_session_error", None)
    rows = window_rows(logs.con.cursor(), window.start, window.end)
    if rows.empty:
        state["monitor_session_error"] = "This window has no memory to label (every turn came back empty)."
        return
    keep_text = bool(state.get("monitor_session_keep_text", False))
    try:
        if keep_text:  # the reviewer opted in: the log's message text goes with the rows
            texts = turn_queries(logs.con.cursor(), set(rows["message_id"]))
            rows = rows.assign(query=rows["message_id"].map(texts))
        session = sampling.save_session(
            cache.app_database(),
            str(state.get("monitor_session_name") or ""),
            rows,
            method="stratified",
            size=int(state.get("monitor_session_size", 200)),
            seed=1,
            source=f"monitor window {window_label}",
            keep_text=keep_text,
            drawn_store=drawn_store,
        )
    except (SessionExists, ValueError, LabelStoreError) as exc:
        state["monitor_session_error"] = str(exc)
        return
    # the Label page opens on it
    state["label_session"] = session.name
    state["monitor_session_created"] = (
        f"Session {session.name!r} created: {session.size} rows in {session.params.get('turns')} turns of {window_label}, "
        "stratified by score band."
    )


def session_form(logs: LogSet, result: MonitorResult, window: Window, choice: StoreChoice) -> None:
    """`choice`: the sidebar's store, which the session is tied to (its reviewers look
    the rows up there). The message text goes with the session only when the reviewer
    keeps it, taken from the logs as the page read them (their `query` column)."""
    label = window.label(result.settings.window)
    state = st.session_state
    if state.get("_monitor_session_for") != label:  # a new window: a name and size of its own
        state["_monitor_session_for"] = label
        state["monitor_session_name"] = f"monitor-{label.replace(' ', '-').replace(':', '')}"
        state["monitor_session_size"] = min(200, max(1, window.rows))
    # Enter in a field does not submit: the text box below may not be ticked yet
    with st.form("monitor_session_form", enter_to_submit=False):
        st.markdown("**Label fresh turns from this window**: a session stratified by score band, drawn from exactly these turns.")
        cols = st.columns(2)
        cols[0].text_input("Session name", key="monitor_session_name")
        cols[1].number_input("Size (rows)", min_value=1, step=1, key="monitor_session_size")
        st.checkbox(
            "Keep the message text from the log with the session",
            key="monitor_session_keep_text",
            help="Off: the session holds ids and scores only. Memory text is never kept.",
        )
        st.caption(
            "The session is tied to the store configured in the sidebar, "
            f"{inert_markdown(choice.display_name)} (id {code_span(choice.fingerprint)})."
        )
        st.form_submit_button(
            "Start a labelling session", on_click=_start_session, args=(logs, window, label, choice.fingerprint)
        )
    if error := state.get("monitor_session_error"):
        show_error(error)
    if note := state.get("monitor_session_created"):
        st.success(inert_markdown(note))  # it names the session as typed
        # A page is named by its file beside the main script, dashboard/views/navigation.py.
        st.page_link("label.py", label="Label it now", icon=":material/label:")
