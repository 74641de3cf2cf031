"""The Quality page's pieces: precision and friends for the store's order and a
re-ranked order, over the bundled demo queries and over any labelled session.

The demo queries are read from the store once per (store, k, queries file) and kept
in session state, so moving a control re-ranks what is in hand and never queries
again. Every read goes through the read log helper."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from connectors.base import ConnectorError, Hit
from dashboard.display import code_span, inert_list, inert_markdown
from dashboard.judged import DEMO_QUERIES, JudgedQuestion, parse_jsonl
from dashboard.judging.label_source import merge_labels
from dashboard.labels.counted import counted
from dashboard.logs import otlp
from dashboard.logs import read_log as readlog
from dashboard.ranking import metrics
from dashboard.ranking.metrics import QualityReport
from dashboard.ranking.rerank import RerankSettings
from dashboard.ui.widgets import cache, store_names
from dashboard.ui.widgets import label_source_choice as label_source_ui
from dashboard.ui.widgets.errors import show_error
from dashboard.ui.widgets.label_counting import reviewers_setting
from dashboard.ui.widgets.progress import progress_bar
from dashboard.ui.widgets.rerank_panel import RELEVANCE_SOURCE_TEXT, rerank_controls, settings_text
from dashboard.ui.widgets.sidebar import StoreChoice, missing_users_warning

ALL_REVIEWERS = "(all reviewers)"
RECENT_READS = 20


def controls() -> tuple[RerankSettings, int, int]:
    """(re-rank settings, candidates per query, metric depth n)."""
    state = st.session_state
    state.setdefault("quality_k", 5)
    state.setdefault("quality_cutoff", metrics.DEFAULT_DEPTH)
    cols = st.columns(2)
    k = cols[0].number_input(
        "Candidates per query (k)", min_value=1, max_value=50, step=1, key="quality_k",
        help="How many memories the store is asked for; the re-ranker re-orders these.",
    )
    depth = cols[1].number_input(
        "Metric cutoff (top n)", min_value=1, max_value=50, step=1, key="quality_cutoff",
        help="precision@n, recall@n, nDCG@n and hit rate@n look at the first n results.",
    )
    st.markdown("**Re-ranked setting**")
    settings = rerank_controls("quality")
    return settings, int(k), int(depth)


# ------------------------------------------------------------------ figures


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def summary_frame(report: QualityReport) -> pd.DataFrame:
    n = report.k
    rows = []
    for name, summary in (("store order", report.store), (f"re-ranked ({settings_text(report.settings)})", report.rerank)):
        rows.append(
            {
                "order": name,
                f"top-{n} precision (returned)": summary.returned_precision,
                f"precision@{n}": summary.precision,
                f"recall@{n}": summary.recall,
                "MRR": summary.mrr,
                f"nDCG@{n}": summary.ndcg,
                f"hit rate@{n}": summary.hit_rate,
                "queries returning something": f"{summary.queries_with_returns} of {summary.queries}",
                "unanswerable left empty": summary.abstention_rate,
            }
        )
    return pd.DataFrame(rows)


def per_query_frame(report: QualityReport, show_query: bool) -> pd.DataFrame:
    n = report.k
    rows = []
    for result in report.cases:
        case = result.case
        row: dict[str, Any] = {"message id": case.message_id}
        if show_query:
            row["user"] = case.user_id
            row["query"] = case.query
        row.update(
            {
                "relevant": ", ".join(sorted(m for m, g in case.grades.items() if g > 0)) or "(none)",
                f"store top {n}": ", ".join(result.store.top),
                f"re-ranked top {n}": ", ".join(result.rerank.top) or "(nothing returned)",
                f"store precision@{n}": result.store.precision,
                f"re-ranked precision@{n}": result.rerank.precision,
                "store returned precision": result.store.returned_precision,
                "re-ranked returned precision": result.rerank.returned_precision,
                "store RR": result.store.reciprocal_rank,
                "re-ranked RR": result.rerank.reciprocal_rank,
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)


def show_headline(report: QualityReport, key_prefix: str) -> None:
    n = report.k
    store, reranked = report.store.returned_precision, report.rerank.returned_precision
    cols = st.columns(3)
    cols[0].metric(f"Top-{n} precision, store order", _figure(store))
    delta = None if store is None or reranked is None else f"{reranked - store:+.3f}"
    cols[1].metric(f"Top-{n} precision, re-ranked", _figure(reranked), delta=delta)
    cols[2].metric("Target", f"> {metrics.PRECISION_TARGET:.2f}")
    st.caption(
        f"Top-{n:d} precision: of the memories in the top {n:d} that reach the prompt, the share judged "
        f"relevant, averaged over the queries that return anything. precision@{n:d} is the standard "
        f"figure (as ranx computes it): it divides by {n:d} and covers answerable queries only, so with "
        f"one relevant memory per question it cannot pass {1 / n:.2f}."
    )
    st.dataframe(summary_frame(report), hide_index=True, width="stretch", key=f"{key_prefix}_summary")


def show_stale_but_convincing(report: QualityReport, key_prefix: str) -> None:
    st.markdown("**Stale but convincing**")
    state = st.session_state
    state.setdefault(f"{key_prefix}_stale_age_days", 90.0)
    state.setdefault(f"{key_prefix}_stale_min_relevance", 0.4)
    cols = st.columns(2)
    age_days = cols[0].number_input(
        "Older than (days)", min_value=0.0, step=7.0, key=f"{key_prefix}_stale_age_days"
    )
    min_relevance = cols[1].slider(
        "With relevance at least", 0.0, 1.0, step=0.05, key=f"{key_prefix}_stale_min_relevance"
    )
    found = metrics.stale_but_convincing(
        report, older_than_hours=float(age_days) * 24, min_relevance=float(min_relevance)
    )
    if not found:
        st.caption("No candidate is both that old and that relevant.")
        return
    st.caption(
        f"{len(found):d} candidate(s) are older than {age_days:g} days yet read as a strong match: "
        "check that what they say is still true."
    )
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "message id": s.message_id,
                    "memory id": s.entry_id,
                    "age (days)": round(s.age_hours / 24, 1),
                    "relevance": s.relevance,
                    "judged": {True: "relevant", False: "not relevant", None: "unjudged"}[s.judged_relevant],
                }
                for s in found
            ]
        ),
        hide_index=True,
        width="stretch",
        key=f"{key_prefix}_stale_table",
    )


# ------------------------------------------------------------------ demo queries


def demo_hits(choice: StoreChoice, queries: list[JudgedQuestion], k: int, digest: str) -> dict[str, list[Hit]] | None:
    """The store's hits for every demo query, read once per (store, k, file)."""
    state = st.session_state
    key = (choice.fingerprint, k, digest)
    # Nothing is sent on page open, only when the reviewer asks: a remote store may
    # be production, where every query counts (usage, quotas), and an embedded store
    # may hold a team's own data, which the demo questions were not written for.
    fresh = state.get("quality_demo_key") != key
    if fresh and not st.button(
        f"Run the {len(queries)} demo queries against this store", key="quality_run_demo", type="primary"
    ):
        st.caption("Nothing has been sent to the store yet.")
        return None
    if fresh:
        state["quality_demo_hits"], state["quality_demo_error"] = None, None
        hits: dict[str, list[Hit]] = {}
        progress = progress_bar(0.0, "Running the demo queries…")
        try:
            for done, query in enumerate(queries, start=1):
                result = readlog.logged_query(
                    choice.connected,
                    query.query,
                    user_id=query.user_id,
                    k=k,
                    store_fingerprint=choice.fingerprint,
                    source="quality",
                )
                hits[query.message_id] = result.hits
                progress.progress(done / len(queries), text=f"Ran {done} of {len(queries)} demo queries")
        except ConnectorError as exc:
            # Stop at the first failure: the next 37 calls would fail the same way.
            state["quality_demo_error"] = f"{type(exc).__name__}: {exc}"
        else:
            state["quality_demo_hits"] = hits
        progress.empty()
        state["quality_demo_key"] = key
    if state.get("quality_demo_error"):
        show_error(f"The store could not answer a demo query: {state['quality_demo_error']}")
        st.button("Retry", key="quality_retry", on_click=lambda: state.pop("quality_demo_key", None))
        return None
    return state["quality_demo_hits"]


