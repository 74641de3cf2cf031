"""Inspect's clock (``as_of``): a link from a run made at a set time (Compare's
"open on Inspect") ranks the store as it was then, as the run did.

A store that ranks at a clock itself (the embedded store) is opened with it; any
other store's result is filtered after the query (dashboard/clock.py), and the page
says how many hits that removed. The clock stays in the address bar until the
reviewer asks for today's store.
"""

from __future__ import annotations

import json

import streamlit as st

from connectors.base import MemoryStore, QueryResult
from dashboard import clock
from dashboard.display import inert_markdown
from dashboard.ui.widgets import cache
from dashboard.ui.widgets.sidebar import StoreChoice

AS_OF = "inspect_as_of"


def restore(params: dict[str, str], notes: list[str]) -> None:
    """Take the link's clock (once per session, with the rest of the link)."""
    raw = params.get(clock.AS_OF_PARAM)
    if not raw:
        return
    when, why_not = clock.link_clock(raw[:100])
    if when is None:
        notes.append(f"The link's clock (as_of) is not usable: {why_not}; ranking at today's store.")
    st.session_state[AS_OF] = when


def current() -> str | None:
    """The clock the page ranks at, or None (today)."""
    return st.session_state.get(AS_OF)


def url_params() -> dict[str, str]:
    when = current()
    return {clock.AS_OF_PARAM: when} if when else {}


def sidebar(choice: StoreChoice) -> None:
    """Say which clock the page ranks at, with a way back to today's store."""
    when = current()
    if not when:
        return
    how = ("the store ranks at it" if clock.store_takes_clock(choice.name)
           else "memlens removes hits created after it; recency stays the store's own")
    st.sidebar.info(f"Ranked as of {inert_markdown(when)} (from the link): {how}.")
    st.sidebar.button("Rank today's store", key="inspect_as_of_clear", on_click=lambda: st.session_state.pop(AS_OF, None))


def store_at(choice: StoreChoice) -> MemoryStore:
    """The store to query: the chosen one, or, with a clock and a store that takes
    one, the same store opened at the clock (once, in cache.py)."""
    when = current()
    if not when or not clock.store_takes_clock(choice.name):
        return choice.connected
    return cache.open_store(choice.name, json.dumps({**choice.config, "as_of": when}, sort_keys=True, default=str))


def as_of_the_clock(choice: StoreChoice, result: QueryResult) -> QueryResult:
    """The result as of the clock: a store that cannot rank at one is filtered here."""
    when = current()
    if not when or clock.store_takes_clock(choice.name):
        return result
    return clock.filtered_to_clock(result, when)
