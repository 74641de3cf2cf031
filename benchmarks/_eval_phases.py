"""Where an evaluation run's seconds go: `memlens eval` or the Quality page's run,
in a process of its own, with the functions of each phase wrapped to count their
wall time (exclusive: a phase inside another counts for itself only).

    python benchmarks/_eval_phases.py cli OUT.json -- eval judged.jsonl --db store.sqlite --k 10 --format json
    python benchmarks/_eval_phases.py page OUT.json SET_NAME

(run by path, with PYTHONPATH naming the code tree to measure; BENCH_CODE too for page)

cli: from the parent's clock (BENCH_T0, its time.time() just before starting this
process) to the end of `memlens eval`; the parent adds the exit. page: the Quality
page in AppTest, opened and the set picked first (as a reviewer does), then from
the click on Start run to the end of that script run. Each writes {phase: seconds,
"end": time.time()} to OUT.json. Used by benchmarks/eval.py; not a benchmark itself.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import json
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

# The phases each wrapped function counts for: (module, attribute path, phase).
COMMON = [
    ("connectors.embedding.model_loader", "_open_encoder", "model open"),
    ("connectors.embedding.onnx_encoder", "OnnxEncoder.encode", "encoding the questions"),
    ("connectors.embedding.model_loader", "TorchEncoder.encode", "encoding the questions"),
    ("connectors.registry", "create_store", "store open"),
    ("connectors.embedded.store", "EmbeddedStore._ensure_loaded", "store open"),
    ("dashboard.evaluation.judged_sets", "read_file", "judged set read"),
    ("dashboard.database", "open_app_database", "label database open"),
    ("connectors.embedded.store", "EmbeddedStore.query_many", "per question: scan, hits, answers"),
    ("dashboard.evaluation.runs", "_answer_all", "per question: scan, hits, answers"),
    ("dashboard.database.judged_sets", "JudgedSetRepository.save", "saving"),
    ("dashboard.database.runs", "RunRepository.start", "saving"),
    ("dashboard.database.runs", "RunRepository.save_outcomes", "saving"),
    ("dashboard.database.runs", "RunRepository.finish", "saving"),
    ("dashboard.database.runs", "RunRepository.outcomes", "reading the run back"),
    ("dashboard.database.runs", "RunRepository.get", "reading the run back"),
    ("dashboard.database.runs", "RunRepository.all", "reading the run back"),
    ("dashboard.database.judged_sets", "JudgedSetRepository.load", "reading the run back"),
    ("dashboard.evaluation.run_figures", "run_figures", "figures"),
]
CLI = [
    ("dashboard.cli.eval", "print_progress", "progress"),
    ("dashboard.cli.eval", "report", "report (printing)"),
]
PAGE = [
    ("dashboard.ui.pages.quality_runs", "show", "page before the run (set picker, controls)"),
    ("dashboard.ui.pages.quality_runs", "_execute", "run: other"),
    ("streamlit.elements.progress", "ProgressMixin.progress", "progress bar"),
    ("streamlit", "success", "completion message"),
    ("dashboard.ui.pages.quality_runs", "show_runs", "page after the run (runs, figures, comparison)"),
    ("dashboard.ui.pages.quality_runs", "show_compare", "page after the run (runs, figures, comparison)"),
    ("dashboard.ui.pages.quality_runs", "show_whatif", "page after the run (runs, figures, comparison)"),
]


class Clock:
    """Exclusive wall time per phase, per thread: time goes to the innermost phase
    the thread is in; a thread in no phase is not counted."""

    def __init__(self, home: threading.Thread | None = None) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.local = threading.local()
        self.home = home  # phases on any other thread are named as overlapping

    def _stack(self) -> list[list]:
        if not hasattr(self.local, "stack"):
            self.local.stack = []
        return self.local.stack

    def enter(self, phase: str) -> None:
        if self.home is not None and threading.current_thread() is not self.home:
            phase += " (on a thread, overlapping the rest)"
        stack, now = self._stack(), time.perf_counter()
        if stack:
            self.totals[stack[-1][0]] += now - stack[-1][1]
        stack.append([phase, now])

    def leave(self) -> None:
        stack, now = self._stack(), time.perf_counter()
        phase, since = stack.pop()
        self.totals[phase] += now - since
        if stack:
            stack[-1][1] = now

    def wrap(self, fn, phase: str, *, only_inside: bool = False):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            if only_inside and not self._stack():
                return fn(*args, **kwargs)
            self.enter(phase)
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()

        return wrapped


def install(clock: Clock, targets: list[tuple[str, str, str]]) -> None:
    for module_name, path, phase in targets:
        try:
            owner = importlib.import_module(module_name)
        except ImportError:
            continue
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        if hasattr(owner, name):  # an older tree (benchmarks/eval.py --before) may lack one
            setattr(owner, name, clock.wrap(getattr(owner, name), phase))
    # Imports anywhere inside a counted phase count as imports.
    builtins.__import__ = clock.wrap(builtins.__import__, "imports", only_inside=True)
    importlib.import_module = clock.wrap(importlib.import_module, "imports", only_inside=True)


def cli(out: Path, argv: list[str]) -> None:
    started = time.time()
    clock = Clock(home=threading.main_thread())
    clock.enter("other")
    clock.totals["Python start"] = started - float(os.environ["BENCH_T0"])
    clock.enter("imports")  # what the CLI's own module imports before main() runs
    from dashboard.cli import main as cli_main

    # What `memlens eval` imports anyway, imported here so the wrappers can be set
    # on it (counted as imports, as it would be inside main()).
    install_targets = COMMON + CLI
    for module_name in dict.fromkeys(m for m, _, _ in install_targets):
        try:
            importlib.import_module(module_name)
        except ImportError:  # an older tree (benchmarks/eval.py --before) may lack one
            pass
    clock.leave()
    install(clock, install_targets)
    code = cli_main.main(argv)
    clock.leave()
    if code != 0:
        raise SystemExit(code)
    out.write_text(json.dumps({**clock.totals, "end": time.time()}))


def page(out: Path, set_name: str) -> None:
    from streamlit.testing.v1 import AppTest

    root = Path(os.environ.get("BENCH_CODE") or Path(__file__).resolve().parents[1])
    at = AppTest.from_file(str(root / "dashboard" / "views" / "navigation.py"), default_timeout=1800)
    at.run()
    at.switch_page("quality.py").run()
    at.selectbox(key="eval_set").set_value(set_name).run()
    assert not at.exception, at.exception
    clock = Clock()
    install(clock, COMMON + PAGE)
    started = time.perf_counter()
    at.button(key="eval_start").click().run()
    total = time.perf_counter() - started
    assert not at.exception, at.exception
    assert any("complete: " in s.value for s in at.success), [s.value for s in at.success]
    totals = dict(clock.totals)
    totals["other (sidebar, rest of the page, AppTest)"] = total - sum(totals.values())
    out.write_text(json.dumps({**totals, "total": total}))


if __name__ == "__main__":
    mode, target = sys.argv[1], Path(sys.argv[2])
    if mode == "cli":
        cli(target, sys.argv[sys.argv.index("--") + 1 :])
    else:
        page(target, sys.argv[3])