def show_demo_quality(choice: StoreChoice, settings: RerankSettings, k: int, depth: int) -> None:
    st.header("Demo queries")
    try:
        raw = DEMO_QUERIES.read_bytes()
    except OSError as exc:
        show_error(f"Cannot read the demo queries at {DEMO_QUERIES}: {exc}")
        return
    # The bytes are read here (not through judged.read_questions) because their hash
    # keys the store's answers kept in session state.
    queries, issues = parse_jsonl(raw.decode("utf-8", errors="replace"), source=DEMO_QUERIES.name)
    if issues:
        st.warning(
            f"{len(issues):d} line(s) of the demo queries were skipped:\n" + inert_list(issues)
        )
    if not queries:
        st.info("There are no usable demo queries.")
        return
    st.caption(
        f"{len(queries):d} judged questions about the bundled demo users, each asked with its user's id; "
        "memories not listed as relevant count as not relevant."
    )
    if missing := missing_users_warning(choice.store, [q.user_id for q in queries]):
        st.warning(missing)
    hits = demo_hits(choice, queries, k, hashlib.sha256(raw).hexdigest())
    if hits is None:
        return
    cases = metrics.cases_from_queries(queries, hits)
    check = metrics.judged_ids_check(cases)
    if check.judged and not check.overlap:
        st.warning(
            "None of the memories the demo judgments name came back from this store: "
            "is it loaded with the bundled demo memories?"
        )
    report = metrics.compare_orders(cases, settings=settings, now=datetime.now(UTC), k=depth)
    sources = {result.reranked.relevance_source for result in report.cases if result.reranked.entries}
    if not sources:
        # Nothing came back at all: "sent no scores" would blame the store's scores.
        st.caption("The store returned no memories for any demo query, so there is nothing to rank.")
    else:
        st.caption(RELEVANCE_SOURCE_TEXT[sources.pop() if len(sources) == 1 else "mixed"])
    show_headline(report, "quality_demo")
    with st.expander("Per query", expanded=False):
        st.dataframe(per_query_frame(report, show_query=True), hide_index=True, width="stretch", key="quality_demo_per_query")
    show_stale_but_convincing(report, "quality_demo")


