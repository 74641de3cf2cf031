"""The score space beside the hits table: how the store's raw value (the *raw score*
column) became the score, and the floor as a rule on the raw value, so a team that
applies the floor in its own code compares the right number. The space is the one the
connector applied (QueryResult.score_space), never read back from the numbers."""

from __future__ import annotations

import streamlit as st

from connectors.base import QueryResult
from connectors.common.score_spaces import AS_SENT, raw_floor_rule
from dashboard.display import inert_markdown


def show_score_space(result: QueryResult, floor: float) -> None:
    """One caption for a store whose score is a conversion of its raw value."""
    space = result.score_space
    if space is None or space.formula == AS_SENT:
        return
    st.caption(
        f"Raw score column: the store's {inert_markdown(result.raw_score_kind or 'raw value')} d. "
        f"{inert_markdown(str(raw_floor_rule(space.formula, floor)))}."
    )
