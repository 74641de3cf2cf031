"""The Inspect page's pieces. Each reads session state or draws one part; the store
is queried in exactly one place (`current_result`), and only when the query, user,
k or store changes."""

from __future__ import annotations

import math

import streamlit as st

from connectors.base import ConnectorError, Hit, QueryResult
from connectors.embedding import model_loader as embedding
from connectors.registry import REGISTRY
from dashboard.charts.hits import mark_rule, move_floor, score_breakdown_figure
from dashboard.database.model import message_id
from dashboard.display import (
    MISSING_CELL,
    SCORE_FORMAT,
    bounded_json,
    clip_text,
    hits_frame,
    hits_markdown_table,
    inert_markdown,
)
from dashboard.floor import PromptBlock, default_floor, floor_text
from dashboard.floor_config import FloorConfig
from dashboard.hit_decisions import HitDecisions, applies_text, none_kept_text, rule_line
from dashboard.logs import read_log as readlog
from dashboard.ui.pages import inspect_clock
from dashboard.ui.widgets import held_controls, session
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.floor_file import uploaded_floor_file
from dashboard.ui.widgets.sidebar import StoreChoice, store_url_params

MAX_QUERY_CHARS = 2_000
MAX_USER_CHARS = 200
MAX_TABLE_ROWS = 1_000
MAX_CHART_BARS = 50
MAX_LABEL_ROWS = 200
MAX_NOTES = 20
MAX_PROMPT_CHARS = 20_000
MAX_RAW_ITEMS = 100


# ------------------------------------------------------------------ URL state


def _quoted(value: str) -> str:
    """A value from the link, as inert Markdown and cut short: a link is anyone's text."""
    return inert_markdown(repr(clip_text(value, 40)[0]))


def restore_from_url() -> None:
    """Once per browser session, take query, user, k and floor from the URL so a
    shared link reproduces what the reviewer saw; a bad value falls back to the
    default, and the page says which part of the link it could not use."""
    state = st.session_state
    # The page stops before drawing the floor slider while a store cannot be opened
    # (its settings not filled in yet), and Streamlit drops a widget's value on a run
    # that does not draw it: the slider came back at 0.00, keeping every hit. Written
    # back on every run, the one value stays (the session's copy when it was dropped).
    state["floor"] = state.get("floor", current_floor())
    if state.get("_url_restored"):
        held_controls.release()  # only the session's first run holds the rest back
        return
    state["_url_restored"] = True
    params = st.query_params
    if params.get("query"):
        held_controls.hold()  # a shared link opens with its result: see ask_for_the_rest
    state.setdefault("k", 5)
    state.setdefault("query", "")
    notes: list[str] = []
    query = params.get("query")
    if query:
        state["query"] = query[:MAX_QUERY_CHARS]
        if len(query) > MAX_QUERY_CHARS:
            notes.append(f"The query in the link was longer than {MAX_QUERY_CHARS} characters and was cut.")
    if params.get("user"):
        state["user"] = params["user"][:MAX_USER_CHARS]
        if len(params["user"]) > MAX_USER_CHARS:
            notes.append(f"The user in the link was longer than {MAX_USER_CHARS} characters and was cut.")
    if "k" in params:
        raw = params["k"]
        k = int(raw) if raw.isascii() and raw.strip().lstrip("+-").isdigit() and len(raw) < 10 else None
        if k is not None and 1 <= k <= 50:
            state["k"] = k
        else:
            notes.append(f"The link's k {_quoted(raw)} is not a whole number from 1 to 50; using {state['k']}.")
    if "floor" in params:
        raw = params["floor"]
        try:
            floor = float(raw)
        except ValueError:
            floor = math.nan
        if 0.0 <= floor <= 1.0:  # False for NaN as well; kept at full precision
            session.set_widget("floor", floor)
        else:
            notes.append(
                f"The link's floor {_quoted(raw)} is not a number from 0 to 1; using {current_floor():.2f}."
            )
    inspect_clock.restore(params.to_dict(), notes)
    session.remember("url_warnings", notes)


def current_floor() -> float:
    """Inspect's floor: the one value the slider, the link and Calibrate read
    (ui/widgets/session.py keeps it across pages and runs that do not draw the slider)."""
    return float(session.value("floor", default_floor()))


