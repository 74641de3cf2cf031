"""The LLM ranker on the Inspect page: the documented ranking prompt run over the
hits already returned (no new store query), with the re-rank panel's settings and
clock, shown beside the store's order and the formula's.

A fragment: asking the model reruns only this part, and a floor move (its own
fragment) never reruns it. Nothing is sent until a model is configured and the
reviewer ticks that the text may go to the host the box names."""

from __future__ import annotations

import json
import os
from datetime import datetime

import pandas as pd
import streamlit as st

from connectors.base import ConnectorError, QueryResult
from dashboard.display import clip_text, inert_markdown
from dashboard.judging.client import ENV_NAMES, ChatClient, ModelConfig, ModelError, config_from_environ
from dashboard.judging.ranker import FALLBACK, RETRIED, RankCache, RankOutcome, rank_with_model
from dashboard.ranking.rerank import RerankSettings
from dashboard.ui.widgets.errors import show_error

MAX_VIOLATIONS_SHOWN = 30
OUTCOME_KEY = "llm_rank_outcome"
TALLY_KEY = "llm_rank_tally"  # queries ranked by the model vs fell back, in this browser session


def model_config() -> tuple[ModelConfig | None, str | None]:
    """(the configured model, None) or (None, why it cannot be used); settings from
    st.secrets first, then the environment, under the same names."""
    environ = dict(os.environ)
    try:
        for name in ENV_NAMES:
            if name in st.secrets:
                environ[name] = str(st.secrets[name])
    except Exception:  # no secrets.toml: the common case
        pass
    try:
        return config_from_environ(environ), None
    except (ModelError, ConnectorError) as exc:
        return None, str(exc)


def _rank_of(order: list[str]) -> dict[str, int]:
    return {entry_id: i for i, entry_id in enumerate(order, start=1)}


def _status(row: dict | None) -> str:
    if row is None:
        return "absent"
    flags = [name for name in ("excluded", "stale") if row.get(name)]
    return " + ".join(flags) if flags else "returned"


def orders_frame(result: QueryResult, outcome: RankOutcome) -> pd.DataFrame:
    """One row per candidate: its place in the store's order, the formula's and the model's."""
    formula_rows = outcome.formula.get("ranked_results", [])
    formula_rank = _rank_of([r["entry_id"] for r in formula_rows])
    # On a fallback the payload is the formula's ranking: the model ranked nothing, so
    # its columns stay empty rather than show the formula's order under its name.
    model_payload = {} if outcome.fell_back else outcome.payload
    model_rows = {r.get("entry_id"): r for r in model_payload.get("ranked_results", []) if isinstance(r, dict)}
    model_rank = {} if outcome.fell_back else _rank_of(outcome.order())
    formula_by_id = {r["entry_id"]: r for r in formula_rows}
    rows = []
    for hit in result.hits:
        mine = model_rows.get(hit.memory_id)
        rows.append(
            {
                "memory id": hit.memory_id,
                "store rank": hit.rank,
                "formula rank": formula_rank.get(hit.memory_id),
                "model rank": model_rank.get(hit.memory_id),
                "formula composite": formula_by_id.get(hit.memory_id, {}).get("composite_score"),
                "model composite": mine.get("composite_score") if mine else None,
                "model status": "fell back: the formula ranked it" if outcome.fell_back else _status(mine),
                "model's reason": clip_text(str(mine.get("justification", "")), 200)[0] if mine else "",
            }
        )
    return pd.DataFrame(rows).sort_values(["model rank", "store rank"], na_position="last")


@st.fragment
def show_llm_ranker(result: QueryResult, settings: RerankSettings, now: datetime, message_id: str, include_text: bool) -> None:
    # One keyed container: the panel can be found (and pictured) as one block.
    with st.container(key="llm_ranker"):
        _llm_ranker(result, settings, now, message_id, include_text)


