"""The what-if re-rank panel on the Inspect page, and the re-rank controls the
Quality page shares. Works on the hits already in hand: moving a control never
queries the store."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from connectors.base import QueryResult
from dashboard.display import bounded_json, clip_text, code_span, inert_markdown
from dashboard.ranking.ranking_json import RankingComparison, compare_rankings, parse_ranking_json, validate_ranking
from dashboard.ranking.rerank import (
    DEFAULT_HALF_LIFE_HOURS,
    DEFAULT_RELEVANCE_THRESHOLD,
    DEFAULT_RELEVANCE_WEIGHT,
    DEFAULT_STALENESS_HOURS,
    RerankResult,
    RerankSettings,
    rerank,
)
from dashboard.ranking.review import review_flags
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.llm_ranker_panel import show_llm_ranker

DECAY_MODES = ("half-life", "per hour")
WHY_EXPANDED_ROWS = 10
MAX_WHY_ROWS = 200
MAX_VIOLATIONS_SHOWN = 20
STORE_TEXT_CHARS = 80
# A store may return 100,000 candidates: re-rank them all, draw only this many.
MAX_ROWS_SHOWN = 1_000
MAX_MESSAGE_CHARS = 500
RELEVANCE_SOURCE_TEXT = {
    "semantic": "Relevance is the store's `semantic` component (how well the words match).",
    "score": "Relevance is the store's score: it sends no `semantic` component.",
    "mixed": "Relevance is the `semantic` component where a hit has one, the score where it does not.",
    "none": "The store sent no scores, so nothing can be ranked by relevance.",
}


def _short(message: object) -> str:
    """A check's message cut short. It quotes store ids, which are anyone's text (an
    id holding a URL was drawn as a link): the caller draws it with inert_markdown."""
    return clip_text(str(message), MAX_MESSAGE_CHARS)[0]


def rerank_controls(prefix: str) -> RerankSettings:
    """Weights (one slider: the two sum to 1), decay as a half-life or a rate per
    hour, the relevance threshold and an optional staleness cutoff. Every widget
    is keyed `<prefix>_...` so two pages keep their own settings."""
    state = st.session_state
    defaults = {
        f"{prefix}_relevance_weight": DEFAULT_RELEVANCE_WEIGHT,
        f"{prefix}_decay_mode": DECAY_MODES[0],
        f"{prefix}_half_life_hours": DEFAULT_HALF_LIFE_HOURS,
        f"{prefix}_decay_per_hour": round(math.log(2) / DEFAULT_HALF_LIFE_HOURS, 4),
        f"{prefix}_threshold": DEFAULT_RELEVANCE_THRESHOLD,
        f"{prefix}_staleness_on": False,
        f"{prefix}_staleness_hours": DEFAULT_STALENESS_HOURS,
    }
    for key, value in defaults.items():
        state.setdefault(key, value)
    cols = st.columns(4)
    relevance_weight = cols[0].slider(
        "Relevance weight", 0.0, 1.0, step=0.05, key=f"{prefix}_relevance_weight",
        help="The recency weight is 1 minus this, so the two always sum to 1.",
    )
    # round(): 1 - 0.7 is 0.30000000000000004, which would print badly everywhere.
    recency_weight = round(1.0 - relevance_weight, 10)
    cols[0].caption(f"Recency weight **{recency_weight:.2f}**")
    mode = cols[1].radio("Recency decay", DECAY_MODES, key=f"{prefix}_decay_mode", horizontal=True)
    if mode == "half-life":
        half_life = cols[1].number_input(
            "Half-life (hours)", min_value=0.1, step=12.0, key=f"{prefix}_half_life_hours",
            help="Recency halves every this many hours: exp(-ln 2 × hours / half-life).",
        )
        decay = math.log(2) / float(half_life)
    else:
        decay = float(
            cols[1].number_input(
                "Decay per hour", min_value=0.0, step=0.001, format="%.4f", key=f"{prefix}_decay_per_hour",
                help="recency = exp(-decay × hours since the memory was created)",
            )
        )
    threshold = cols[2].slider(
        "Relevance threshold", 0.0, 1.0, step=0.01, key=f"{prefix}_threshold",
        help="A candidate whose relevance is under this is excluded (composite 0).",
    )
    stale_on = cols[3].checkbox("Staleness cutoff", key=f"{prefix}_staleness_on")
    stale_hours = cols[3].number_input(
        "Stale after (hours)", min_value=1.0, step=24.0, key=f"{prefix}_staleness_hours",
        disabled=not stale_on, help="A candidate older than this is stale (composite 0). 168 h is a week.",
    )
    return RerankSettings(
        relevance_weight=float(relevance_weight),
        recency_weight=recency_weight,
        decay_per_hour=decay,
        relevance_threshold=float(threshold),
        staleness_cutoff_hours=float(stale_hours) if stale_on else None,
    )


def settings_text(settings: RerankSettings) -> str:
    text = (
        f"relevance {settings.relevance_weight:.2f} / recency {settings.recency_weight:.2f}, "
        f"half-life {settings.half_life_hours:.0f} h, threshold {settings.relevance_threshold:.2f}"
    )
    if settings.staleness_cutoff_hours is not None:
        text += f", stale after {settings.staleness_cutoff_hours:g} h"
    return text


def status_text(excluded: bool, stale: bool) -> str:
    if excluded and stale:
        return "🚫 excluded + ⏳ stale"
    if excluded:
        return "🚫 excluded"
    if stale:
        return "⏳ stale"
    return "returned"


def move_text(move: int) -> str:
    if move > 0:
        return f"▲ {move}"
    if move < 0:
        return f"▼ {-move}"
    return "="


def reranked_frame(reranked: RerankResult) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "new rank": e.new_rank,
                "memory id": e.entry_id,
                "store rank": e.store_rank,
                "move": move_text(e.move),
                "relevance": e.relevance_score,
                "recency": e.recency_score,
                "composite": e.composite_score,
                "status": status_text(e.excluded, e.stale),
                "why": e.justification,
            }
            for e in reranked.entries
        ]
    )


def comparison_frame(comparison: RankingComparison) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "memory id": r.entry_id,
                "our rank": r.ours_rank,
                "pasted rank": r.theirs_rank,
                "our composite": r.ours_composite,
                "pasted composite": r.theirs_composite,
                "difference": r.composite_difference,
                "our status": r.ours_status,
                "pasted status": r.theirs_status,
            }
            for r in comparison.rows
        ]
    )


def show_rerank_panel(result: QueryResult, message_id: str, include_text: bool) -> None:
    """The panel: controls, the new order beside the store's, review flags, the
    ranking JSON (downloadable), and a box to check a pasted ranking."""
    if not result.hits:
        return
    st.subheader("What-if re-ranking")
    st.caption(
        "Re-order the candidates already returned by relevance and recency, drop the ones under "
        "a relevance threshold or past a staleness cutoff, and see why each one moved. "
        "Nothing here queries the store again."
    )
    settings = rerank_controls("rerank")
    now = result_clock(message_id)
    reranked = rerank(result.hits, now=now, settings=settings, query=result.query)
    query_label = result.query if include_text else message_id
    payload = reranked.to_json(query=query_label)

    st.caption(RELEVANCE_SOURCE_TEXT[reranked.relevance_source])
    if reranked.relevance_source in ("score", "mixed") and not result.score_kind.comparable_to_floor:
        st.warning(
            f"This store's scores are {inert_markdown(result.score_kind.value)}s: as relevance they only order "
            "the hits, and a threshold on them means little."
        )
    cols = st.columns(4)
    for col, (label, value) in zip(
        cols,
        (
            ("Candidates", reranked.total_candidates),
            ("Returned after re-ranking", len(reranked.returned)),
            ("Excluded (relevance)", reranked.excluded_count),
            ("Stale (age)", reranked.stale_count),
        ),
        strict=True,
    ):
        col.metric(label, value)
    for flag in review_flags(payload):
        st.warning(f"Review: {inert_markdown(_short(flag))}")

    left, right = st.columns([2, 5])
    left.markdown("**Store order**")
    left.dataframe(
        pd.DataFrame(
            [
                {
                    "rank": h.rank,
                    "memory id": h.memory_id,
                    "score": h.score,
                    "text": clip_text(h.text, STORE_TEXT_CHARS)[0],
                }
                for h in result.hits[:MAX_ROWS_SHOWN]
            ]
        ),
        hide_index=True,
        width="stretch",
        key="rerank_store_order",
    )
    right.markdown(f"**Re-ranked** ({inert_markdown(settings_text(settings))})")
    right.dataframe(
        reranked_frame(reranked).head(MAX_ROWS_SHOWN),
        hide_index=True,
        width="stretch",
        key="rerank_new_order",
        # Status and move next to the id: in a narrow column the later ones scroll off.
        column_order=("new rank", "memory id", "status", "move", "composite", "relevance", "recency", "store rank", "why"),
        column_config={
            "relevance": st.column_config.NumberColumn(format="%.3f"),
            "recency": st.column_config.NumberColumn(format="%.3f"),
            "composite": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.3f"),
            "why": st.column_config.TextColumn(width="large"),
        },
    )

    if len(result.hits) > MAX_ROWS_SHOWN:
        st.caption(f"Both tables show the first {MAX_ROWS_SHOWN:,} of {len(result.hits):,} candidates; all are re-ranked.")
    with st.expander("Why each row is where it is", expanded=len(reranked.entries) <= WHY_EXPANDED_ROWS):
        st.markdown(
            "\n".join(
                f"- **#{e.new_rank:d}** {code_span(clip_text(e.entry_id, STORE_TEXT_CHARS)[0])} "
                f"({inert_markdown(move_text(e.move))} from #{e.store_rank:d}, {inert_markdown(status_text(e.excluded, e.stale))}): "
                f"{inert_markdown(e.justification)}"
                for e in reranked.entries[:MAX_WHY_ROWS]
            )
        )
        if len(reranked.entries) > MAX_WHY_ROWS:
            st.caption(f"The first {MAX_WHY_ROWS} of {len(reranked.entries):,} rows; the table has every one.")

    # No validate_ranking here: the page's own ranking is checked by the tests
    # (tests/dashboard/ranking/test_rerank_validate.py), not on every rerun.
    candidate_ids = [h.memory_id for h in result.hits]
    st.download_button(
        "Download re-ranking JSON",
        lambda: json.dumps(payload, indent=2, ensure_ascii=False),
        file_name="memlens-rerank.json",
        mime="application/json",
        key="rerank_download_json",
        on_click="ignore",
        help="The query is replaced by its message id unless text is stored with labels.",
    )
    with st.expander("JSON", expanded=False):
        st.json(bounded_json(payload)[0], expanded=False)
    show_pasted_ranking(payload, candidate_ids, settings)
    show_llm_ranker(result, settings, now, message_id, include_text)


def result_clock(message_id: str) -> datetime:
    """The clock the re-ranking uses for this result: fixed when the result first
    showed, so every rerun (and the LLM ranker, and its cache) ages the memories
    from the same moment."""
    kept = st.session_state.get("rerank_clock")
    if not kept or kept[0] != message_id:
        kept = (message_id, datetime.now(UTC))
        st.session_state["rerank_clock"] = kept
    return kept[1]


def show_pasted_ranking(ours: dict, candidate_ids: list[str], settings: RerankSettings) -> None:
    st.markdown("**Check another ranking**")
    pasted = st.text_area(
        "Paste ranking JSON (for example from an LLM ranker given these candidates)",
        key="rerank_pasted_json",
        height=150,
        help="The same shape as the download. It is checked against these candidates and the weights above.",
    )
    if not pasted or not pasted.strip():
        return
    theirs, error = parse_ranking_json(pasted)
    if error:
        show_error(f"Pasted ranking: {error}")
        return
    violations = validate_ranking(
        theirs, candidate_ids, relevance_weight=settings.relevance_weight, recency_weight=settings.recency_weight
    )
    if violations:
        # A Markdown list on purpose, so not show_error: each item is made inert.
        st.error(
            f"The pasted ranking breaks {len(violations):d} check(s):\n"
            + "\n".join(f"- {inert_markdown(_short(v))}" for v in violations[:MAX_VIOLATIONS_SHOWN])
            + (f"\n- … and {len(violations) - MAX_VIOLATIONS_SHOWN:,} more" if len(violations) > MAX_VIOLATIONS_SHOWN else "")
        )
    else:
        st.success("The pasted ranking passes every check.")
    if isinstance(theirs, dict):
        for flag in review_flags(theirs):
            st.warning(f"Review (pasted): {inert_markdown(_short(flag))}")
    comparison = compare_rankings(ours, theirs)
    if comparison.rows:
        st.caption(f"Compared with this page's ranking: {inert_markdown(comparison.summary())}")
        st.dataframe(
            comparison_frame(comparison).head(MAX_ROWS_SHOWN), hide_index=True, width="stretch", key="rerank_comparison"
        )
