"""The score space beside the hits table: how the store's raw value (the *raw score*
column) became the score, and the floor as a rule on the raw value, so a team that
applies the floor in its own code compares the right number (dashboard/score_space.py)."""

from __future__ import annotations

import streamlit as st

from connectors.base import QueryResult
from dashboard import score_space
from dashboard.display import inert_markdown


def show_score_space(result: QueryResult, floor: float) -> None:
    """One caption for a store whose score is a conversion of its raw value."""
    how = score_space.formula((hit.raw_score, hit.score) for hit in result.hits)
    if how is None or how == score_space.AS_SENT:
        if result.raw_score_kind and result.hits:
            st.caption("The raw score column is the store's own value; memlens cannot tell the formula from it.")
        return
    st.caption(
        f"Raw score column: the store's {inert_markdown(result.raw_score_kind or 'raw value')} d. "
        f"{inert_markdown(str(score_space.raw_floor_rule(how, floor)))}."
    )