def floor_slider() -> float:
    """The floor slider, seeded from the session's one value and keeping it."""
    return float(session.widget(
        held_controls.drawn(st.slider), "floor", default_floor(),
        "Score floor", 0.0, 1.0, step=0.01, help="Hits scoring under the floor are dropped.",
    ))


def floor_file(user: str | None) -> FloorConfig | None:
    """The sidebar's "Floor file" (widget key ``inspect_floor_file``): a new file sets
    the slider to its floor for this user once (the floor the agent would apply; the
    slider moves it after). None without a file, and on a shared link's first run
    (a link carries no file)."""
    if holding_the_rest():
        return None
    config, new = uploaded_floor_file("inspect_floor_file", st.sidebar)
    if config is not None and new:
        floor, _ = config.floor_for(user_id=user)
        session.set_widget("floor", min(max(floor, 0.0), 1.0))
    return config


def show_rule(config: FloorConfig, floor: float) -> None:
    """Which rule the floor file applies, and what the slider is under it."""
    st.info(inert_markdown(applies_text(config.rule, floor, f"The floor file {config.source or ''}".rstrip())))


def sync_url(choice: StoreChoice, user: str | None, k: int, floor: float) -> None:
    """The address bar reads the page's query, user, k and floor, and the store and
    its settings when they are not the server's defaults (see ui/widgets/sidebar.py)."""
    query = st.session_state.get("query", "")
    wanted = {"query": query, "user": user or "", "k": str(k), "floor": floor_text(floor), **inspect_clock.url_params()}
    # A store setting may be empty on purpose (an empty path: the demo data).
    session.sync_url({**{key: value for key, value in wanted.items() if value}, **store_url_params(choice)})
    for warning in session.notes_to_say("url_warnings", again_next_run=holding_the_rest()):
        st.warning(inert_markdown(warning))


# ------------------------------------------------------------------ sidebar bits


def show_embedding_path(choice: StoreChoice) -> None:
    """Say how this store's queries are embedded (ONNX without torch, or the torch
    fallback and why), once the model is open; a store that embeds elsewhere says nothing."""
    spec = REGISTRY.get(choice.name)
    if spec is None or not spec.local_model or choice.store is None:
        return
    model = getattr(choice.store, "model", None)  # EmbeddedStore, Qdrant and Chroma carry it
    if description := embedding.backend_description(model):
        st.caption(inert_markdown(description))


# ------------------------------------------------------------------ the query


def current_result(choice: StoreChoice, user: str | None, k: int) -> QueryResult | None:
    """The result for the submitted query; queries the store only when the query,
    user, k or store differs from the last run. A failure is remembered the same
    way, so a floor move does not hammer a failing store; Retry clears it."""
    state = st.session_state
    query = (state.get("query") or "").strip()
    if not query:
        st.info("Type a message and press Search.")
        return None
    key = (choice.fingerprint, user, query, k, inspect_clock.current())
    if state.get("result_key") != key:
        state["result"], state["result_error"] = None, None
        # The id labels, the re-rank export and the label lookups use for this query:
        # computed once here, from the same query, user and store as the result.
        state["result_message_id"] = message_id(query, user, choice.fingerprint)
        with st.spinner("Querying the store (the first query also loads the embedding model)…"):
            try:
                state["store_calls"] = state.get("store_calls", 0) + 1
                state["result"] = inspect_clock.as_of_the_clock(choice, readlog.logged_query(
                    inspect_clock.store_at(choice), query, user_id=user, k=k, store_fingerprint=choice.fingerprint,
                    source="inspect",
                ))
            except ConnectorError as exc:
                state["result_error"] = f"{type(exc).__name__}: {exc}"
        state["result_key"] = key
    if state.get("result_error"):
        show_error(f"The store could not answer: {state['result_error']}")
        st.button("Retry", key="retry_query", on_click=lambda: state.pop("result_key", None))
        return None
    return state["result"]


def current_message_id() -> str:
    """The message id of the result `current_result` returned (see there)."""
    return st.session_state["result_message_id"]


# ------------------------------------------------------------------ results


