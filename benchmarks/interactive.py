"""Interactive cost: what a floor move and a label click cost on the server, and
how often they reach the store.

Set-up: an embedded store file with 71 memories for user "sam" (the demo texts,
all given to sam, so k=50 returns 50 hits), opened through the normal store
settings (MEMLENS_EMBEDDED_DB), the whole app (navigation included) in
streamlit.testing.v1.AppTest, query "Where does the user live?", k=50.

Before/after, in the same process and run: each floor move and each label click is
run twice, once as a full script rerun (what every interaction cost before the page
used fragments) and once as the fragment rerun the browser now asks for (the floor
fragment, or the clicked row's fragment): Streamlit's own ScriptRunner given the
fragment id, exactly as a server runs it. Both see the same widget change.

What is timed, per rerun:
- script run: Streamlit's ScriptRunner._run_script, wrapped with a timer (the
  server-side cost of one rerun: the page script and the messages it queues);
- AppTest wall: the whole AppTest.run() call (adds AppTest's own bookkeeping).
Baseline, in the same process and run: the same two timers on an empty page (a
script that only imports streamlit).

Store calls are counted twice: the page's own counter
(st.session_state["store_calls"], bumped before each query) and a wrapper around
every public EmbeddedStore method, over 20 floor moves and 20 label clicks after
the first query. Target: 0 queries; every other method call is listed.

With the LLM ranker panel open (docs/judging.md): a chat model configured (the
loopback OpenAI-compatible server of the tests, tests/chat_model_server.py, doing
the formula's sums) and a ranking already asked on one app, its model order shown;
a second app, the same page with the same model configured but no ranking asked,
is the baseline. Floor moves alternate between the two (each a full rerun and a
floor-fragment rerun; the two apps take turns going first), and every store method
call and model request made during them is counted. Targets: no store call and no model request, and the floor
fragment with the panel open within the same 30 ms.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from unittest import mock

from benchmarks._common import ROOT, median, report, table

APP = str(ROOT / "dashboard" / "views" / "navigation.py")  # the script each visit runs (app.py serves it)
QUERY = "Where does the user live?"
K = 50
MOVES = 20
LABELS = 20
# Two apps share the ranker-panel comparison, and one floor move costs little next to
# the machine's noise: twice the moves there, so the medians settle.
RANKER_MOVES = 40
STORE_METHODS = ("query", "get", "list", "users", "count", "feedback", "meta", "import_rows", "import_jsonl")


class ScriptRunTimer:
    """Wraps ScriptRunner._run_script: the duration of each script run, in ms."""

    def __init__(self):
        from streamlit.runtime.scriptrunner import script_runner

        self.cls = script_runner.ScriptRunner
        self.original = self.cls._run_script
        self.runs: list[float] = []
        timer = self

        @functools.wraps(self.original)
        def timed(runner, rerun_data):
            started = time.perf_counter()
            try:
                return timer.original(runner, rerun_data)
            finally:
                timer.runs.append((time.perf_counter() - started) * 1000)

        self._patch = mock.patch.object(self.cls, "_run_script", timed)
        self._patch.start()

    def close(self) -> None:
        self._patch.stop()


class StoreCallCounter:
    """Counts every call of the public EmbeddedStore methods, whoever makes it."""

    def __init__(self):
        from connectors.embedded.store import EmbeddedStore

        self.cls = EmbeddedStore
        self.calls: Counter[str] = Counter()
        self.originals = {}
        for name in STORE_METHODS:
            original = getattr(EmbeddedStore, name)
            self.originals[name] = original
            setattr(EmbeddedStore, name, self._counting(name, original))

    def _counting(self, name, original):
        @functools.wraps(original)
        def counted(*args, **kwargs):
            self.calls[name] += 1
            return original(*args, **kwargs)

        return counted

    def close(self) -> None:
        for name, original in self.originals.items():
            setattr(self.cls, name, original)


def build_store(path: Path) -> int:
    """Every demo memory, given to sam: enough for k=50 real hits."""
    from connectors.embedded.factories import DEMO_MEMORIES
    from connectors.embedded.store import EmbeddedStore

    rows = [json.loads(line) for line in DEMO_MEMORIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = [json.dumps({**row, "id": f"bench-{i:03d}", "user_id": "sam"}) for i, row in enumerate(rows)]
    source = path.with_suffix(".jsonl")
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = EmbeddedStore(path)
    store.import_jsonl(source)
    store.close()
    return len(lines)


def profile_floor_moves(at, moves: int = 5) -> list[tuple[str, float, float]]:
    """Where a floor move's rerun goes: the cumulative time of each call the page
    script makes (dashboard/views/inspect.py at module level), per rerun, under
    cProfile (which slows everything, so read the shares, not the absolute ms)."""
    import cProfile
    import pstats

    from streamlit.runtime.scriptrunner import script_runner

    profiler = cProfile.Profile()
    original = script_runner.ScriptRunner._run_script

    def profiled(runner, rerun_data):
        profiler.enable()
        try:
            return original(runner, rerun_data)
        finally:
            profiler.disable()

    with mock.patch.object(script_runner.ScriptRunner, "_run_script", profiled):
        for i in range(moves):
            at.slider(key="floor").set_value(round(0.9 - 0.1 * i, 2))
            at.run()
    # Stats.stats is the raw table (with callers) that pstats itself reads; typeshed leaves it out.
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(ct for (file, _, name), (_, _, _, ct, _) in stats.items() if name == "_run_script")
    page = str(ROOT / "dashboard" / "views" / "inspect.py")
    shares = []
    for (file, _line, name), (_, _, _, _, callers) in stats.items():
        from_page = sum(c[3] for (cfile, _, cname), c in callers.items() if cfile == page and cname == "<module>")
        if from_page:
            shares.append((f"{Path(file).stem}.{name}", from_page / moves * 1000, from_page / total))
    shares.sort(key=lambda item: -item[1])
    return shares[:8]


class FragmentRerun:
    """Makes AppTest's next run a fragment rerun (RerunData.fragment_id_queue), the
    way a browser asks for one when a widget inside a fragment changes."""

    def __init__(self):
        from streamlit.testing.v1 import local_script_runner

        self.module = local_script_runner
        self.original = local_script_runner.RerunData
        self.pending: list[str] = []
        outer = self

        # AppTest builds two RerunData per run (the runner's initial one and the
        # request), and a fragment request merged into a full one becomes full: both
        # carry the fragment until timed_run clears it.
        def rerun_data(**kwargs):
            if outer.pending:
                kwargs["fragment_id_queue"] = list(outer.pending)
            return outer.original(**kwargs)

        # A measuring shim: the runner builds RerunData by name, so replacing the
        # class with a factory is how a fragment rerun is requested from outside.
        local_script_runner.RerunData = rerun_data  # type: ignore[misc,assignment]

    def close(self) -> None:
        self.module.RerunData = self.original  # type: ignore[misc]


def fragment_ids(at) -> list[str]:
    """The page's fragments in the order the script registered them: the floor
    fragment, then one per label row, then the labels table."""
    storage = at._fragment_storage
    return sorted(storage._fragments, key=lambda fid: storage._registration_sequence_by_id.get(fid, 0))


def timed_run(at, timer: ScriptRunTimer, fragments: FragmentRerun | None = None, fragment: str | None = None) -> tuple[float, float]:
    """(AppTest wall ms, script-run ms) of one rerun: the whole script, or one fragment."""
    before = len(timer.runs)
    if fragment is not None and fragments is not None:
        fragments.pending = [fragment]
    started = time.perf_counter()
    try:
        at.run()
    finally:
        if fragments is not None:
            fragments.pending = []
    wall = (time.perf_counter() - started) * 1000
    if at.exception:
        raise RuntimeError(f"the page raised: {[e.value for e in at.exception]}")
    return wall, sum(timer.runs[before:])


def refresh(at, timer: ScriptRunTimer) -> None:
    """An untimed full rerun after a fragment rerun: AppTest's element tree then
    holds only the fragment's elements, and the next step clicks outside it."""
    before = len(timer.runs)
    at.run()
    del timer.runs[before:]


