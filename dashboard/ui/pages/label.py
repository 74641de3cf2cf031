"""The Label page's pieces: read a log, draw a session, label it from the keyboard.

Every write happens in a button callback, before the page is drawn again, so what
the page shows is always what the label database holds. Memory text is looked up
by id with the connected store's ``get`` once per turn, shown, and never written
anywhere; the lookups of the current turn are kept in the browser session only,
so pressing a label button never calls the store again.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from connectors.base import ConnectorError
from dashboard.database import AppDatabase
from dashboard.database.judge_labels import GRADES, JudgeLabel
from dashboard.database.model import NOT_RELEVANT, RELEVANT, LabelStoreError
from dashboard.database.sessions import LabelSession, SessionExists
from dashboard.display import clip_text, code_span, inert_markdown
from dashboard.judging.label_order import DISAGREEMENT, SESSION, UNCERTAINTY, order_items
from dashboard.labels import labelling, sampling
from dashboard.logs.retrieval_log import LogFormatError, LogImport, read_log, read_log_bytes
from dashboard.ui.pages import label_judge_trust
from dashboard.ui.widgets import store_names
from dashboard.ui.widgets.errors import show_error, show_store_error
from dashboard.ui.widgets.sidebar import StoreChoice

SAMPLE_LOG_CHOICE = "The bundled sample log"
UPLOAD_CHOICE = "Upload a log file"
MAX_ISSUES_SHOWN = 200  # the rest are in the download
UNDO_DEPTH = 100
# Keys that are letters or digits, so they work on any layout; Streamlit reserves R and C.
SHORTCUTS = {"relevant": "1", "not_relevant": "2", "skip": "3", "undo": "u", "accept": "a"}
NO_MESSAGE_TEXT = "message text not available"
METHOD_TITLES = {
    "uniform": "Uniform: rows at random",
    "stratified": "Stratified by score band: every band equally covered",
    "turns": "Whole turns: every row of the drawn messages",
}


# ------------------------------------------------------------------ the log


def _read_log() -> None:
    state = st.session_state
    state.pop("label_log_error", None)
    try:
        if state.get("log_source") == UPLOAD_CHOICE:
            upload = state.get("log_upload")
            if upload is None:
                state["label_log_error"] = "Choose a log file first."
                return
            state["label_log"] = read_log_bytes(
                upload.getvalue(), upload.name, include_query=bool(state.get("log_include_query"))
            )
        else:
            from dashboard.logs.demo import SAMPLE_LOG

            state["label_log"] = read_log(SAMPLE_LOG)
            state["label_log"].source = "sample_log.jsonl"
    except LogFormatError as exc:
        state["label_log_error"] = str(exc)


def log_loader() -> LogImport | None:
    """Pick and read a log; show what was imported and every bad row."""
    st.radio("Log", [SAMPLE_LOG_CHOICE, UPLOAD_CHOICE], key="log_source", horizontal=True)
    if st.session_state.get("log_source") == UPLOAD_CHOICE:
        st.file_uploader(
            "Log file (JSONL, CSV or Parquet): message_id, memory_id, rank, score; "
            "optional user_id, query, timestamp, store. Or OpenTelemetry traces as OTLP JSON "
            "(an OpenInference RETRIEVER or GenAI retrieval span is one turn)",
            type=["jsonl", "ndjson", "json", "csv", "parquet"],
            key="log_upload",
        )
        st.checkbox(
            "Keep the query text that trace spans carry (off: ids and scores only)",
            key="log_include_query",
        )
    if st.button("Read the log", key="log_read"):
        upload = st.session_state.get("log_upload")
        size = f" ({len(upload.getvalue()):,} bytes)" if upload is not None else ""
        # A big log takes seconds: say what is happening instead of a still page.
        with st.spinner(f"Reading the log{size}…", show_time=True):
            _read_log()
    if error := st.session_state.get("label_log_error"):
        show_error(error)
    log: LogImport | None = st.session_state.get("label_log")
    if log is None:
        return None
    st.caption(inert_markdown(log.summary()))
    if log.issues:
        st.warning(f"{log.bad_rows:,} bad row(s) were skipped; the other rows were imported.")
        st.dataframe(
            pd.DataFrame(
                [{"line": i.line, "field": i.field, "problem": i.message} for i in log.issues[:MAX_ISSUES_SHOWN]]
            ),
            hide_index=True,
            width="stretch",
            key="log_issues_table",
        )
        if len(log.issues) > MAX_ISSUES_SHOWN:
            st.caption(f"Showing the first {MAX_ISSUES_SHOWN:,} of {len(log.issues):,} problems; download them all:")
        st.download_button(
            "Download every problem",
            lambda: "\n".join(log.issue_lines()) + "\n",
            file_name="log-problems.txt",
            key="log_issues_download",
            on_click="ignore",
        )
    if log.conflicts:
        with st.expander(f"{len(log.conflicts):,} repeated row(s) disagreed with the first one"):
            st.text("\n".join(str(c) for c in log.conflicts[:MAX_ISSUES_SHOWN]))
    return log


# ------------------------------------------------------------------ a new session


def _create_session(db: AppDatabase, drawn_store: str) -> None:
    state = st.session_state
    log: LogImport | None = state.get("label_log")
    state.pop("session_form_error", None)
    if log is None or log.rows.empty:
        state["session_form_error"] = "Read a log with at least one good row first."
        return
    name = (state.get("session_name") or "").strip()
    try:
        session = sampling.save_session(
            db,
            name,
            log.rows,
            method=state.get("sample_method", "stratified"),
            size=int(state.get("sample_size", 200)),
            seed=int(state.get("sample_seed", 1)),
            band_width=float(state.get("sample_band_width", sampling.DEFAULT_BAND_WIDTH)),
            reviewers=sampling.parse_reviewers(state.get("session_reviewers", "")),
            overlap=float(state.get("session_overlap", 0.0)),
            source=log.source,
            keep_text=bool(state.get("session_keep_text", False)),
            drawn_store=drawn_store,
        )
    except (SessionExists, ValueError, LabelStoreError) as exc:
        state["session_form_error"] = str(exc)
        return
    state["label_session"] = session.name
    state["session_created"] = f"Session {session.name!r} created: {session.size} rows in {session.params.get('turns')} turns."


def new_session_form(db: AppDatabase, log: LogImport | None, drawn_store: str) -> None:
    """`drawn_store`: the fingerprint of the store configured now, which the session
    remembers (its rows are looked up in that store)."""
    if log is None:
        return
    state = st.session_state
    state.setdefault("session_name", f"session-{datetime.now(UTC):%Y%m%d-%H%M}")
    state.setdefault("sample_size", min(200, max(1, len(log.rows))))
    # Enter in a field does not create the session: "keep the message text" may not be ticked yet
    with st.form("session_form", enter_to_submit=False):
        st.text_input("Session name", key="session_name")
        st.selectbox("Sampling", sampling.METHODS, key="sample_method", index=1, format_func=METHOD_TITLES.__getitem__)
        cols = st.columns(3)
        cols[0].number_input("Size (rows; turns for whole turns)", min_value=1, step=1, key="sample_size")
        cols[1].number_input("Seed", min_value=0, step=1, value=1, key="sample_seed")
        cols[2].number_input(
            "Score band width", min_value=0.01, max_value=1.0, step=0.01, value=sampling.DEFAULT_BAND_WIDTH,
            key="sample_band_width",
        )
        st.text_input("Reviewers (comma separated; empty: everyone labels every turn)", key="session_reviewers")
        st.slider("Overlap: share of turns labelled by two reviewers", 0.0, 1.0, 0.2, 0.05, key="session_overlap")
        st.checkbox(
            "Keep the message text from the log with the session",
            key="session_keep_text",
            help="Off: the session holds ids and scores only, and reviewers see "
            f"“{NO_MESSAGE_TEXT}”. Memory text is never kept.",
        )
        st.caption(
            "The session is tied to the store configured in the sidebar, "
            f"{inert_markdown(store_names.name_of(drawn_store))} (id {code_span(drawn_store)})."
        )
        st.form_submit_button("Create session", on_click=_create_session, args=(db, drawn_store))
    if error := state.get("session_form_error"):
        show_error(error)


_FOCUS_PAGE = "_label_focus_page"  # a session was just picked: the keys go to the page again


def _session_picked() -> None:
    st.session_state[_FOCUS_PAGE] = True


def session_picker(db: AppDatabase) -> LabelSession | None:
    every = db.sessions.all()
    # An archived session is kept (its labels count) but not offered unless asked for.
    shown = st.checkbox("Show archived sessions", key="label_show_archived") if any(s.archived_at for s in every) else False
    sessions = {s.name: s for s in every if shown or not s.archived_at}
    if note := st.session_state.pop("session_created", None):
        st.success(inert_markdown(note))
    if not sessions:
        st.info("No labelling session yet: read a log and create one below.")
        return None
    if st.session_state.get("label_session") not in sessions:
        st.session_state["label_session"] = next(iter(sessions))
    name = st.selectbox("Session", list(sessions), key="label_session", on_change=_session_picked)
    if st.session_state.pop(_FOCUS_PAGE, False):
        # The pick leaves the focus in the selectbox, where the 1/2/3 shortcuts are
        # typed into it instead: hand the focus back to the page (a constant script).
        st.html("<script>document.activeElement && document.activeElement.blur()</script>", unsafe_allow_javascript=True)
    session = sessions[name]
    # reviewer names and the source were typed by whoever made the session: inert
    who = inert_markdown(", ".join(session.reviewers)) if session.reviewers else "everyone labels every turn"
    st.caption(
        f"{session.size:d} rows, {inert_markdown(session.method)} sample, seed {inert_markdown(str(session.seed))}, "
        f"from {inert_markdown(session.source or 'a log')}; "
        f"reviewers: {who}" + (f"; overlap {session.overlap:.0%}" if session.reviewers else "")
        + (f"; drawn on {inert_markdown(store_names.name_of(session.drawn_store))}" if session.drawn_store else "")
        + (f"; archived {inert_markdown(str(session.archived_at))}" if session.archived_at else "")
    )
    return session


# ------------------------------------------------------------------ labelling


def _undo_stack() -> list[labelling.UndoStep]:
    return st.session_state.setdefault("label_undo_steps", [])


def _act(store, session, item, reviewer, action, connected, missing) -> None:
    try:
        step = labelling.record(
            store, session, item, reviewer, action, connected_store=connected, memory_missing=missing
        )
    except (LabelStoreError, ValueError) as exc:
        st.session_state["label_error"] = f"The label was not saved: {exc}"
        return
    st.session_state.pop("label_error", None)
    stack = _undo_stack()
    stack.append(step)
    del stack[:-UNDO_DEPTH]


def _undo(store, session, items_by_key, connected) -> None:
    stack = _undo_stack()
    if not stack:
        return
    step = stack[-1]
    try:
        labelling.undo(store, step, items_by_key[(step.message_id, step.memory_id)], session, connected)
    except LabelStoreError as exc:
        st.session_state["label_error"] = f"Undo failed: {exc}"
        return
    stack.pop()


def memory_texts(choice: StoreChoice, session_name: str, message_id: str, items) -> dict[str, tuple[str, str | None]]:
    """memory_id -> ("ok", text) | ("missing", None) | ("error", message), looked
    up once per turn and store; kept in this browser session only."""
    state = st.session_state
    key = (session_name, message_id, choice.fingerprint)
    cached = state.get("label_texts")
    if cached and cached["key"] == key:
        return cached["memories"]
    memories: dict[str, tuple[str, str | None]] = {}
    for item in items:
        try:
            state["label_lookups"] = state.get("label_lookups", 0) + 1
            memory = choice.connected.get(item.memory_id, user_id=item.user_id)
        except ConnectorError as exc:
            memories[item.memory_id] = ("error", f"{type(exc).__name__}: {exc}")
            continue
        memories[item.memory_id] = ("ok", memory.text) if memory is not None else ("missing", None)
    state["label_texts"] = {"key": key, "memories": memories}
    return memories


def judge_suggestions(db: AppDatabase, message_id: str) -> dict[str, list[JudgeLabel]]:
    """memory id -> the judge labels of this turn, by source; none when the read fails
    (a suggestion is a help, never a reason the page cannot label)."""
    try:
        found: dict[str, list[JudgeLabel]] = {}
        for suggestion in db.judge_labels.find(message_ids=[message_id]):
            found.setdefault(suggestion.memory_id, []).append(suggestion)
        return found
    except LabelStoreError:
        return {}


def _order_title(order: tuple[str, ...]) -> str:
    if order[0] == UNCERTAINTY:
        return f"Where {order[1]} is least sure first"
    if order[0] == DISAGREEMENT:
        return f"Where {order[1]} and {order[2]} disagree first"
    return "Session order"


def turn_order(db: AppDatabase, queue: labelling.ReviewerQueue) -> None:
    """The "Order turns" select: session order, or the remaining turns by a judge's
    uncertainty or two judges' disagreement (dashboard/judging/label_order.py). It
    reorders ``queue.items`` in place; what is done, and so the progress, is unchanged."""
    try:
        sources = db.judge_labels.sources()
    except LabelStoreError:
        return  # a suggestion is a help: without judge labels the session order stands
    if not sources:
        return
    orders: list[tuple[str, ...]] = [(SESSION,), *((UNCERTAINTY, s) for s in sources)]
    orders += [(DISAGREEMENT, a, b) for i, a in enumerate(sources) for b in sources[i + 1 :]]
    by_title = {_order_title(order): order for order in orders}  # sources are distinct, so titles are
    if st.session_state.get("label_order") not in by_title:
        st.session_state["label_order"] = _order_title((SESSION,))
    title = st.selectbox(
        "Order turns",
        list(by_title),
        key="label_order",
        help="Label first where the judge's grade is next to the relevant / not relevant boundary (1 or 2), "
        "or where two judges disagree. Turns no judge graded come last, in session order.",
    )
    order = by_title[title]
    if order[0] == SESSION:
        return
    try:
        judged = db.judge_labels.find(message_ids=queue.turns())
    except LabelStoreError:
        return
    queue.items = order_items(queue.items, judged, order)


def _status_text(status: str | None) -> str:
    return {"relevant": "✅ relevant", "not_relevant": "❌ not relevant", "skip": "⏭ skipped"}.get(status or "", "")


def labelling_panel(db: AppDatabase, session: LabelSession, reviewer: str, choice: StoreChoice) -> None:
    if session.drawn_on_another_store(choice.fingerprint):
        # Every id would be looked up in the wrong store and read as "missing": an
        # invitation to label real memories not relevant. No lookup, no buttons.
        show_error(
            f"This session was drawn on {store_names.name_of(session.drawn_store)} (id {session.drawn_store or ''}), "
            f"but the sidebar has {choice.display_name} (id {choice.fingerprint}) configured. Its memory ids belong "
            "to the first store, so no "
            "labels are offered here: pick that store, with the same settings, in the sidebar."
        )
        return
    if session.drawn_store is None:
        st.caption(
            "This session was drawn before memlens recorded the store it was drawn on: check that the "
            "sidebar's store is the one its log came from."
        )
    try:
        labelling.check_reviewer(session, reviewer)
    except labelling.NotAReviewer as exc:
        # A mistyped name would otherwise label rows that no figure should count.
        show_error(str(exc))
        return
    queue = labelling.load_queue(db, session.name, reviewer)
    turn_order(db, queue)
    total = max(queue.total, 1)
    st.progress(queue.done / total, text=f"{queue.done} of {queue.total} rows done by {reviewer}")
    if error := st.session_state.get("label_error"):
        show_error(error)
    items_by_key = {(i.message_id, i.memory_id): i for i in queue.items}
    stack = [s for s in _undo_stack() if s.session == session.name and s.reviewer == reviewer]
    current = queue.current()
    if current is None:
        st.success("Every row of this session assigned to you is labelled or skipped.")
        st.button(
            "Undo the last label",
            key="label_undo",
            shortcut=SHORTCUTS["undo"],
            disabled=not stack,
            on_click=_undo,
            args=(db, session, items_by_key, choice.fingerprint),
        )
        return
    turn, item = current
    turns = queue.turns()
    st.subheader(f"Turn {turns.index(turn.message_id) + 1:d} of {len(turns):d}")
    st.caption(f"message {code_span(turn.message_id)}" + (f" · user {code_span(turn.user_id)}" if turn.user_id else ""))
    if turn.query_text:
        st.markdown(f"> {inert_markdown(clip_text(turn.query_text)[0])}")
    else:
        st.markdown(f"*{NO_MESSAGE_TEXT}*")
    texts: dict[str, tuple[str, str | None]]
    if choice.store is None:
        show_store_error(choice.error, "open the store, so memory text cannot be looked up")
        texts = {i.memory_id: ("error", "no store connected") for i in turn.items}
    else:
        texts = memory_texts(choice, session.name, turn.message_id, turn.items)
    suggestions = judge_suggestions(db, turn.message_id)
    trusts = label_judge_trust.suggestion_trust(
        db, {s.source for found in suggestions.values() for s in found}, (session.name, turn.message_id, queue.done)
    )
    people = label_judge_trust.people_labels(db, turn.message_id) if suggestions else {}
    label_judge_trust.show_trust(trusts)
    for row in turn.items:
        kind, text = texts.get(row.memory_id, ("error", "not looked up"))
        is_current = (row.message_id, row.memory_id) == (item.message_id, item.memory_id)
        with st.container(border=is_current):
            score = f"{row.score:.3f}" if row.score is not None else "no score"
            marker = "▶ " if is_current else ""
            st.markdown(
                f"{marker}**#{inert_markdown(str(row.rank))}** {code_span(row.memory_id)} · score {score} "
                f"{inert_markdown(_status_text(queue.status(row)))}"
            )
            if kind == "ok":
                st.markdown(inert_markdown(clip_text(text or "")[0]))
            elif kind == "missing":
                st.warning("Missing: the store no longer has this memory. It can be labelled not relevant or skipped.")
            else:
                show_error(f"Could not look this memory up: {text}")
            for suggestion in suggestions.get(row.memory_id, []):
                st.caption(
                    f"Suggested by {code_span(suggestion.source)}: grade **{suggestion.grade:d}** "
                    f"({GRADES[suggestion.grade]}), {inert_markdown(clip_text(suggestion.reason, 300)[0])}"
                    + inert_markdown(label_judge_trust.aligned_mark(suggestion, people.get(row.memory_id, set())))
                )
    kind = texts.get(item.memory_id, ("error", None))[0]
    missing = kind == "missing"
    cols = st.columns(5)
    common = (db, session, item, reviewer)
    cols[0].button(
        "Relevant", key="label_relevant", shortcut=SHORTCUTS["relevant"], type="primary",
        disabled=kind != "ok", on_click=_act, args=(*common, "relevant", choice.fingerprint, missing),
    )
    cols[1].button(
        "Not relevant", key="label_not_relevant", shortcut=SHORTCUTS["not_relevant"],
        disabled=kind == "error", on_click=_act, args=(*common, "not_relevant", choice.fingerprint, missing),
    )
    cols[2].button(
        "Skip", key="label_skip", shortcut=SHORTCUTS["skip"],
        on_click=_act, args=(*common, "skip", choice.fingerprint, missing),
    )
    cols[3].button(
        "Undo", key="label_undo", shortcut=SHORTCUTS["undo"], disabled=not stack,
        on_click=_undo, args=(db, session, items_by_key, choice.fingerprint),
    )
    # The first judge's suggestion (sources sorted), read as relevant at grade 2 or more.
    offered = suggestions.get(item.memory_id, [])
    accepted = (RELEVANT if offered[0].relevant else NOT_RELEVANT) if offered else None
    if offered and not (offered[0].source in trusts and trusts[offered[0].source].accept_allowed):
        accepted = None  # a judge not yet shown to agree with people gives hints only
    cols[4].button(
        "Accept suggestion", key="label_accept_suggestion", shortcut=SHORTCUTS["accept"],
        disabled=accepted is None or (accepted == RELEVANT and kind != "ok") or kind == "error",
        on_click=_act, args=(*common, accepted, choice.fingerprint, missing),
        help="Label this row as the judge suggests (grade 2 or 3: relevant). It is saved as your label. "
        "On only once the judge's agreement with people passes the bar shown above.",
    )
    st.caption("Keys: 1 relevant · 2 not relevant · 3 skip · U undo · A accept the suggestion")