def _llm_ranker(result: QueryResult, settings: RerankSettings, now: datetime, message_id: str, include_text: bool) -> None:
    st.markdown("**Ask an LLM ranker**")
    config, problem = model_config()
    if problem:
        show_error(f"The model settings are unusable: {problem}")
        return
    if config is None:
        st.caption(
            "No model is configured: set MEMLENS_LLM_BASE_URL and MEMLENS_LLM_MODEL (and MEMLENS_LLM_API_KEY "
            "if the server needs one) to run the ranking prompt over these hits (docs/judging.md)."
        )
        return
    allowed = st.checkbox(
        f"Send this query and the text of these {len(result.hits)} memories to {config.host} ({config.model})",
        key="llm_rank_send_text",
        help="Nothing is sent to the model until this is ticked. The key, if any, goes only to that host.",
    )
    asked = st.button("Rank with the model", key="llm_rank_run", disabled=not allowed, help="Uses the weights, threshold, cutoff and clock above; the store is not queried again.")
    wanted = (message_id, repr(settings), now.isoformat(), config.model, config.base_url)
    if asked and allowed:
        try:
            # the client checks the base URL and key: a bad setting is a message here
            client = ChatClient(config, send_text=True)
        except (ModelError, ConnectorError) as exc:
            show_error(f"The model settings are unusable: {exc}")
            return
        cache = RankCache()
        try:
            with st.spinner(f"Asking {config.model} at {config.host}…"):
                outcome = rank_with_model(
                    client, result.hits, query=result.query, settings=settings, now=now,
                    query_label=result.query if include_text else message_id, cache=cache,
                )
        finally:
            client.close()
        if cache.problem:
            st.caption(inert_markdown(cache.problem))
        st.session_state[OUTCOME_KEY] = (wanted, outcome)
        tally = st.session_state.setdefault(TALLY_KEY, {"model": 0, "fallback": 0})
        tally["fallback" if outcome.fell_back else "model"] += 1
    kept = st.session_state.get(OUTCOME_KEY)
    if not kept or kept[0] != wanted:
        return  # nothing asked yet for these hits and settings
    show_outcome(result, kept[1])


def _one_line(text: object, limit: int) -> str:
    """Outside text cut short, on one line: a line break would end the list item."""
    return " ".join(clip_text(str(text), limit)[0].split())


def show_outcome(result: QueryResult, outcome: RankOutcome) -> None:
    cols = st.columns(4)
    cols[0].metric("Outcome", outcome.status, help="Ranked by: " + ("the formula (fallback)" if outcome.fell_back else outcome.model))
    cols[1].metric("Attempts", len(outcome.attempts))
    cols[2].metric("Model latency (ms)", f"{outcome.latency_ms:,.0f}")
    cols[3].metric("Tokens (prompt + answer)", f"{outcome.usage.prompt_tokens:,} + {outcome.usage.completion_tokens:,}")
    if outcome.cached:
        st.caption("From the ranking cache: the same query, hits, settings, clock, prompt version and model were asked before; no request was sent.")
    if outcome.status == FALLBACK:
        last = outcome.attempts[-1]
        show_error(
            "The model's ranking failed "
            + ("after a retry" if outcome.retried else "")
            + ": the formula's ranking is used instead (the failure is logged)."
            + (f" {clip_text(last.error, 500)[0]}" if last.error else "")  # show_error makes it inert, once
        )
    elif outcome.status == RETRIED:
        st.warning("The first answer broke the rules below; the retry, sent with those violations, passed every check.")
    else:
        st.success("The model's ranking passes every check.")
    for number, attempt in enumerate(outcome.attempts, start=1):
        if attempt.violations:
            # `where` is a path into the model's JSON: the model wrote its keys, so it is
            # drawn inert like the message, never inside a code span it could close
            listed = "\n".join(
                f"- {inert_markdown(_one_line(v.where, 200))} ({inert_markdown(_one_line(v.rule, 100))}): "
                f"{inert_markdown(_one_line(v.message, 300))}"
                for v in attempt.violations[:MAX_VIOLATIONS_SHOWN]
            )
            more = len(attempt.violations) - MAX_VIOLATIONS_SHOWN
            st.markdown(
                f"**Answer {number:d}: {len(attempt.violations):d} violation(s)**\n{listed}"
                + (f"\n- … and {more:d} more" if more > 0 else "")
            )
    tally = st.session_state.get(TALLY_KEY)
    if tally:
        st.caption(
            f"Asked this session: {tally['model']:d} quer(ies) ranked by the model, "
            f"{tally['fallback']:d} fell back to the formula (a fallback is never counted as the model's ranking)."
        )
    st.dataframe(orders_frame(result, outcome), hide_index=True, width="stretch", key="llm_rank_orders")
    exchange = json.dumps(outcome.raw_exchange(), indent=2, ensure_ascii=False)
    with st.expander("Raw prompt and response", expanded=False):
        st.code(clip_text(exchange, 20_000)[0], language="json")
    st.download_button(
        "Download the prompt and response", exchange, file_name="memlens-llm-ranking.json", mime="application/json",
        key="llm_rank_download", on_click="ignore", help="Holds the query and memory text that were sent.",
    )