def inspect_app():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["query"] = QUERY
    at.session_state["user"] = "sam"
    at.session_state["k"] = K
    at.session_state["label_reviewer"] = "bench"
    at.run()
    if at.exception:
        raise RuntimeError(f"the page raised: {[e.value for e in at.exception]}")
    return at


def model_order_shown(at) -> bool:
    """The LLM ranker's table (the model's order beside the store's) is on the page."""
    return any("model rank" in d.value.columns for d in at.dataframe)


def ranker_panel_moves(timer: ScriptRunTimer, fragments: FragmentRerun, counter: StoreCallCounter) -> dict:
    """Floor moves with the LLM ranker's answer on the page, against the same page
    with the model configured and nothing asked, interleaved in one process."""
    from benchmarks.judging import load_server_module  # tests/chat_model_server.py, the loopback model
    from dashboard.ui.widgets.llm_ranker_panel import OUTCOME_KEY

    server_module = load_server_module()
    names = ("MEMLENS_LLM_BASE_URL", "MEMLENS_LLM_MODEL")
    with server_module.ChatModelServer(server_module.formula_ranker) as server:
        os.environ["MEMLENS_LLM_BASE_URL"] = server.url
        os.environ["MEMLENS_LLM_MODEL"] = "loopback-ranker"
        try:
            closed = inspect_app()
            opened = inspect_app()
            opened.checkbox(key="llm_rank_send_text").check().run()
            opened.button(key="llm_rank_run").click()
            ask_wall, ask_script = timed_run(opened, timer)
            outcome = opened.session_state[OUTCOME_KEY][1]
            if outcome.status != "valid" or not model_order_shown(opened):
                raise RuntimeError(f"the ranking was not shown: {outcome.status}")
            requests = len(server.received)
            page_before = {id(at): at.session_state["store_calls"] for at in (closed, opened)}
            counter.calls.clear()
            runs: dict[str, list[tuple[float, float]]] = {name: [] for name in ("closed full", "open full", "closed fragment", "open fragment")}
            for i in range(RANKER_MOVES):
                pair = ((closed, "closed"), (opened, "open"))
                for at, name in pair if i % 2 == 0 else pair[::-1]:  # ABBA: neither always runs first
                    at.slider(key="floor").set_value(round(0.05 + 0.045 * i, 2))
                    runs[f"{name} full"].append(timed_run(at, timer))
                    at.slider(key="floor").set_value(round(0.06 + 0.045 * i, 2))
                    runs[f"{name} fragment"].append(timed_run(at, timer, fragments, fragment_ids(at)[0]))
                    refresh(at, timer)
            still_shown = model_order_shown(opened)
            page_calls = sum(at.session_state["store_calls"] - page_before[id(at)] for at in (closed, opened))
            return {
                "runs": runs,
                "ask": (ask_wall, ask_script),
                "candidates": len(outcome.payload["ranked_results"]),
                "store_calls": Counter(counter.calls),
                "page_calls": page_calls,
                "model_requests": len(server.received) - requests,
                "still_shown": still_shown,
            }
        finally:
            for name in names:
                os.environ.pop(name, None)