# ------------------------------------------------------------------ labelled sessions


def _created_at_lookup(choice: StoreChoice, store_fingerprint: str):
    """Ages from the open store when it is the one the labels judged, remembered in
    session state so moving a control does not fetch them again; else None."""
    store = choice.store
    if store is None or store_fingerprint != choice.fingerprint:
        return None
    known: dict[str, datetime | None] = st.session_state.setdefault("quality_created_at", {})

    def lookup(memory_id: str) -> datetime | None:
        key = f"{store_fingerprint}|{memory_id}"
        if key not in known:
            try:
                memory = store.get(memory_id)
            except ConnectorError:
                memory = None
            known[key] = memory.created_at if memory is not None else None
        return known[key]

    return lookup


def show_labelled_quality(choice: StoreChoice, settings: RerankSettings, depth: int) -> None:
    st.header("Labelled sessions")
    db = cache.app_database()
    stores = db.labels.stores()
    if not stores:
        st.info("No labels yet: label results on the Inspect page (or import a labelled session) to measure them here.")
        return
    if st.session_state.get("quality_label_store") not in stores:
        st.session_state["quality_label_store"] = choice.fingerprint if choice.fingerprint in stores else stores[0]
    cols = st.columns(2)
    store_fingerprint = cols[0].selectbox("Labels for store", stores, key="quality_label_store", format_func=store_names.name_of)
    reviewers = [ALL_REVIEWERS, *db.labels.reviewers()]
    if st.session_state.get("quality_label_reviewer") not in reviewers:
        st.session_state["quality_label_reviewer"] = ALL_REVIEWERS
    reviewer = cols[1].selectbox("Reviewer", reviewers, key="quality_label_reviewer")
    rule, judge = label_source_ui.label_rule(db.judge_labels.sources(), "quality_label_source", "quality_fill_judge")
    raw = db.labels.find(store=store_fingerprint, reviewer=None if reviewer == ALL_REVIEWERS else reviewer)
    # One label per pair by the one rule (adjudicated, else majority, a tie left out),
    # as on Calibrate; one reviewer's own figures leave adjudications out.
    counted_people = counted(db, labels=raw, environ=reviewers_setting(),
                             adjudicated=reviewer == ALL_REVIEWERS)  # fmt: skip
    people = counted_people.labels
    labels, found, from_judge = people, None, 0
    if judge is not None:
        judgments = db.judge_labels.find(source=judge)
        # A judge label's store is the one people's labels of its message name (any reviewer's).
        here = people if reviewer == ALL_REVIEWERS else db.labels.find(store=store_fingerprint)
        merged = merge_labels(
            people, judgments, rule, judge, stores={row.message_id: row.store for row in here}, store=store_fingerprint
        )
        labels, from_judge = merged.labels, merged.from_judge
        found = label_source_ui.agreement(raw, judgments, judge, resolved=people)
    if not labels:
        st.info("No labels for this store and reviewer.")
        return
    lookup = _created_at_lookup(choice, store_fingerprint)
    cases = metrics.cases_from_labels(labels, lookup)
    st.caption(
        f"{len(cases):d} labelled message(s), {len(labels):d} label(s). The store's order is the rank the reviewer "
        "saw; relevance for re-ranking is the labelled score (labels keep no breakdown); memories nobody "
        "labelled count as not returned. "
        + (
            "Ages come from the open store."
            if lookup
            else "The open store is not the one these labels judged, so ages are unknown (recency 0)."
        )
    )
    st.caption(inert_markdown(" ".join(counted_people.resolution.lines())))
    report = metrics.compare_orders(cases, settings=settings, now=datetime.now(UTC), k=depth)
    if found is not None:  # beside the figures whenever a judge supplied some of the labels
        label_source_ui.show_agreement(found, from_judge)
    show_headline(report, "quality_labels")
    with st.expander("Per message", expanded=False):
        st.dataframe(per_query_frame(report, show_query=False), hide_index=True, width="stretch", key="quality_labels_per_query")


