"""The Browse page's pieces: a user's memories page by page, and the check "is the
memory I expected stored at all?". The store is read only when the store, user,
page or checked text changes; filtering a page never reads it again."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from connectors.base import ConnectorError, Memory, ScoresPerResultSet, SupportsHistory, SupportsNeighbours
from dashboard.browse import (
    Scan,
    find_text_matches,
    history_matches,
    history_rows,
    nearest_by_embedding,
    scan_memories,
    stored_verdict,
)
from dashboard.display import MISSING_CELL, SCORE_FORMAT, SHOWN_DECIMALS, TABLE_TEXT_CHARS, clip_text, hits_frame, inert_markdown
from dashboard.logs.read_log import logged_query
from dashboard.ui.widgets import session
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.sidebar import StoreChoice, store_url_params

PAGE_SIZES = (25, 50, 100, 200)
NEAREST_K = 5


def _score_columns(*names: str) -> dict[str, Any]:
    """Number columns shown with the project's score decimals, wide enough for them
    (auto-sized in a half-width table, 0.587 was cut to "0.5")."""
    return {name: st.column_config.NumberColumn(name, format=SCORE_FORMAT, width="small") for name in names}

def _count_call() -> None:
    st.session_state["browse_store_calls"] = st.session_state.get("browse_store_calls", 0) + 1


def memories_frame(memories: list[Memory]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "memory id": m.memory_id,
                "text": clip_text(m.text, TABLE_TEXT_CHARS)[0],
                "created at": m.created_at.isoformat(timespec="seconds") if m.created_at else None,
                "user": m.user_id,
                "metadata": json.dumps(m.metadata, default=str, sort_keys=True)[:200] if m.metadata else "",
            }
            for m in memories
        ],
        columns=["memory id", "text", "created at", "user", "metadata"],
    )


# ------------------------------------------------------------------ listing


def _listing(choice: StoreChoice, user: str | None, size: int, page: int) -> tuple[list[Memory] | None, str | None]:
    state = st.session_state
    key = (choice.fingerprint, user, size, page)
    if state.get("browse_listing_key") != key:
        state["browse_listing"], state["browse_listing_error"] = None, None
        with st.spinner("Reading the store…"):
            try:
                _count_call()
                state["browse_listing"] = choice.connected.list(user_id=user, limit=size, offset=(page - 1) * size)
            except ConnectorError as exc:
                state["browse_listing_error"] = f"{type(exc).__name__}: {exc}"
        state["browse_listing_key"] = key
    return state.get("browse_listing"), state.get("browse_listing_error")


MAX_USER_CHARS = 200


def restore_user_from_url() -> None:
    """Once per browser session, the user a link names (``?user=``), as Inspect takes
    it: a link to Browse opens on that user's memories (an unknown one is said by the
    sidebar's user picker)."""
    if not session.first_run("browse_user_link"):
        return
    linked = st.query_params.get("user")
    if linked:
        st.session_state["user"] = linked[:MAX_USER_CHARS]


def sync_url(choice: StoreChoice, user: str | None) -> None:
    """The address bar names the user (and a store that is not the default), so a copied link opens on them."""
    session.sync_url({**({"user": user} if user else {}), **store_url_params(choice)})


def show_listing(choice: StoreChoice, user: str | None) -> None:
    st.subheader(f"Memories of {inert_markdown(user)}" if user else "Memories")
    cols = st.columns([1, 1, 3])
    size = cols[0].selectbox("Per page", PAGE_SIZES, key="browse_page_size")
    page = int(cols[1].number_input("Page", min_value=1, step=1, key="browse_page"))
    needle = cols[2].text_input("Filter this page", key="browse_filter", placeholder="words in the text or id")
    memories, error = _listing(choice, user, int(size), page)
    if error:
        show_error(f"The store could not list memories: {error}")
        return
    if not memories:
        st.info("No memories on this page." if page > 1 else "This store holds no memories for this user.")
        return
    shown = memories
    if needle.strip():
        wanted = needle.strip().casefold()
        shown = [m for m in memories if wanted in m.text.casefold() or wanted in m.memory_id.casefold()]
    first = (page - 1) * int(size) + 1
    st.caption(
        f"Memories {first:,}–{first + len(memories) - 1:,}"
        + (f"; {len(shown):,} match the filter." if needle.strip() else ".")
    )
    st.dataframe(
        memories_frame(shown),
        hide_index=True,
        width="stretch",
        column_config={"text": st.column_config.TextColumn("text", width="large")},
        placeholder=MISSING_CELL,
        key="browse_table",
    )


# ------------------------------------------------------------------ the check


def _check(choice: StoreChoice, user: str | None, expected: str) -> dict[str, Any]:
    state = st.session_state
    key = (choice.fingerprint, user, expected)
    if state.get("browse_check_key") != key:
        outcome: dict[str, Any] = {"error": None}
        with st.spinner("Reading every memory of this user and searching the store…"):
            try:
                _count_call()
                scan: Scan = scan_memories(lambda limit, offset: choice.connected.list(user_id=user, limit=limit, offset=offset))
                _count_call()
                nearest = logged_query(
                    choice.connected, expected, user_id=user, k=NEAREST_K, store_fingerprint=choice.fingerprint, source="browse"
                )
                neighbours = None
                if isinstance(choice.store, SupportsNeighbours):
                    _count_call()
                    neighbours = choice.store.neighbours(expected, user_id=user, k=NEAREST_K)
                per_result_set = isinstance(choice.store, ScoresPerResultSet) and choice.store.scores_per_result_set
                outcome.update(
                    scan=scan,
                    matches=find_text_matches(scan.memories, expected),
                    nearest=nearest,
                    neighbours=neighbours,
                    neighbour=nearest_by_embedding(neighbours, nearest, per_result_set=per_result_set),
                )
            except ConnectorError as exc:
                outcome["error"] = f"{type(exc).__name__}: {exc}"
        state["browse_check"], state["browse_check_key"] = outcome, key
    return state["browse_check"]