def calibrate_reruns(rows: int, repeat: int = 3) -> dict[str, float]:
    """The Calibrate page on an uploaded file of `rows` labels: script-run ms of a
    rerun that changes only the floor list, after (the upload parsed once, cached by
    content) and before (the parse cache emptied first, so the file is parsed again
    as every rerun did), against the sweep itself on the same labels."""
    import numpy as np
    from streamlit.testing.v1 import AppTest

    from dashboard.calibration.label_files import parse_label_bytes
    from dashboard.calibration.sweep import calibrate
    from dashboard.ui.widgets import cache

    rng = np.random.default_rng(3)
    relevant = rng.random(rows) < 0.3
    scores = np.where(relevant, rng.beta(5, 3, rows), rng.beta(2, 5, rows))
    content = "".join(
        f'{{"message_id": "t{i // 5}", "memory_id": "m{i}", "score": {s:.4f}, "label": "{"relevant" if r else "not_relevant"}"}}\n'
        for i, (s, r) in enumerate(zip(scores, relevant, strict=True))
    ).encode()
    timer = ScriptRunTimer()
    try:
        at = AppTest.from_file(APP, default_timeout=1800)
        at.session_state["calibrate_source"] = "Upload a file"
        at.switch_page("calibrate.py").run()
        at.file_uploader(key="calibrate_upload").set_value(("labels.jsonl", content, "application/jsonl"))
        first_wall, first_script = timed_run(at, timer)
        floor_lists = ["0.15, 0.2, 0.25", "0.3, 0.35", "0.1, 0.4, 0.45", "0.2, 0.5", "0.25, 0.3, 0.6", "0.05, 0.55"]
        after, before, sweep = [], [], []
        data = parse_label_bytes(content, source="labels.jsonl").labelled_scores()
        for i in range(repeat):
            at.text_input(key="calibrate_floors").input(floor_lists[2 * i])
            after.append(timed_run(at, timer)[1])
            cache._parsed_label_file.clear()
            at.text_input(key="calibrate_floors").input(floor_lists[2 * i + 1])
            before.append(timed_run(at, timer)[1])
            started = time.perf_counter()
            calibrate(data, [0.2, 0.3], 1.0)
            sweep.append((time.perf_counter() - started) * 1000)
    finally:
        timer.close()
    return {"rows": rows, "first": first_script, "after": median(after), "before": median(before), "sweep": median(sweep)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate-rows", type=int, default=1_000_000, help="labels in the Calibrate upload (0: skip)")
    parser.add_argument(
        "--no-ranker-panel", dest="ranker_panel", action="store_false", help="skip the floor moves with the LLM ranker panel open"
    )
    args = parser.parse_args()
    import logging

    from streamlit.testing.v1 import AppTest

    # AppTest outside a server logs "missing ScriptRunContext" for session-state
    # writes made before the first run; they are expected here.
    logging.getLogger("streamlit").setLevel(logging.ERROR)

    work = Path(tempfile.mkdtemp(prefix="memlens-bench-interactive-"))
    timer = ScriptRunTimer()
    counter = StoreCallCounter()
    fragments = FragmentRerun()
    try:
        db = work / "bench.sqlite"
        memories = build_store(db)
        os.environ["MEMLENS_DATA_DIR"] = str(work / "data")
        os.environ["MEMLENS_EMBEDDED_DB"] = str(db)

        empty = AppTest.from_string("import streamlit as st\n", default_timeout=60)
        empty.run()
        empty_runs = [timed_run(empty, timer) for _ in range(MOVES)]

        at = AppTest.from_file(APP, default_timeout=300)
        at.session_state["query"] = QUERY
        at.session_state["user"] = "sam"
        at.session_state["k"] = K
        at.session_state["label_reviewer"] = "bench"  # no label button is drawn before a reviewer is named
        first_wall, first_script = timed_run(at, timer)
        hits = at.session_state["result"].hits
        if len(hits) != K:
            raise RuntimeError(f"expected {K} hits, got {len(hits)}")
        page_calls_before = at.session_state["store_calls"]
        counter.calls.clear()

        ids = fragment_ids(at)
        floor_fragment, row_fragments = ids[0], ids[1 : 1 + K]
        floor_full, floor_runs = [], []
        for i in range(MOVES):
            at.slider(key="floor").set_value(round(0.05 + 0.045 * i, 2))
            floor_full.append(timed_run(at, timer))
            at.slider(key="floor").set_value(round(0.06 + 0.045 * i, 2))
            floor_runs.append(timed_run(at, timer, fragments, floor_fragment))
            kept_metric = [m.value for m in at.metric if m.label == "Kept"]
            refresh(at, timer)
        calls_after_moves = Counter(counter.calls)
        page_calls_after_moves = at.session_state["store_calls"] - page_calls_before

        label_full, label_runs = [], []
        for i, hit in enumerate(hits[:LABELS]):
            value = "relevant" if i % 2 == 0 else "not_relevant"
            at.button(key=f"{value}_{hit.memory_id}").click()
            label_full.append(timed_run(at, timer))
            other = "not_relevant" if value == "relevant" else "relevant"
            at.button(key=f"{other}_{hit.memory_id}").click()
            label_runs.append(timed_run(at, timer, fragments, row_fragments[i]))
            refresh(at, timer)
        calls_after_labels = counter.calls - calls_after_moves
        page_calls_total = at.session_state["store_calls"] - page_calls_before
        where = profile_floor_moves(at)
        ranker = ranker_panel_moves(timer, fragments, counter) if args.ranker_panel else None
    finally:
        timer.close()
        counter.close()
        fragments.close()
        shutil.rmtree(work, ignore_errors=True)

    def row(name, runs, baseline):
        wall, script = median(r[0] for r in runs), median(r[1] for r in runs)
        return [name, len(runs), f"{script:.1f}", f"{script / baseline:.1f}x", f"{wall:.1f}", f"{max(r[1] for r in runs):.1f}"]

    empty_script = median(r[1] for r in empty_runs)
    rows = [
        row("empty page (baseline)", empty_runs, empty_script),
        row(f"Inspect, first query (k={K}; model already loaded)", [(first_wall, first_script)], empty_script),
        row(f"before: floor move as a full rerun (k={K})", floor_full, empty_script),
        row(f"after: floor move, floor fragment only (k={K})", floor_runs, empty_script),
        row(f"before: label click as a full rerun (k={K})", label_full, empty_script),
        row(f"after: label click, its row's fragment only (k={K})", label_runs, empty_script),
    ]
    floor_ms, label_ms = median(r[1] for r in floor_runs), median(r[1] for r in label_runs)
    queries = calls_after_moves["query"] + calls_after_labels["query"]
    others = Counter({n: c for n, c in (calls_after_moves + calls_after_labels).items() if n != "query"})

    def listing(calls: Counter) -> str:
        return ", ".join(f"{name} x{count}" for name, count in sorted(calls.items())) or "none"

    body = (
        f"Store: {memories} memories for user sam; query {QUERY!r}, k={K}. Medians over {MOVES} floor moves, "
        f"{LABELS} label clicks (each timed as a full rerun and as a fragment rerun, alternating) and {MOVES} "
        "empty-page reruns, in one process.\n\n"
        + table(
            ["rerun", "n", "script run (ms)", "vs empty page", "AppTest wall (ms)", "slowest script run (ms)"],
            rows,
        )
        + f"\n\nTargets (script run at most 30 ms): floor move {floor_ms:.1f} ms "
        f"({'met' if floor_ms <= 30 else 'NOT met'}), label click {label_ms:.1f} ms ({'met' if label_ms <= 30 else 'NOT met'}). "
        f"The Kept metric after the last fragment rerun: {kept_metric} (the fragment redrew the floor's effect).\n\n"
        + "Where a full rerun's time goes (calls made by the page script; cProfile over 5 more moves, "
        "ms per rerun under the profiler and share of the whole rerun):\n\n"
        + table(["call", "ms per rerun (profiled)", "share"], [[n, f"{ms:.1f}", f"{share:.0%}"] for n, ms, share in where])
        + "\n\nStore calls after the first query:\n\n"
        + table(
            ["during", "page counter (store_calls)", "queries at the store", "every store method called"],
            [
                [f"{2 * MOVES} floor moves (full + fragment)", page_calls_after_moves, calls_after_moves["query"], listing(calls_after_moves)],
                [f"{2 * LABELS} label clicks (full + fragment)", page_calls_total - page_calls_after_moves, calls_after_labels["query"], listing(calls_after_labels)],
            ],
        )
        + f"\n\nTarget: 0 store queries across {MOVES} floor moves and {LABELS} labels: "
        + ("met" if queries == 0 and page_calls_total == 0 else f"NOT met ({queries} queries, page counter {page_calls_total})")
        + (
            f"; other store methods called on those reruns: {listing(others)}."
            if others
            else "; no other store method was called either."
        )
    )
    if ranker is not None:
        r = ranker["runs"]
        open_fragment = median(x[1] for x in r["open fragment"])
        model_asked = ranker["model_requests"]
        body += (
            f"\n\nWith the LLM ranker panel open: a loopback chat model ranked the {ranker['candidates']} candidates "
            f"(one request, {ranker['ask'][1]:.0f} ms script run including the model's answer); the same page with the "
            f"model configured and nothing asked is the baseline. {RANKER_MOVES} floor moves on each, alternating, each a full "
            "rerun and a floor-fragment rerun:\n\n"
            + table(
                ["rerun", "n", "script run (ms)", "vs empty page", "AppTest wall (ms)", "slowest script run (ms)"],
                [
                    row("panel without a ranking (baseline): floor move, full rerun", r["closed full"], empty_script),
                    row("panel with the model's ranking shown: floor move, full rerun", r["open full"], empty_script),
                    row("panel without a ranking (baseline): floor move, floor fragment", r["closed fragment"], empty_script),
                    row("panel with the model's ranking shown: floor move, floor fragment", r["open fragment"], empty_script),
                ],
            )
            + f"\n\nTarget (floor fragment with the panel open at most 30 ms): {open_fragment:.1f} ms "
            f"({'met' if open_fragment <= 30 else 'NOT met'}). Store calls during those {4 * RANKER_MOVES} reruns: page counter "
            f"{ranker['page_calls']}, every store method: {listing(ranker['store_calls'])}; model requests: {model_asked}. "
            f"Target (no store call, no model request): "
            + ("met" if not ranker["page_calls"] and not ranker["store_calls"] and not model_asked else "NOT met")
            + f". The model's order was still on the page after the last move: {'yes' if ranker['still_shown'] else 'NO'}."
        )
    if args.calibrate_rows:
        c = calibrate_reruns(args.calibrate_rows)
        body += (
            f"\n\nCalibrate, an uploaded file of {c['rows']:,} labels (first run with the upload: {c['first'] / 1000:.1f} s), "
            "script run of a rerun that changes only the floor list (median of 3 each, alternating):\n\n"
            + table(
                ["rerun", "script run (ms)", "vs the sweep"],
                [
                    ["the sweep itself (calibrate() on the same labels)", f"{c['sweep']:.0f}", "1.00x"],
                    ["before: the upload parsed again on the rerun", f"{c['before']:.0f}", f"{c['before'] / c['sweep']:.2f}x"],
                    ["after: parsed once per content, downloads built on click", f"{c['after']:.0f}", f"{c['after'] / c['sweep']:.2f}x"],
                ],
            )
            + f"\n\nTarget (at most 1.2x the sweep): {'met' if c['after'] <= 1.2 * c['sweep'] else 'NOT met'}."
        )
    report("interactive: Inspect rerun cost and store calls", body)


if __name__ == "__main__":
    main()
