"""The Quality page on runs: pick a judged set, run it against the chosen store,
see its metrics, compare two runs, and try other weights on a run's candidates.

A run is started by a button and saved batch by batch; a rerun of the page (any
other click, or Cancel) stops it between batches and it stays incomplete, to be
resumed. Everything else on the page reads saved runs: moving a control never
queries the store."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from connectors.base import ConnectorError, MemoryStore
from connectors.registry import REGISTRY, public_config
from dashboard import store_link
from dashboard.database import AppDatabase
from dashboard.database.model import LabelStoreError
from dashboard.database.runs import RunInfo
from dashboard.display import code_span, inert_link, inert_markdown
from dashboard.evaluation import judged_sets
from dashboard.evaluation import weight_search as whatif
from dashboard.evaluation.judged_sets import JudgedSet, JudgedSetError
from dashboard.evaluation.run_compare import CompareError, Comparison, compare_runs, inspect_link
from dashboard.evaluation.run_figures import PER_TURN, POOLED, RunFigures, format_value, run_figures
from dashboard.evaluation.runs import RunRequest, RunStopped, failure_summary, resume_run, start_run, store_limit
from dashboard.floor import default_floor
from dashboard.labels.counted import counted
from dashboard.ui.pages import quality_misses
from dashboard.ui.widgets import cache, session
from dashboard.ui.widgets.errors import show_error, show_store_error
from dashboard.ui.widgets.label_counting import reviewers_setting
from dashboard.ui.widgets.progress import progress_bar
from dashboard.ui.widgets.sidebar import (
    StoreChoice,
    missing_users_warning,
    run_link_params,
    set_store_setting,
    store_url_params,
)

DEMO_SET = "demo (bundled)"
MAX_K = 100


def database_or_error() -> AppDatabase | None:
    try:
        return cache.app_database()
    except LabelStoreError as exc:
        show_error(f"The label database cannot be reached, so runs cannot be kept: {exc}")
        return None


# ------------------------------------------------------------------ judged sets


def _keep(db: AppDatabase, judged: JudgedSet) -> None:
    db.judged_sets.save(judged)
    st.session_state["eval_set"] = judged.name
    # the page draws it on the next run, from these parts (the set's name is the uploader's text)
    st.session_state["eval_set_message"] = (judged.name, len(judged.questions), len(judged.issues), judged.source == "labels")


def judged_set_picker(db: AppDatabase) -> JudgedSet | None:
    st.subheader("Judged set")
    with st.expander("Upload a judged set (JSONL) or promote labelled turns"):
        upload = st.file_uploader("Judged set (JSONL)", type=["jsonl", "json", "txt"], key="eval_upload")
        name = st.text_input("Name to keep it under", key="eval_upload_name")
        keep = st.button("Keep this judged set", key="eval_keep_upload", disabled=upload is None)
        if keep and upload is not None:
            try:
                uploaded = judged_sets.from_text(
                    upload.getvalue().decode("utf-8", errors="replace"),
                    name=name.strip() or upload.name.rsplit(".", 1)[0],
                    source=upload.name,
                )
                _keep(db, uploaded)
                if uploaded.issues:
                    st.session_state["eval_set_issues"] = uploaded.issue_report()
            except JudgedSetError as exc:
                show_error(str(exc))
        promote_name = st.text_input("Name for the promoted set", value="from labels", key="eval_promote_name")
        if st.button("Promote labelled turns to a judged set", key="eval_promote"):
            _promote(db, promote_name.strip() or "from labels")
    if message := st.session_state.pop("eval_set_message", None):
        st.success(
            f"Kept judged set **{inert_markdown(message[0])}**: {message[1]:d} questions"
            + (f"; {message[2]:d} {'turn(s)' if message[3] else 'line(s)'} left out" if message[2] else "")
        )

    if issues := st.session_state.pop("eval_set_issues", None):
        st.warning("Lines skipped:\n\n" + "\n".join(f"- {inert_markdown(line)}" for line in issues.splitlines()[:50]))
    names = [DEMO_SET, *[n for n in db.judged_sets.names() if n != "demo"]]
    _restore_set_from_url(names)
    # The set chosen in this browser session (kept across pages); in a new session,
    # the set a link names, else the newest set the team kept, not the demo.
    session.seed("eval_set", _newest_set(db) or DEMO_SET)
    if st.session_state.get("eval_set") not in names:
        st.session_state["eval_set"] = DEMO_SET
    chosen = st.selectbox("Judged set", names, key="eval_set")
    session.keep("eval_set", chosen)
    judged: JudgedSet | None = judged_sets.demo_set() if chosen == DEMO_SET else db.judged_sets.load(chosen)
    if judged:
        answerable = sum(q.answerable for q in judged.questions)
        st.caption(
            f"{len(judged.questions):d} questions ({answerable:d} answerable), version {inert_markdown(judged.content_hash)}"
        )
    return judged


SET_PARAM = "set"


def _newest_set(db: AppDatabase) -> str | None:
    kept = [s for s in db.judged_sets.all() if s["name"] != "demo"]
    return max(kept, key=lambda s: s["created_at"] or "")["name"] if kept else None


def _restore_set_from_url(names: list[str]) -> None:
    """Once per browser session: the judged set a link names (``?set=NAME``)."""
    if not session.first_run("judged_set_link"):
        return
    wanted = st.query_params.get(SET_PARAM)
    if not wanted:
        return
    if wanted in names:
        session.set_widget("eval_set", wanted)
    else:
        st.warning(
            f"The link's judged set {inert_markdown(repr(wanted[:40]))} is not kept here; "
            "upload it below or pick one of the kept sets."
        )


def _promote(db: AppDatabase, name: str) -> None:
    # One label per pair by the one rule (adjudications applied), as every figure counts them.
    labels = counted(db, environ=reviewers_setting()).labels
    texts: dict[str, tuple[str | None, str | None]] = {}
    for drawn in db.sessions.all():
        for item in db.sessions.items(drawn.name):
            if item.query_text:
                texts.setdefault(item.message_id, (item.query_text, item.user_id))
    for label in labels:
        if label.query_text and label.message_id not in texts:
            texts[label.message_id] = (label.query_text, None)
    questions, issues = judged_sets.from_labels(labels, texts)
    if not questions:
        show_error(
            "No labelled turn could be promoted: a turn needs its query text, kept when the reviewer opted in."
            + (f" ({len(issues)} turn(s) without it)" if issues else "")
        )
        return
    _keep(db, JudgedSet(name, questions, source="labels", issues=issues))


# ------------------------------------------------------------------ running


def run_controls(db: AppDatabase, choice: StoreChoice, judged: JudgedSet) -> None:
    st.subheader("Run it")
    limit = min(store_limit(choice.store) or MAX_K, MAX_K) if choice.store else MAX_K
    state = st.session_state
    state.setdefault("eval_k", min(10, limit))
    cols = st.columns([1, 2, 2])
    k = cols[0].number_input("k", min_value=1, max_value=limit, step=1, key="eval_k",
                             help="Memories asked for per question. Fetch deeper than the cutoff for what-if weights.")
    name = cols[1].text_input("Run name", key="eval_run_name", placeholder=f"{judged.name} on {choice.display_name}")
    keep_text = cols[2].checkbox("Keep query text with the run", key="eval_keep_text",
                                 help="Off: the run holds ids and scores only.")
    if missing := missing_users_warning(choice.store, [q.user_id for q in judged.questions]):
        st.warning(missing)
    as_of, as_of_error = _as_of_control(choice)
    start = st.button("Start run", key="eval_start", type="primary", disabled=choice.store is None or bool(as_of_error))
    if start and choice.store is not None and not as_of_error:
        config = {**choice.config, "as_of": as_of} if as_of else choice.config
        request = RunRequest(judged, choice.name, choice.fingerprint, public_config(choice.name, config),
                             int(k), name.strip(), bool(keep_text))
        _execute(lambda progress: start_run(_store_at(choice, as_of), db, request, progress=progress))
    incomplete = [r for r in db.runs.all() if not r.complete and r.fingerprint == choice.fingerprint]
    if incomplete and choice.store is not None:
        labels = {r.run_id: f"{r.name} ({r.status})" for r in incomplete}
        picked = str(st.selectbox("Incomplete runs on this store", list(labels), format_func=lambda r: labels[r],
                                  key="eval_resume_run"))
        if st.button("Resume", key="eval_resume"):
            # The run's own clock, as `memlens runs resume` uses it.
            resumed = next(r for r in incomplete if r.run_id == picked)
            _execute(lambda progress: resume_run(_store_at(choice, resumed.as_of), db, picked, progress=progress))


def _as_of_control(choice: StoreChoice) -> tuple[str | None, str | None]:
    """The "Rank as of" field: (the time as UTC ISO 8601 or None for now, an error)."""
    spec = REGISTRY.get(choice.name)
    clock = spec is not None and spec.clock
    text = st.text_input(
        "Rank as of (ISO 8601; empty: now)", key="eval_as_of", placeholder="2023-05-08T13:00:00Z", disabled=not clock,
        help="The clock the embedded store computes recency at: set it to the time of an old log or benchmark, "
        "so recent memories count as recent. Kept with the run." if clock
        else f"The {choice.name} store computes recency itself; only the embedded store takes a clock.",
    ).strip()
    if not text or not clock:
        return None, None
    from connectors.base import parse_as_of

    try:
        when = parse_as_of(text).isoformat()
    except ConnectorError as exc:
        show_error(f"Rank as of: {str(exc).removeprefix('as_of: ')}")
        return None, str(exc)
    st.caption(f"The run ranks as of {inert_markdown(when)}.")
    return when, None


def _store_at(choice: StoreChoice, as_of: str | None) -> MemoryStore:
    """The chosen store, or the same store ranking at `as_of` (opened once, in cache.py)."""
    if not as_of:
        return choice.connected
    return cache.open_store(choice.name, json.dumps({**choice.config, "as_of": as_of}, sort_keys=True, default=str))


def _execute(work: Any) -> None:
    bar = progress_bar(0.0, "Starting the run")
    # Any click reruns the page, which stops this script between two batches: the
    # answers so far are saved and the run stays incomplete, to be resumed.
    st.button("Cancel run", key="eval_cancel")

    def progress(done: int, total: int) -> None:
        bar.progress(done / total if total else 1.0, text=f"{done} of {total} questions")

    try:
        info = work(progress)
        st.session_state["eval_run"] = info.run_id
        if info.failed:
            # a store outage must not pass for a finished run: say so, and that Resume asks again
            errors = [o.error for o in cache.app_database().runs.outcomes(info.run_id)]
            st.warning(
                f"Run **{inert_markdown(info.name)}** is incomplete: {inert_markdown(failure_summary(info, errors))}."
                " They count as returning nothing; Resume asks them again."
            )
        else:
            st.success(f"Run **{inert_markdown(info.name)}** complete: {info.total:d} questions.")
    except RunStopped as exc:
        st.warning(f"The run stopped and is kept as incomplete: {inert_markdown(str(exc))}")
    except ConnectorError as exc:
        show_error(f"The store failed: {exc}")


# ------------------------------------------------------------------ figures


def runs_frame(runs: list[RunInfo]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"run": r.run_id, "name": r.name, "status": r.status, "failed": r.failed,
             "judged set": f"{r.set_name} ({r.set_hash[:8]})", "store": r.display_name, "store id": r.fingerprint, "k": r.k, "as of": r.as_of or "",
             "started": r.started_at[:19]}
            for r in reversed(runs)
        ]
    )


def _run_label(runs: list[RunInfo]) -> dict[str, str]:
    return {r.run_id: f"{r.name} · {r.run_id} · {r.status}" for r in reversed(runs)}


def figures_of(db: AppDatabase, info: RunInfo, n: int, floor: float | None) -> tuple[JudgedSet | None, RunFigures | None]:
    judged = cache.judged_set(db, info.set_name, info.set_hash)
    if judged is None:
        return None, None
    return judged, run_figures(judged.questions, cache.run_outcomes(db, info), n, floor)


def show_runs(db: AppDatabase) -> list[RunInfo]:
    st.subheader("Runs")
    runs = db.runs.all()
    if not runs:
        st.info("No run yet: start one above.")
        return runs
    st.dataframe(runs_frame(runs), hide_index=True, width="stretch", key="eval_runs_table")
    labels = _run_label(runs)
    if st.session_state.get("eval_run") not in labels:
        st.session_state["eval_run"] = next(iter(labels))
    run_id = st.selectbox("Run", list(labels), format_func=lambda r: labels[r], key="eval_run")
    info = next(r for r in runs if r.run_id == run_id)
    cols = st.columns(2)
    st.session_state.setdefault("eval_cutoff", info.k)
    n = int(cols[0].number_input("Cutoff n (metrics @n)", min_value=1, max_value=MAX_K, step=1, key="eval_cutoff"))
    floor = float(cols[1].slider("Floor", 0.0, 1.0, value=default_floor(), step=0.01, key="eval_floor"))
    n = min(n, info.k)
    judged, figures = figures_of(db, info, n, floor)
    if figures is None:
        show_error(f"The judged set this run was judged against ({info.set_name}, {info.set_hash}) is gone.")
        return runs
    if not info.complete:
        st.warning(f"This run is {inert_markdown(info.status)}: the figures cover the questions it answered only.")
    if figures.errors:
        errors = [r.error for r in figures.per_query]
        st.warning(
            f"{figures.errors:d} question(s) failed in this run and count as returning nothing"
            f" ({inert_markdown(failure_summary(info, errors))}); Resume asks them again."
        )
    for note in info.notes:
        st.caption(f"Store note: {inert_markdown(note)}")
    metrics_cols = st.columns(5)
    for col, name in zip(metrics_cols, (f"recall@{n}", "mrr", f"ndcg@{n}", POOLED, PER_TURN), strict=True):
        col.metric(name, format_value(figures.overall.get(name)))
    overall, by_tag, by_user, per_query = st.tabs(["Overall", "Per tag", "Per user", "Per question"])
    overall.dataframe(pd.DataFrame([{"metric": k, "value": v} for k, v in figures.overall.items()]),
                      hide_index=True, key="eval_overall")
    by_tag.dataframe(pd.DataFrame.from_dict(figures.by_tag, orient="index"), key="eval_by_tag")
    by_user.dataframe(pd.DataFrame.from_dict(figures.by_user, orient="index"), key="eval_by_user")
    per_query.dataframe(
        pd.DataFrame([{"message_id": r.message_id, "user": r.user_id, **r.values, "error": r.error} for r in figures.per_query]),
        hide_index=True, key="eval_per_query",
    )
    return runs


def show_compare(db: AppDatabase, runs: list[RunInfo]) -> None:
    st.subheader("Compare two runs")
    if len(runs) < 2:
        st.caption("Two runs of one judged set are needed.")
        return
    labels = _run_label(runs)
    ids = list(labels)
    state = st.session_state
    if state.get("eval_run_a") not in ids:
        state["eval_run_a"] = ids[1]
    if state.get("eval_run_b") not in ids:
        state["eval_run_b"] = ids[0]
    cols = st.columns(3)
    a = str(cols[0].selectbox("Run A (baseline)", ids, format_func=lambda r: labels[r], key="eval_run_a"))
    b = str(cols[1].selectbox("Run B (candidate)", ids, format_func=lambda r: labels[r], key="eval_run_b"))
    info_a, info_b = (next(r for r in runs if r.run_id == x) for x in (a, b))
    n = min(info_a.k, info_b.k)
    # the pooled precision has no per-question figure to pair: the per-turn mean is compared
    metrics = [f"recall@{n}", f"precision@{n}", "mrr", f"ndcg@{n}", f"hit_rate@{n}", PER_TURN]
    if state.get("eval_compare_metric") not in metrics:
        state["eval_compare_metric"] = metrics[0]
    metric = cols[2].selectbox("Metric", metrics, key="eval_compare_metric")
    floor = float(state.get("eval_floor", default_floor()))
    judged = cache.judged_set(db, info_a.set_name, info_a.set_hash)
    try:
        if judged is None:
            raise CompareError(f"run A's judged set ({info_a.set_name}, {info_a.set_hash}) is gone")
        comparison = compare_runs(info_a, cache.run_outcomes(db, info_a), info_b, cache.run_outcomes(db, info_b),
                                  judged, metric, floor=floor)
    except CompareError as exc:
        show_error(f"These runs cannot be compared: {exc}")
        return
    show_comparison(comparison, judged, floor)


def show_comparison(c: Comparison, judged: JudgedSet, floor: float) -> None:
    cols = st.columns(4)
    cols[0].metric(f"{c.metric}, A", f"{c.mean_a:.4f}")
    cols[1].metric(f"{c.metric}, B", f"{c.mean_b:.4f}", delta=f"{c.mean_delta:+.4f}")
    cols[2].metric("B wins / ties / losses", f"{c.wins} / {c.ties} / {c.losses}")
    cols[3].metric("p-value", f"{c.p_value:.4f}")
    verdict = "significant" if c.significant else "not significant"
    st.caption(f"Paired randomisation test over {len(c.deltas):d} questions: the difference is {verdict} at p < 0.05.")
    worst = c.worst(20)
    if not worst:
        st.success("B lost on no question.")
        return
    questions = judged.by_id()
    # The links open each question with run B's store and settings (store_link.py),
    # so Inspect ranks it as run B did; a store a link cannot carry is named instead.
    store = run_link_params(c.run_b.store, c.run_b.settings)
    why_not = store_link.cannot_link(c.run_b.store)
    if why_not:
        st.markdown("**Questions B lost most on** (open one on Inspect; the link carries the query, user, k, floor and "
                    "run B's clock)")
    else:
        st.markdown("**Questions B lost most on** (open one on Inspect with run B's store and settings, clock, k and "
                    "floor)")
    k = c.run_b.k
    rows: list[dict[str, Any]] = []
    for d in worst:
        question = questions[d.message_id]
        rows.append({"message_id": d.message_id, "user": d.user_id, "A": d.a, "B": d.b, "delta": d.delta,
                     "inspect": inspect_link(question.query, question.user_id, k, floor, store=store, as_of=c.run_b.as_of)})
    st.dataframe(
        pd.DataFrame(rows), hide_index=True, width="stretch", key="eval_compare_worst",
        column_config={"inspect": st.column_config.LinkColumn("Inspect", display_text="open on Inspect")},
    )
    # The same links as plain anchors too: a grid cell is drawn on a canvas, which
    # keyboard and screen-reader users cannot follow.
    st.markdown(
        "Open on Inspect: "
        + ", ".join(inert_link(str(row["message_id"]), row["inspect"]) for row in rows[:5])
    )
    if why_not:
        settings = json.dumps(c.run_b.settings, sort_keys=True)
        st.warning(
            f"The links cannot open run B's store, {inert_markdown(c.run_b.display_name)}: {inert_markdown(why_not)}. On Inspect, pick the "
            f"{inert_markdown(c.run_b.store)} store in the sidebar with these settings, {inert_markdown(settings)}, "
            f"and its key; the store's fingerprint is then {inert_markdown(c.run_b.fingerprint)}."
        )


# ------------------------------------------------------------------ what-if


def _apply_weights(text: str) -> None:
    # A callback runs before the sidebar draws, so its widget may still be set; the
    # session's copy makes every page's sidebar show the weights.
    set_store_setting("embedded", "weights", text)


def show_whatif(db: AppDatabase, runs: list[RunInfo]) -> None:
    st.subheader("What-if weights")
    run_id = st.session_state.get("eval_run")
    info = next((r for r in runs if r.run_id == run_id), None)
    if info is None:
        st.caption("Pick a run above.")
        return
    st.caption(
        "Re-scores the candidates this run fetched with other component weights, without asking the store "
        "again. Only fetched candidates can move: fetch deeper (a larger k) than the cutoff you judge at."
    )
    cols = st.columns(3)
    metric = cols[0].selectbox("Metric", whatif.METRICS, key="whatif_metric")
    st.session_state.setdefault("whatif_n", min(3, info.k))
    n = int(cols[1].number_input("at cutoff n", min_value=1, max_value=MAX_K, step=1, key="whatif_n"))
    search_floor = cols[2].checkbox("Also search a threshold", key="whatif_threshold")
    if not st.button("Search weights", key="whatif_search"):
        result = st.session_state.get("whatif_result")
    else:
        try:
            found = whatif.search_run(db, info, metric=metric, n=n, search_floor=bool(search_floor))
        except whatif.WhatIfError as exc:
            show_error(str(exc))
            return
        st.session_state["whatif_result"] = result = (info.run_id, found)
    if not result or result[0] != info.run_id:
        return
    shown = result[1]
    recommended = shown.recommended
    if recommended is None:
        st.warning(inert_markdown(shown.summary()))
    else:
        st.markdown(f"**{inert_markdown(shown.summary())}**")
        held = shown.share_held
        if held is not None:
            st.info(f"{held:.0%} of the gain found on the search split held on the held-out questions.")
    for note in shown.notes():
        st.caption(inert_markdown(note[0].upper() + note[1:]))
    rows = [{"setting": "store's own", **shown.own_weights, "threshold": None,
             "search split": shown.own_train, "held out": shown.own_held_out, "tied questions": shown.own_tied}]
    rows += [{"setting": f"#{i}", **s.weights, "threshold": s.floor, "search split": s.train,
              "held out": s.held_out, "tied questions": s.tied} for i, s in enumerate(shown.top, start=1)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="whatif_table")
    text = whatif.weights_to_apply(shown, info.store)
    if text is not None and recommended is not None:
        # The weight names come from the store's breakdown: shown as text, never as Markdown.
        st.button(inert_markdown(f"Use {text} as the embedded store's weights"), key="whatif_apply",
                  on_click=_apply_weights, args=(text,))
        floor = f" --floor {recommended.floor:g}" if recommended.floor > 0 else ""
        st.caption(f"On the command line: {code_span(f'memlens eval ... --weights {text}{floor}')}")


def show(choice: StoreChoice) -> None:
    db = database_or_error()
    if db is None:
        return
    judged = judged_set_picker(db)
    # The address bar names the judged set (and a store that is not the default),
    # so a link to this page opens on the same set.
    chosen = str(st.session_state.get("eval_set") or DEMO_SET)
    session.sync_url({**({SET_PARAM: chosen} if chosen != DEMO_SET else {}), **store_url_params(choice)})
    if judged is not None:
        if choice.error:
            show_store_error(choice.error)
        else:
            run_controls(db, choice, judged)
    runs = show_runs(db)
    # Beside the run's metrics: where its relevant memories were lost, at the same floor.
    quality_misses.show(db, runs, choice, _store_at, float(st.session_state.get("eval_floor", default_floor())))
    show_compare(db, runs)
    show_whatif(db, runs)
