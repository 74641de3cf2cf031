"""Inspect's labelling: a relevant / not relevant pair of buttons per result, saved at
once by id, and the reviewer's own labels with their downloads."""

from __future__ import annotations

import streamlit as st

from connectors.base import Hit, QueryResult
from dashboard.database.model import LabelStoreError
from dashboard.display import clip_text, code_span, inert_markdown
from dashboard.labels import export
from dashboard.ui.pages.inspect import MAX_LABEL_ROWS
from dashboard.ui.widgets import cache
from dashboard.ui.widgets import reviewer as reviewer_ui
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.sidebar import StoreChoice


def _row_labels(msg: str, reviewer: str) -> dict[str, str]:
    """This message's labels by memory id, as the rows draw them. Read from the
    label store on a full run and updated by the click callbacks, so a row's own
    rerun needs no database read."""
    return st.session_state.setdefault("_row_labels", {}).setdefault((msg, reviewer), {})


# Session-state flags: "Your labels" was last drawn with no labels; a label was just
# saved while it was, so the row's rerun redraws the whole page.
NO_SESSION_LABELS_DRAWN = "_no_session_labels_drawn"
REDRAW_PAGE = "_redraw_page_after_label"


def _write_label(choice: StoreChoice, msg: str, reviewer, store_text, hit: Hit, value: str) -> None:
    query = st.session_state.get("query", "").strip()
    try:
        cache.app_database().labels.save(
            message_id=msg,
            memory_id=hit.memory_id,
            label=value,
            reviewer=reviewer,
            store=choice.fingerprint,
            rank=hit.rank,
            score=hit.score,
            query_text=query if store_text else None,
            memory_text=hit.text if store_text else None,
        )
        _row_labels(msg, reviewer)[hit.memory_id] = value
    except LabelStoreError as exc:
        # A callback cannot draw where the page wants it: keep the message for the
        # row's rerun, which draws it in that row.
        st.session_state[f"label_error_{hit.memory_id}"] = f"The label for {hit.memory_id} was not saved: {exc}"
        st.session_state.setdefault("label_unsaved", {})[(msg, hit.memory_id)] = value
        return
    st.session_state.get("label_unsaved", {}).pop((msg, hit.memory_id), None)
    if st.session_state.get(NO_SESSION_LABELS_DRAWN):
        # "Your labels" was drawn empty, with no table and no downloads, and a label
        # click reruns only its row: the first label redraws the page once.
        st.session_state[REDRAW_PAGE] = True


def show_labelling(result: QueryResult, msg: str, choice: StoreChoice, reviewer: str | None, store_text: bool) -> None:
    if not result.hits:
        return
    st.subheader("Label the results")
    if reviewer is None:
        # No label goes out under a made-up name: asked once per browser session,
        # here or on the Label page, and the same name on every page after.
        st.info(f"{reviewer_ui.ASK_TEXT} Give your name in the sidebar (**Reviewer**) to label these results.")
        return
    st.caption(f"Labels are saved at once by id as reviewer **{inert_markdown(reviewer)}**.")
    try:
        existing = {row.memory_id: row.label for row in cache.app_database().labels.find(message_id=msg, reviewer=reviewer)}
    except LabelStoreError as exc:
        # A click that failed is reported even though its row cannot be drawn now.
        for hit in result.hits[:MAX_LABEL_ROWS]:
            if error := st.session_state.pop(f"label_error_{hit.memory_id}", None):
                show_error(error)
        show_error(f"Labelling is unavailable: {exc}")
        return
    labels = _row_labels(msg, reviewer)
    labels.clear()
    labels.update(existing)
    for hit in result.hits[:MAX_LABEL_ROWS]:
        _label_row(hit, msg, choice, reviewer, store_text)
    if len(result.hits) > MAX_LABEL_ROWS:
        st.caption(f"Labelling the first {MAX_LABEL_ROWS} of {len(result.hits):,} results.")


@st.fragment
def _label_row(hit: Hit, msg: str, choice: StoreChoice, reviewer: str, store_text: bool) -> None:
    """One result's label row; a click on its buttons reruns this row alone."""
    if st.session_state.pop(REDRAW_PAGE, False):
        st.rerun()
    if error := st.session_state.pop(f"label_error_{hit.memory_id}", None):
        show_error(error)
    text, clipped = clip_text(hit.text)
    cols = st.columns([6, 2, 1.4, 1.6])
    score = f"{hit.score:.3f}" if hit.score is not None else "no score"
    cols[0].markdown(f"**#{hit.rank:d}** {code_span(hit.memory_id)} · {score}  \n{inert_markdown(text)}")
    if clipped:
        cols[0].caption(f"Text cut to {len(text) - 1:,} of {len(hit.text):,} characters.")
    current = _row_labels(msg, reviewer).get(hit.memory_id)
    unsaved = st.session_state.get("label_unsaved", {}).get((msg, hit.memory_id))
    if unsaved:  # the click failed: say so on the row, and the button is there to retry
        cols[1].markdown(f"⚠️ **not saved** ({inert_markdown(unsaved.replace('_', ' '))}): click again")
    elif current == "relevant":
        cols[1].markdown("✅ relevant")
    elif current == "not_relevant":
        cols[1].markdown("❌ not relevant")
    else:
        cols[1].markdown("— unlabelled")
    for col, value, title in ((cols[2], "relevant", "Relevant"), (cols[3], "not_relevant", "Not relevant")):
        col.button(
            title,
            key=f"{value}_{hit.memory_id}",
            type="primary" if current == value else "secondary",
            on_click=_write_label,
            args=(choice, msg, reviewer, store_text, hit, value),
        )


@st.fragment
def show_session_labels(include_text: bool) -> None:
    """The reviewer's labels. A label click reruns only its row, so this table is
    read again on the next full run or when Refresh is pressed; the downloads read
    the label store when clicked, so they always carry every label."""
    reviewer = reviewer_ui.current()
    if reviewer is None:
        return
    heading, refresh = st.columns([5, 1], vertical_alignment="bottom")
    heading.subheader("Your labels")
    refresh.button("Refresh", key="refresh_session_labels", help="Read the labels again (a label click redraws only its row).")
    try:
        labels = cache.app_database().labels.find(reviewer=reviewer)
    except LabelStoreError as exc:
        show_error(f"Cannot read the labels: {exc}")
        return
    st.session_state[NO_SESSION_LABELS_DRAWN] = not labels
    if not labels:
        st.caption("No labels yet.")
        return
    import pandas as pd  # here, not with the module: a shared link's first view needs no pandas

    st.dataframe(
        pd.DataFrame([row.export_row(include_text) for row in labels]), hide_index=True, width="stretch"
    )

    def labels_now():
        return cache.app_database().labels.find(reviewer=reviewer)

    cols = st.columns(2)
    # Callable data: the file is built when the button is clicked, not on every rerun.
    cols[0].download_button(
        "Download JSONL",
        lambda: export.to_jsonl(labels_now(), include_text=include_text),
        file_name="memlens-labels.jsonl",
        mime="application/jsonl",
        key="download_jsonl",
        on_click="ignore",
    )
    cols[1].download_button(
        "Download CSV",
        lambda: export.to_csv(labels_now(), include_text=include_text),
        file_name="memlens-labels.csv",
        mime="text/csv",
        key="download_csv",
        on_click="ignore",
    )
