"""The Compare page's pieces: a store picker per column, both queries (run only
when the query, user, k or either store changes), and the side-by-side view.
Moving a floor slider or switching how memories are matched never re-queries."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from connectors.base import ConnectorError, QueryResult
from dashboard.display import MISSING_CELL, SCORE_FORMAT, clip_text, inert_markdown
from dashboard.floor import default_floor
from dashboard.logs.read_log import logged_query
from dashboard.store_compare import ABSENT, KEPT, MATCH_BY, StoreComparison
from dashboard.ui.widgets.errors import store_error_text
from dashboard.ui.widgets.sidebar import StoreChoice, choose_store, warm_model

TABLE_TEXT_CHARS = 200


def side_picker(side: str, container) -> StoreChoice:
    """Column `side`'s store, its settings (keys prefixed compare_<side>_) and its floor."""
    floor_key = f"compare_{side}_floor"
    st.session_state.setdefault(floor_key, default_floor())
    with container:
        choice = choose_store(
            container,
            key=f"compare_{side}_store",
            label=f"Store {side.upper()}",
            settings_label=f"Settings {side.upper()}",
            key_prefix=f"compare_{side}_",
        )
        st.slider(f"Floor {side.upper()}", 0.0, 1.0, step=0.01, key=floor_key)
        warm_model(choice.name)
    return choice


def current_results(
    choices: dict[str, StoreChoice], user: str | None, k: int
) -> dict[str, QueryResult | str] | None:
    """Each side's result (or its error message) for the submitted query."""
    state = st.session_state
    query = (state.get("compare_query") or "").strip()
    if not query:
        st.info("Type a message and press Compare.")
        return None
    key = (choices["a"].fingerprint, choices["b"].fingerprint, user, query, k)
    if state.get("compare_results_key") != key:
        results: dict[str, QueryResult | str] = {}
        with st.spinner("Querying both stores…"):
            for side, choice in choices.items():
                if choice.error:
                    results[side] = store_error_text(choice.error)
                    continue
                try:
                    state["compare_store_calls"] = state.get("compare_store_calls", 0) + 1
                    results[side] = logged_query(
                        choice.connected, query, user_id=user, k=k, store_fingerprint=choice.fingerprint, source="compare"
                    )
                except ConnectorError as exc:
                    results[side] = f"{type(exc).__name__}: {exc}"
        state["compare_results"], state["compare_results_key"] = results, key
    return state["compare_results"]


def match_by_picker(choices: dict[str, StoreChoice]) -> str:
    """Match by id for two configurations of one store, by text across stores."""
    state = st.session_state
    same_store = choices["a"].name == choices["b"].name
    if state.get("compare_match_by") not in MATCH_BY:
        state["compare_match_by"] = "id" if same_store else "text"
    return st.sidebar.radio(
        "Match memories by",
        MATCH_BY,
        key="compare_match_by",
        format_func=lambda v: {"id": "memory id", "text": "text"}[v],
        help="Two stores give the same memory different ids: match those by text.",
    )


def show_side_notes(side: str, result: QueryResult, container) -> None:
    with container:
        for note in result.notes:
            st.caption(f"{inert_markdown(side.upper())}: {inert_markdown(note)}")
        if result.raw_score_kind:
            st.info(
                f"{inert_markdown(side.upper())} returns {inert_markdown(result.raw_score_kind)}; "
                "its scores are normalised so higher is better."
            )


def _cell(hit, kind: str) -> Any:
    if hit is None:
        return None
    return {"rank": hit.rank, "score": hit.score, "raw": hit.raw_score}[kind]


def comparison_frame(comparison: StoreComparison) -> pd.DataFrame:
    """One row per memory; one id column when matching by id, each side's id otherwise."""
    rows = []
    for row in comparison.rows:
        ids = (
            {"memory id": row.key}
            if comparison.match_by == "id"
            else {"A id": row.memory_ids[0], "B id": row.memory_ids[1]}
        )
        rows.append(
            {
                "memory": clip_text(row.text, TABLE_TEXT_CHARS)[0],
                **ids,
                "A rank": _cell(row.a, "rank"),
                "A score": _cell(row.a, "score"),
                "A": row.status("a"),
                "B rank": _cell(row.b, "rank"),
                "B score": _cell(row.b, "score"),
                "B": row.status("b"),
                "rank change (B - A)": row.rank_change,
                "verdict": row.verdict,
            }
        )
    return pd.DataFrame(rows)


def show_comparison(comparison: StoreComparison, floors: dict[str, float]) -> None:
    cols = st.columns(4)
    cols[0].metric("Returned by both", comparison.returned_by_both)
    cols[1].metric("Kept by both", comparison.kept_by_both)
    cols[2].metric("Kept by A only", len(comparison.kept_only_a))
    cols[3].metric("Kept by B only", len(comparison.kept_only_b))
    for note in comparison.notes:
        st.warning(inert_markdown(note))
    frame = comparison_frame(comparison)
    # The verdict next to the memory, and numbers narrow: at the end, behind eight
    # columns, the verdict sat off screen.
    leading = ["memory", "verdict"]
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        key="compare_table",
        column_order=leading + [c for c in frame.columns if c not in leading],
        column_config={
            "memory": st.column_config.TextColumn("memory", width="medium"),
            **{
                name: st.column_config.NumberColumn(name, format=SCORE_FORMAT, width="small")
                for name in ("A score", "B score")
            },
            **{
                name: st.column_config.NumberColumn(name, format="%d", width="small")
                for name in ("A rank", "B rank", "rank change (B - A)")
            },
            **{name: st.column_config.TextColumn(name, width="small") for name in ("A", "B")},
        },
        placeholder=MISSING_CELL,
    )
    left, right = st.columns(2)
    for side, column in (("a", left), ("b", right)):
        kept = [row for row in comparison.rows if row.status(side) == KEPT]
        column.markdown(f"**{inert_markdown(side.upper())} keeps {len(kept):d} at its floor {floors[side]:.2f}**")
        if kept:
            column.markdown("\n".join(f"- {inert_markdown(clip_text(row.text, 120)[0])}" for row in kept))
        absent = sum(1 for row in comparison.rows if row.status(side) == ABSENT)
        if absent:
            column.caption(
                f"{absent:d} memories returned by the other side are not among {inert_markdown(side.upper())}'s results."
            )
