"""A frozen label database: how long a label click takes to come back with its
message, and whether the page recovers by itself once the server answers again.

Set-up: a real PostgreSQL (initdb + pg_ctl on a temporary directory, loopback)
as MEMLENS_LABELS_URL, a 4-row labelling session from the sample log, the Label
page in streamlit.testing.v1.AppTest signed in as one reviewer. The server is
frozen with SIGSTOP (every process: it answers nothing, the kernel still accepts
connections, as behind a network partition).

Timed, per click: the whole AppTest run of one "relevant" click, from the click to
the page holding its message (the callback's write plus the rerun's reads): the
figure README bounds at 3 s per read or write. Baseline, same run: the same click
with the server answering. Then the server is thawed and, after the store's 3 s
retry window, one "Try again" click: the session's panel must be back (progress
text shown) with the reviewer still signed in.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from benchmarks._common import ROOT, median, report, table

sys.path.insert(0, str(ROOT / "tests"))
CLICKS = 5


def main() -> int:
    from postgres_server import PostgresServer
    from streamlit.testing.v1 import AppTest

    from dashboard.database import AppDatabase
    from dashboard.labels import sampling
    from dashboard.logs.retrieval_log import read_log

    server = PostgresServer().start()
    try:
        url = server.new_database()
        os.environ["MEMLENS_LABELS_URL"] = url
        os.environ["MEMLENS_DATA_DIR"] = tempfile.mkdtemp(prefix="memlens-bench-")
        db = AppDatabase(url)
        sampling.save_session(db, "bench", read_log(ROOT / "demo_data" / "sample_log.jsonl").rows, method="turns", size=4, seed=1)
        db.close()
        at = AppTest.from_file(str(ROOT / "dashboard" / "views" / "label.py"), default_timeout=180)
        at.session_state["label_reviewer"] = "bench"
        at.session_state["label_session"] = "bench"
        at.run()

        def click(button: str) -> float:
            started = time.perf_counter()
            at.button(key=button).click().run()
            return (time.perf_counter() - started) * 1000

        answering = [click("label_skip") for _ in range(CLICKS)]
        frozen: list[float] = []
        messages = set()
        server.freeze()
        try:
            for _ in range(CLICKS):
                button = "label_skip" if _has(at, "label_skip") else "label_retry"
                frozen.append(click(button))
                messages.add(" ".join(e.value for e in at.error)[:90])
                time.sleep(3.2)  # past the retry window: each click meets the frozen server afresh
        finally:
            server.thaw()
        time.sleep(3.2)
        recovered_ms = click("label_retry") if _has(at, "label_retry") else 0.0
        back = any("rows done by bench" in str(p.proto) for p in at.get("progress"))
        rows = [
            ["server answering (baseline)", f"{median(answering):.0f}", f"{max(answering):.0f}", CLICKS],
            ["server frozen (SIGSTOP)", f"{median(frozen):.0f}", f"{max(frozen):.0f}", CLICKS],
        ]
        body = (
            table(["label click, AppTest run (ms)", "median", "max", "clicks"], rows)
            + f"\n\nMessage shown while frozen: {sorted(messages)}\n"
            + f"After SIGCONT and the 3 s retry window, one Try again click ({recovered_ms:.0f} ms): "
            + ("the session panel is back, reviewer still signed in." if back else "the panel did NOT come back.")
        )
        report("Frozen label database: click to message (Label page, PostgreSQL)", body)
        return 0 if back else 1
    finally:
        server.stop()


def _has(at, key: str) -> bool:
    try:
        at.button(key=key)
        return True
    except KeyError:
        return False


if __name__ == "__main__":
    sys.exit(main())
