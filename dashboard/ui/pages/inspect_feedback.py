"""Inspect-page tools that talk back to the store: the rank lookup, and feedback.

Both act only on a click. Feedback is off until the reviewer turns it on, and each
send is reviewed and confirmed on its own, because it changes importance in the
store for every future query. Any store with ``feedback()`` gets it (the embedded
store too). Store faults are shown as messages; only ConnectorError is caught.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from connectors.base import ConnectorError, Hit, QueriesBumpUsage, QueryResult, SupportsFeedback
from connectors.registry import REGISTRY
from dashboard import feedback
from dashboard.display import inert_markdown
from dashboard.logs import read_log as readlog
from dashboard.ranking.rank_lookup import find_rank, lookup_k
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.sidebar import StoreChoice

FEEDBACK_MODES = {
    "floor": "Kept rows → retrieved, dropped rows → ignored",
    "negative": "One row → negative, with a comment",
}


def _context(choice: StoreChoice, user: str | None, result: QueryResult) -> tuple:
    """What a lookup or a feedback plan belongs to: another query makes it stale."""
    return (choice.fingerprint, user, result.query)


def _store_title(choice: StoreChoice) -> str:
    spec = REGISTRY.get(choice.name)
    return spec.title if spec else choice.name


# ------------------------------------------------------------------ rank lookup


def _run_lookup(choice: StoreChoice, user: str | None, result: QueryResult) -> None:
    state = st.session_state
    entry: dict[str, Any] = {"context": _context(choice, user, result), "lookup": None, "error": None}
    try:
        entry["lookup"] = find_rank(
            readlog.LoggedStore(choice.connected, store_fingerprint=choice.fingerprint, source="rank_lookup"),
            result.query,
            state.get("rank_lookup_id", ""),
            user_id=user,
            table_hits=result.hits,
        )
    except ConnectorError as exc:
        entry["error"] = f"{type(exc).__name__}: {exc}"
    state["rank_lookup_calls"] = state.get("rank_lookup_calls", 0) + 1
    state["rank_lookup_result"] = entry


def show_rank_lookup(result: QueryResult, choice: StoreChoice, user: str | None) -> None:
    st.subheader("Where does a memory rank for this query?")
    k, is_limit = lookup_k(choice.connected)
    bumps = isinstance(choice.store, QueriesBumpUsage) and choice.store.queries_bump_usage
    st.caption(
        (f"Asks the store again up to its limit of {k:d}" if is_limit else f"Asks the store again with k={k:d}")
        + " and finds the memory by id; when it is not there, checks whether it is stored at all."
        + (" This query too bumps usage counts in the store." if bumps else "")
    )
    cols = st.columns([4, 1])
    cols[0].text_input("Memory id", key="rank_lookup_id", placeholder="e.g. sam-02", label_visibility="collapsed")
    cols[1].button("Find its rank", key="rank_lookup_go", on_click=_run_lookup, args=(choice, user, result))
    entry = st.session_state.get("rank_lookup_result")
    if not entry or entry["context"] != _context(choice, user, result):
        return
    if entry["error"]:
        show_error(f"The lookup failed: {entry['error']}")
        return
    lookup = entry["lookup"]
    # the message quotes the memory id as it was typed
    if lookup.found:
        st.success(inert_markdown(lookup.message()))
    else:
        st.warning(inert_markdown(lookup.message()))
    if lookup.found and lookup.hit.breakdown:
        st.dataframe(
            pd.DataFrame([{"component": c, "value": v} for c, v in lookup.hit.breakdown.items()]),
            hide_index=True,
            key="rank_lookup_breakdown",
        )


# ------------------------------------------------------------------ feedback


def _current_plan(result: QueryResult, kept: list[Hit], dropped: list[Hit]) -> list[feedback.FeedbackItem]:
    state = st.session_state
    if state.get("feedback_mode", "floor") == "floor":
        return feedback.plan_from_floor(kept, dropped)
    return feedback.plan_negative(state.get("feedback_memory") or "", state.get("feedback_comment") or "")


def _prepare(context: tuple, result: QueryResult, kept: list[Hit], dropped: list[Hit]) -> None:
    state = st.session_state
    state.pop("feedback_error", None)
    try:
        items = _current_plan(result, kept, dropped)
    except ValueError as exc:
        state["feedback_error"] = str(exc)
        state.pop("feedback_pending", None)
        return
    state["feedback_pending"] = {"context": context, "items": items}


def _confirm(context: tuple, choice: StoreChoice, user: str | None) -> None:
    state = st.session_state
    pending = state.pop("feedback_pending", None)
    store = choice.store
    if not pending or pending["context"] != context or not isinstance(store, SupportsFeedback):
        return
    state["feedback_sends"] = state.get("feedback_sends", 0) + 1
    outcomes = feedback.send(store, pending["items"], user_id=user)
    state["feedback_outcomes"] = {"context": context, "outcomes": outcomes}


def show_feedback(result: QueryResult, choice: StoreChoice, user: str | None, kept: list[Hit], dropped: list[Hit]) -> None:
    if not feedback.supports_feedback(choice.store) or not result.hits:
        return
    state = st.session_state
    st.subheader("Send feedback to the store")
    title = _store_title(choice)
    on = st.toggle(
        "Send feedback to the store",
        key="feedback_enabled",
        help="Off by default: feedback changes each memory's importance in the store, for every future query.",
    )
    if not on:
        st.caption(
            f"Off. Feedback would change importance in {inert_markdown(title)}, so it is sent only when you turn it on and confirm."
        )
        return
    context = _context(choice, user, result)
    mode = st.radio(
        "What to send", list(FEEDBACK_MODES), format_func=FEEDBACK_MODES.get, key="feedback_mode", horizontal=True
    )
    if mode == "floor":
        st.caption(f"{len(kept):d} × retrieved (kept under the current floor), {len(dropped):d} × ignored (dropped).")
    else:
        ranks = {h.memory_id: h.rank for h in result.hits}
        st.selectbox("Row", list(ranks), format_func=lambda m: f"#{ranks[m]} {m}", key="feedback_memory")
        st.text_input("Comment (required): what is wrong with this memory here?", key="feedback_comment", max_chars=500)
    st.button("Review before sending", key="feedback_prepare", on_click=_prepare, args=(context, result, kept, dropped))
    if error := state.get("feedback_error"):
        show_error(error)

    pending = state.get("feedback_pending")
    if pending:
        try:
            unchanged = pending["context"] == context and pending["items"] == _current_plan(result, kept, dropped)
        except ValueError:
            unchanged = False
        if not unchanged:
            state.pop("feedback_pending", None)
            st.caption("The plan changed since you reviewed it; review it again before sending.")
        else:
            items = pending["items"]
            st.warning(
                f"Send {len(items):d} signal(s) to {inert_markdown(title)}? "
                "Each changes that memory's importance for every future query."
            )
            st.dataframe(
                pd.DataFrame([{"memory id": i.memory_id, "signal": i.signal, "comment": i.comment or ""} for i in items]),
                hide_index=True,
                key="feedback_plan_table",
            )
            cols = st.columns(2)
            cols[0].button(
                f"Send {len(items)} signal(s)", key="feedback_confirm", type="primary", on_click=_confirm, args=(context, choice, user)
            )
            cols[1].button("Cancel", key="feedback_cancel", on_click=lambda: state.pop("feedback_pending", None))

    sent = state.get("feedback_outcomes")
    if sent and sent["context"] == context:
        outcomes = sent["outcomes"]
        failed = [o for o in outcomes if o.error]
        if failed:
            show_error(f"{len(failed)} of {len(outcomes)} signal(s) failed: {failed[0].error}")
        if len(failed) < len(outcomes):
            st.success(f"Sent {len(outcomes) - len(failed):d} signal(s). Importance before and after:")
        st.dataframe(pd.DataFrame([o.row() for o in outcomes]), hide_index=True, key="feedback_outcomes_table")
        st.caption("The results above are from before the feedback; search again to see the new ranking.")