# ------------------------------------------------------------------ read log


def show_read_log() -> None:
    st.header("Read log")
    path = readlog.read_log_path()
    records, broken = readlog.read_records(path)
    st.caption(
        f"Every store query the app makes is one line in {code_span(str(path))}: query hash, store fingerprint, "
        "candidate count, top-k ids with scores and latency, no text. Attach it to a bug report."
    )
    if broken:
        st.warning(f"{broken:d} line(s) of the read log are not valid JSON and are left out of the table.")
    if not records:
        st.caption("No reads logged yet.")
        return
    st.metric("Reads logged", len(records))
    recent = records[-RECENT_READS:][::-1]
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "at": r.get("at"),
                    "source": r.get("source"),
                    "store": r.get("store"),
                    "query hash": r.get("query_hash"),
                    "candidates": r.get("candidate_count"),
                    "top id": (r.get("top_k") or [{}])[0].get("memory_id"),
                    "latency ms": r.get("latency_ms"),
                    "error": r.get("error"),
                }
                for r in recent
            ]
        ),
        hide_index=True,
        width="stretch",
        key="readlog_recent",
    )
    cols = st.columns(2)
    cols[0].download_button(
        "Download read log (JSONL)",
        lambda: readlog.log_bytes(path),
        file_name="memlens-reads.jsonl",
        mime="application/jsonl",
        key="readlog_download",
        on_click="ignore",
    )
    cols[1].download_button(
        "Download as OpenTelemetry traces (OTLP JSON)",
        lambda: otlp.to_otlp_jsonl(records),
        file_name="memlens-reads-otlp.json",
        mime="application/json",
        key="readlog_download_otlp",
        on_click="ignore",
        help="One OpenInference RETRIEVER span per read, ids and scores only: Phoenix or any OTLP collector takes it.",
    )