def show_notes(result: QueryResult) -> None:
    # A store can send one note per result; 100,000 warning boxes would hang the tab.
    for note in result.notes[:MAX_NOTES]:
        st.warning(inert_markdown(note))
    if len(result.notes) > MAX_NOTES:
        st.warning(f"… and {len(result.notes) - MAX_NOTES:,} more notes from the store, not shown.")
    if not result.score_kind.comparable_to_floor:
        st.warning(
            f"This store's scores are {inert_markdown(result.score_kind.value)}s, not similarities: "
            "they order the results but must not be compared with a floor."
        )
    if result.raw_score_kind:
        st.info(f"The store returns {inert_markdown(result.raw_score_kind)}; scores here are normalised so higher is better.")


def show_summary(
    result: QueryResult, kept: list[Hit], dropped: list[Hit], floor: float, decided: HitDecisions | None = None
) -> None:
    cols = st.columns(4)
    cols[0].metric("Returned", len(result.hits))
    cols[1].metric("Kept", len(kept))
    cols[2].metric("Dropped", len(dropped))
    cols[3].metric("Latency", f"{result.latency_ms:.0f} ms" if result.latency_ms is not None else "n/a")
    if result.hits and not kept:
        # the rule's reason names the floor file's rule and its numbers: drawn inert, as outside text
        st.caption(inert_markdown(none_kept_text(decided)) if decided is not None else f"Every hit scores under the floor {floor_text(floor)}.")


NOT_NUMERIC = ("memory id", "status", "text")


def show_hits_table(result: QueryResult, kept: list[Hit], decided: HitDecisions | None = None) -> None:
    hits = result.hits[:MAX_TABLE_ROWS]
    if len(result.hits) > MAX_TABLE_ROWS:
        st.caption(f"Showing the first {MAX_TABLE_ROWS:,} of {len(result.hits):,} results.")
    if not hits:
        st.info("The store returned no memories for this query.")
        return
    kept_ids = {h.memory_id for h in kept}
    if holding_the_rest():
        # A shared link's first view: the same rows as Markdown, which needs no code
        # the page has not loaded; the interactive table replaces it on the next run
        # (see ask_for_the_rest).
        st.markdown(hits_markdown_table(hits, kept_ids))
        return
    # Only the status column depends on the floor: the rest is built once per result.
    memo = st.session_state.get("_table_memo")
    if memo is None or memo[0] is not result:
        memo = (result, hits_frame(hits, set(), breakdown=True))
        st.session_state["_table_memo"] = memo
    if decided is not None:
        # a floor file applied: each hit's decision with its reason ("kept: 0.42 at or above ...")
        status = [said.reason for said in decided.decisions[: len(hits)]]
    else:
        status = ["kept" if h.memory_id in kept_ids else "dropped" for h in hits]
    frame = memo[1].assign(status=status)
    # Status next to the id: at the end, behind the breakdown columns, it sat off
    # screen on a laptop-wide window and a reviewer had to scroll to see it.
    leading = ["rank", "memory id", "status"]
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        column_order=leading + [c for c in frame.columns if c not in leading],
        column_config={
            # Components like recency come out as 1e-12 for old memories: three
            # decimals say "about zero" instead of a wall of digits. Every number
            # column is "small" and the text "medium", so the breakdown (importance,
            # usage) fits a laptop-wide window instead of sitting off screen.
            **{
                c: st.column_config.NumberColumn(c, format=SCORE_FORMAT, width="small")
                for c in frame.columns
                if c not in NOT_NUMERIC
            },
            "rank": st.column_config.NumberColumn("rank", format="%d", width="small"),
            "status": st.column_config.TextColumn("status", width="large" if decided is not None else "small"),
            "score": st.column_config.ProgressColumn("score", min_value=0.0, max_value=1.0, format=SCORE_FORMAT, width="small"),
            "text": st.column_config.TextColumn("text", width="medium"),
        },
        placeholder=MISSING_CELL,
    )