def show_expected_check(choice: StoreChoice, user: str | None) -> None:
    st.subheader("Is the memory I expected stored at all?")
    st.caption(
        "A miss is either a ranking problem (stored, but scored low or under the floor) or a "
        "storage problem (never stored, or stored in other words). Type the memory you expected."
    )
    with st.form("browse_check_form"):
        st.text_input("Expected memory", key="browse_expected", placeholder="Prefers light UI theme")
        st.form_submit_button("Check", type="primary")
    expected = (st.session_state.get("browse_expected") or "").strip()
    if not expected:
        return
    outcome = _check(choice, user, expected)
    if outcome["error"]:
        show_error(f"The store could not answer: {outcome['error']}")
        return
    scan: Scan = outcome["scan"]
    nearest = outcome["nearest"]
    verdict = stored_verdict(
        expected,
        outcome["matches"],
        nearest.hits,
        scanned=len(scan.memories),
        complete=scan.complete,
        user_id=user,
        neighbour=outcome["neighbour"],
    )
    # the verdict quotes memory ids and text from the store
    message = verdict.message
    if verdict.status == "stored":
        st.success(inert_markdown(message))
    elif verdict.status == "not_found":
        show_error(message)

    else:  # reworded, related
        st.warning(inert_markdown(message))
    if verdict.status != "stored" and isinstance(choice.store, SupportsHistory):
        show_rewrites(choice, expected)
    # One above the other, full width: side by side, each half was too narrow for its scores.
    st.markdown("**Text matches**")
    if outcome["matches"]:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "match": m.title,
                        "memory id": m.memory.memory_id,
                        "text": clip_text(m.memory.text, TABLE_TEXT_CHARS)[0],
                        "similarity": round(m.similarity, SHOWN_DECIMALS),
                    }
                    for m in outcome["matches"]
                ]
            ),
            hide_index=True,
            width="stretch",
            column_config=_score_columns("similarity"),
            placeholder=MISSING_CELL,
            key="browse_matches_table",
        )
    else:
        st.caption(f"None among {len(scan.memories):,} memories.")
    if outcome["neighbours"]:
        st.markdown("**Nearest by embedding** (cosine similarity of the store's own embeddings)")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "memory id": n.memory_id,
                        "text": clip_text(n.text, TABLE_TEXT_CHARS)[0],
                        "cosine": round(n.similarity, SHOWN_DECIMALS),
                    }
                    for n in outcome["neighbours"]
                ]
            ),
            hide_index=True,
            width="stretch",
            column_config=_score_columns("cosine"),
            placeholder=MISSING_CELL,
            key="browse_neighbours_table",
        )
        st.markdown("**The store's own search for this text** (its full score)")
    else:
        st.markdown("**Nearest by embedding** (the store's own search for this text)")
    for note in nearest.notes:
        st.caption(inert_markdown(note))
    if nearest.raw_score_kind:
        st.caption(f"The store returns {inert_markdown(nearest.raw_score_kind)}; scores are normalised so higher is better.")
    if nearest.hits:
        st.dataframe(
            hits_frame(nearest.hits),
            hide_index=True,
            width="stretch",
            column_config=_score_columns("score", "raw score"),
            placeholder=MISSING_CELL,
            key="browse_nearest_table",
        )
    else:
        st.caption("The store returned nothing for this text.")


# ------------------------------------------------------------------ write history


def _history(choice: StoreChoice, what: str, read) -> tuple[Any, str | None]:
    """Read Mem0's history once per (store, question); reruns reuse it."""
    state = st.session_state
    key = (choice.fingerprint, what)
    if state.get("browse_history_key") != key:
        try:
            _count_call()
            state["browse_history"], state["browse_history_error"] = read(), None
        except ConnectorError as exc:
            state["browse_history"], state["browse_history_error"] = None, f"{type(exc).__name__}: {exc}"
        state["browse_history_key"] = key
    return state["browse_history"], state["browse_history_error"]


def show_rewrites(choice: StoreChoice, expected: str) -> None:
    """Where an expected memory went: the UPDATE / DELETE events whose old text is close."""
    store = choice.store
    assert isinstance(store, SupportsHistory)
    events, error = _history(choice, f"rewrites:{expected}", store.rewrites)
    if error:
        show_error(f"Mem0's history could not be read: {error}")
        return
    matches = history_matches(events or [], expected)
    if not matches:
        st.caption("Mem0's write history holds no update or deletion of a memory like it.")
        return
    st.markdown("**What Mem0 did to it** (its write history; the history has no user id, so any user's)")
    for match in matches:
        st.warning(inert_markdown(match.message))


def show_history(choice: StoreChoice) -> None:
    """One memory's writes as Mem0 recorded them: ADD, UPDATE, DELETE, old and new text."""
    store = choice.store
    if not isinstance(store, SupportsHistory):
        return
    st.subheader("What Mem0 did to a memory")
    st.caption("Mem0 records every write: ADD, UPDATE (old and new text) and DELETE. Paste a memory id.")
    memory_id = st.text_input("Memory id", key="browse_history_id").strip()
    if not memory_id:
        return
    events, error = _history(choice, f"memory:{memory_id}", lambda: store.history(memory_id))
    if error:
        show_error(f"Mem0's history could not be read: {error}")
        return
    if not events:
        st.info(f"Mem0 recorded no write for {inert_markdown(memory_id)}.")
        return
    st.dataframe(
        pd.DataFrame(history_rows(events)), hide_index=True, width="stretch", placeholder=MISSING_CELL, key="browse_history_table"
    )