# The browser draws an element only once it has loaded and evaluated the code for its
# kind, and that work blocks the page: the Plotly chart's code takes about 1.2 s, the
# code view's (st.code, the prompt block) about 0.5 s, and every other kind of element
# on the page adds its own. On a shared link's first run the result came out together
# with all of them, 2 s after the run ended. So that run draws the result (the summary
# and the table) only, without the controls (ui/widgets/held_controls.py); this
# small component waits until the browser has painted them and then asks for the rest
# of the page (the controls, the chart, the prompt block, feedback, labels, the re-rank
# panel), which a second run draws (benchmarks/cold_start.py and benchmarks/RESULTS.md
# have the figures).
_WHEN_RESULT_DRAWN_JS = """
export default function ({ data, setTriggerValue }) {
  let sent = false;
  const drawn = () =>
    document.querySelector('[data-testid="stMetricValue"]') &&
    (!data.table || document.querySelector('[data-testid="stMarkdownContainer"] table'));
  const send = () => {
    if (sent) return;
    sent = true;
    observer.disconnect();
    clearTimeout(timer);
    // After the frame that shows the result is painted.
    requestAnimationFrame(() => setTimeout(() => setTriggerValue("drawn", true), 0));
  };
  const observer = new MutationObserver(() => drawn() && send());
  const timer = setTimeout(send, 5000); // never hold the rest back for long
  observer.observe(document.body, { childList: true, subtree: true });
  if (drawn()) send();
  return () => {
    observer.disconnect();
    clearTimeout(timer);
  };
}
"""


def holding_the_rest() -> bool:
    """True on a shared link's first run: the page draws the result and waits."""
    return held_controls.holding()


def show_the_rest_now() -> None:
    """A link's first run that has no result to show first (the store did not open,
    the query failed): the page is drawn whole at once, controls included, by a rerun."""
    if held_controls.holding():
        held_controls.release()
        st.rerun()


def ask_for_the_rest(result: QueryResult) -> None:
    """The component that reruns the page once the browser has painted the result
    (its metrics, and its table when there are hits)."""
    st.caption("Loading the score chart, the prompt block and the labels…")
    # Declared where it is used, not at import: the declaration goes to the running
    # server's registry, and a module imported under an earlier one (a second AppTest,
    # on Streamlit 1.58) left it unregistered. The same definition again is silent.
    when_result_drawn = st.components.v2.component("memlens_result_drawn", js=_WHEN_RESULT_DRAWN_JS)
    when_result_drawn(
        key="result_drawn",
        data={"table": bool(result.hits)},
        on_drawn_change=held_controls.release,
    )


def show_chart(result: QueryResult, floor: float, kept: list[Hit], decided: HitDecisions | None = None) -> None:
    if not result.hits:
        return
    hits = result.hits[:MAX_CHART_BARS]
    kept_ids = {h.memory_id for h in kept}
    # The bars depend on the result only: built once per result, then only the
    # floor line moves (see charts.move_floor).
    memo = st.session_state.get("_chart_memo")
    if memo is None or memo[0] is not result:
        memo = (result, score_breakdown_figure(hits, floor, kept_ids))
        st.session_state["_chart_memo"] = memo
    if decided is not None and decided.rule is not None:
        cut, text = rule_line(decided)
        figure = mark_rule(memo[1], hits, cut, kept_ids, text)
    else:
        figure = move_floor(memo[1], hits, floor, kept_ids)
    st.plotly_chart(figure, width="stretch", key="breakdown_chart")


def show_prompt_block(block: PromptBlock) -> None:
    st.subheader("Prompt block")
    st.caption(inert_markdown(block.explanation))
    text, clipped = clip_text(block.text, MAX_PROMPT_CHARS)
    if clipped:
        st.caption(
            f"Prompt block cut to {MAX_PROMPT_CHARS:,} of {len(block.text):,} characters for display; "
            "the prompt would get all of it."
        )
    st.code(text, language=None, wrap_lines=True)


def show_raw_response(result: QueryResult) -> None:
    with st.expander("Raw response"):
        raw, cut = bounded_json(result.raw if result.raw is not None else {}, max_items=MAX_RAW_ITEMS)
        if cut:
            st.caption(
                f"Lists longer than {MAX_RAW_ITEMS} items and texts longer than 2,000 characters "
                "are cut here, so a big response does not hang the page."
            )
        st.json(raw, expanded=False)
